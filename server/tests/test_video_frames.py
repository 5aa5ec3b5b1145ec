"""The frames-as-images fallback for ``video_url``: on a VLM checkpoint without a native video
path (the real ``qwen2-vl-tiny`` fixture with its video token and the template's video branch
removed, built here in a temporary directory) the clip's sampled frames reach the model as
ordered images, under the same sources, allowlist and bounds as the native video path."""

from __future__ import annotations

import base64
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from PIL import Image

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.media.policy import MediaPolicy

from .test_vision import (
    AUDIO,
    MODEL,
    answer,
    data_uri,
    error_of,
    png_bytes,
    video,
    video_chat,
    write_clip,
)

MAX_IMAGES = 6
MAX_PIXELS = 128 * 128
VIDEO_BRANCH = ("{%- elif part.type in ('video', 'video_url') -%}\n"
                "                {{- '<|vision_start|><|video_pad|><|vision_end|>' -}}\n")


def without_native_video(target: Path) -> Path:
    """A copy of the fixture whose vocabulary, tokenizer config and template know no video
    placeholder, and which has no video preprocessor: a checkpoint with only an image path."""
    shutil.copytree(MODEL, target)
    (target / "video_preprocessor_config.json").unlink()
    tokenizer = json.loads((target / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["added_tokens"] = [t for t in tokenizer["added_tokens"]
                                 if t["content"] != "<|video_pad|>"]
    (target / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    config = json.loads((target / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["added_tokens_decoder"] = {k: v for k, v in config["added_tokens_decoder"].items()
                                      if v["content"] != "<|video_pad|>"}
    assert VIDEO_BRANCH in config["chat_template"]
    config["chat_template"] = config["chat_template"].replace(VIDEO_BRANCH, "")
    (target / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("frames")
    root = base / "videos"
    root.mkdir()
    write_clip(root / "clip.avi", 1)
    write_clip(root / "other.avi", 2)
    write_clip(base / "outside.avi", 3)
    (root / "still.png").write_bytes(png_bytes(1))
    return root


@pytest.fixture(scope="module")
def engine_client(tmp_path_factory: pytest.TempPathFactory,
                  clips: Path) -> Iterator[tuple[Engine, TestClient]]:
    model = str(without_native_video(tmp_path_factory.mktemp("model") / "qwen2-vl-no-video"))
    policy = MediaPolicy(video_dirs=(clips.resolve(),), max_pixels=MAX_PIXELS,
                         max_images=MAX_IMAGES)
    engine = Engine(EngineConfig(model=model, parallel=1, media=policy))
    with TestClient(create_app(ServerConfig(model=model), engine)) as test_client:
        assert engine.wait_ready(120), engine.load_error
        yield engine, test_client


@pytest.fixture(scope="module")
def client(engine_client: tuple[Engine, TestClient]) -> TestClient:
    return engine_client[1]


def sampled_frames(path: Path, fps: float = 2.0) -> list[bytes]:
    """The clip's frames as the reference's sampler picks them (mlx-vlm's ``load_video`` at the
    server's defaults), each as lossless PNG bytes."""
    from mlx_vlm.utils import load_video

    frames, _ = load_video(str(path), fps=fps, max_frames=16, min_frames=2)
    out = []
    for frame in frames:
        buffer = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(frame.transpose(1, 2, 0))).save(buffer, "PNG")
        out.append(buffer.getvalue())
    return out


def image(data: bytes) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_uri(data)}}


def prompt_tokens(response: Any) -> int:
    assert response.status_code == 200, response.text
    count: int = response.json()["usage"]["prompt_tokens"]
    return count


def test_the_variant_has_an_image_path_only(engine_client: tuple[Engine, TestClient]) -> None:
    loaded = engine_client[0].model
    assert loaded is not None and loaded.vision is not None
    assert loaded.vision.video_token is None
    assert loaded.vision.image_token == "<|image_pad|>"


def test_video_frames_reach_the_model_as_ordered_images(client: TestClient,
                                                        clips: Path) -> None:
    frames = sampled_frames(clips / "clip.avi")
    assert len(frames) == 4  # 8 frames at 4 fps: 2 s, sampled at 2 fps
    clip = video_chat(client, [video(str(clips / "clip.avi"))])
    as_images = video_chat(client, [image(f) for f in frames])
    # The video is exactly its frames sent as images: same prompt, same greedy answer.
    assert prompt_tokens(clip) == prompt_tokens(as_images)
    assert answer(clip) == answer(as_images)
    without = video_chat(client, [])
    # Each 56x56 frame is 4 image tokens plus start and end.
    assert prompt_tokens(clip) - prompt_tokens(without) == 6 * len(frames)
    other = answer(video_chat(client, [video(f"file://{clips / 'other.avi'}")]))
    assert answer(clip) != other
    assert answer(without) not in (answer(clip), other)
    # Reversed frames are the same pixels in another order: the order reaches the model.
    assert answer(video_chat(client, [image(f) for f in reversed(frames)])) != answer(clip)
    inline = "data:video/x-msvideo;base64," + base64.b64encode(
        (clips / "clip.avi").read_bytes()).decode()
    assert answer(video_chat(client, [video(inline)])) == answer(clip)


def test_frames_take_the_video_place_among_images(client: TestClient, clips: Path) -> None:
    frames = sampled_frames(clips / "clip.avi")
    first, last = png_bytes(1), png_bytes(2)
    mixed = video_chat(client, [image(first), video(str(clips / "clip.avi")), image(last)])
    spelled = video_chat(client, [image(first), *map(image, frames), image(last)])
    assert prompt_tokens(mixed) == prompt_tokens(spelled)
    assert answer(mixed) == answer(spelled)


def test_frames_count_against_the_image_limit(client: TestClient, clips: Path) -> None:
    clip = video(str(clips / "clip.avi"))
    assert answer(video_chat(client, [clip, image(png_bytes(1)), image(png_bytes(2))]))
    over = video_chat(client, [image(png_bytes(1)), clip, image(png_bytes(2)),
                               image(png_bytes(3))])
    error = error_of(over, 413)
    assert error["type"] == "request_too_large"
    assert error["param"] == "messages.0.content.1"
    assert "4 frames" in error["message"] and "at most 6" in error["message"]
    eight = error_of(video_chat(client, [video(str(clips / "clip.avi"), fps=4.0)]), 413)
    assert "8 frames" in eight["message"]


def test_the_fallback_keeps_the_video_rules(client: TestClient, clips: Path) -> None:
    outside = error_of(video_chat(client, [video(str(clips.parent / "outside.avi"))]), 400)
    assert "outside the server's allowed directories" in outside["message"]
    escape = error_of(video_chat(client, [video(f"{clips}/../outside.avi")]), 400)
    assert "outside the server's allowed directories" in escape["message"]
    still = error_of(video_chat(client, [video(str(clips / "still.png"))]), 400)
    assert "not a decodable video" in still["message"]
    combined = error_of(video_chat(client, [video(str(clips / "clip.avi")), AUDIO]), 400)
    assert combined["message"] == "Combined video and audio inputs are not supported"


def test_the_fallback_keeps_the_pixel_bound(client: TestClient, clips: Path) -> None:
    import cv2

    path = clips / "large.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 4.0, (200, 200))
    for _ in range(4):
        writer.write(np.zeros((200, 200, 3), dtype=np.uint8))
    writer.release()
    error = error_of(video_chat(client, [video(str(path))]), 413)
    assert "200x200 pixels" in error["message"]
