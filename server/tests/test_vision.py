"""Image input on the real vision-language fixture (``fixtures/models/qwen2-vl-tiny``, loaded
through mlx-vlm): the pixels reach the model, all three API families share one path, and the
media policy (``--media-path`` roots, size, pixel and decode bounds) answers documented 4xx."""

from __future__ import annotations

import base64
import io
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen2-vl-tiny")
MAX_BYTES = 64 * 1024
MAX_PIXELS = 128 * 128


def png_bytes(seed: int, size: int = 56) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def data_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("vision")
    root = base / "allowed"
    root.mkdir()
    (root / "one.png").write_bytes(png_bytes(1))
    (root / "two.png").write_bytes(png_bytes(2))
    (base / "secret.png").write_bytes(png_bytes(3))
    (root / "inside-link.png").symlink_to(root / "two.png")
    (root / "escape-link.png").symlink_to(base / "secret.png")
    (root / "escape-dir").symlink_to(base)
    return root


@pytest.fixture(scope="module")
def client(media: Path) -> Iterator[TestClient]:
    policy = MediaPolicy(media_roots=(media.resolve(),), max_bytes=MAX_BYTES,
                         max_pixels=MAX_PIXELS, video_dirs=(media.resolve(),),
                         allow_private_urls=True, fetch_timeout_s=5.0)
    config = ServerConfig(model=MODEL, parallel=2)
    engine = Engine(EngineConfig(model=MODEL, parallel=2, media=policy))
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(120), engine.load_error
        yield test_client


def chat(client: TestClient, url: str | None, *, text: str = "What is this?",
         max_tokens: int = 8) -> Any:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if url is not None:
        content.insert(0, {"type": "image_url", "image_url": {"url": url}})
    return client.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens, "temperature": 0,
    })


def answer(response: Any) -> str:
    assert response.status_code == 200, response.text
    text: str = response.json()["choices"][0]["message"]["content"]
    return text


def test_the_image_reaches_the_model(client: TestClient, media: Path) -> None:
    first = answer(chat(client, data_uri(png_bytes(1))))
    second = answer(chat(client, data_uri(png_bytes(2))))
    without = answer(chat(client, None))
    # Same size, same prompt tokens: only the pixels differ, and the greedy answer follows.
    assert first != second
    assert without not in (first, second)
    # The same pixels by data URI, file:// URL and bare path give the same answer.
    assert answer(chat(client, f"file://{media / 'one.png'}")) == first
    assert answer(chat(client, str(media / "one.png"))) == first
    assert answer(chat(client, str(media / "inside-link.png"))) == second


def test_usage_counts_the_image_tokens(client: TestClient) -> None:
    with_image = chat(client, data_uri(png_bytes(1))).json()["usage"]["prompt_tokens"]
    without = chat(client, None).json()["usage"]["prompt_tokens"]
    # A 56x56 image is 4x4 patches merged 2x2: 4 placeholder tokens plus start and end.
    assert with_image - without == 6


def test_three_families_share_one_image_path(client: TestClient) -> None:
    data = png_bytes(2)
    expected = answer(chat(client, data_uri(data)))
    responses = client.post("/v1/responses", json={
        "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": data_uri(data)},
            {"type": "input_text", "text": "What is this?"}]}],
        "max_output_tokens": 8, "temperature": 0})
    assert responses.status_code == 200, responses.text
    assert responses.json()["output"][0]["content"][0]["text"] == expected
    messages = client.post("/v1/messages", json={
        "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": base64.b64encode(data).decode()}},
            {"type": "text", "text": "What is this?"}]}],
        # thinking on renders the template's default prompt, as chat's and Responses' here
        "max_tokens": 8, "temperature": 0, "thinking": {"type": "adaptive"}})
    assert messages.status_code == 200, messages.text
    assert messages.json()["content"][0]["text"] == expected


def test_concurrent_vlm_requests_match_sequential(client: TestClient) -> None:
    urls = [data_uri(png_bytes(1)), data_uri(png_bytes(2)), None]
    expected = [answer(chat(client, url)) for url in urls]
    results: dict[int, str] = {}

    def run(i: int) -> None:
        results[i] = answer(chat(client, urls[i % 3]))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert [results[i] for i in range(6)] == expected * 2


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


@pytest.mark.parametrize("name", ["../secret.png", "escape-link.png", "escape-dir/secret.png",
                                  "escape-dir/allowed/../secret.png"])
def test_paths_escaping_the_media_root_are_400(client: TestClient, media: Path,
                                               name: str) -> None:
    for url in (f"{media}/{name}", f"file://{media}/{name}"):
        error = error_of(chat(client, url), 400)
        assert "outside the server's allowed directories" in error["message"]
        assert error["param"] == "messages.0.content.0"


def test_missing_and_relative_paths_are_400(client: TestClient, media: Path) -> None:
    assert "no media file" in error_of(chat(client, str(media / "nope.png")), 400)["message"]
    error_of(chat(client, "relative/one.png"), 400)
    error_of(chat(client, "ftp://example.com/x.png"), 400)


def test_size_and_pixel_bounds_are_413(client: TestClient) -> None:
    big = png_bytes(4, size=200)  # random pixels: about 120 KB, over MAX_BYTES
    assert len(big) > MAX_BYTES
    error = error_of(chat(client, data_uri(big)), 413)
    assert error["type"] == "request_too_large"
    # A flat 200x200 image compresses far under MAX_BYTES but is over MAX_PIXELS.
    flat = io.BytesIO()
    Image.new("RGB", (200, 200), (9, 9, 9)).save(flat, format="PNG")
    error = error_of(chat(client, data_uri(flat.getvalue())), 413)
    assert "200x200 pixels" in error["message"]


def test_undecodable_images_are_400(client: TestClient) -> None:
    error_of(chat(client, "data:image/png;base64,iVBORw0KGgo="), 400)
    error_of(chat(client, "data:image/png;base64,@@not base64@@"), 400)
    truncated = png_bytes(5)[:200]
    error_of(chat(client, data_uri(truncated)), 400)


class _SlowImage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        time.sleep(1.5)
        body = png_bytes(2)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_slow_image_fetch_does_not_block_other_clients(client: TestClient) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowImage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/slow.png"
    result: dict[str, str] = {}
    worker = threading.Thread(target=lambda: result.update(text=answer(chat(client, url))))
    try:
        worker.start()
        time.sleep(0.3)  # the fetch is under way
        started = time.monotonic()
        assert client.get("/health").status_code == 200
        assert time.monotonic() - started < 1.0  # answered while the image downloads
        worker.join(60)
    finally:
        server.shutdown()
        server.server_close()
    # Fetched over http(s) (loopback allowed by this policy), the same pixels, the same answer.
    assert result["text"] == answer(chat(client, data_uri(png_bytes(2))))


def write_clip(path: Path, seed: int, frames: int = 8) -> bytes:
    import cv2

    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 4.0, (56, 56))
    rng = np.random.default_rng(seed)
    for _ in range(frames):
        writer.write(rng.integers(0, 256, (56, 56, 3), dtype=np.uint8))
    writer.release()
    return path.read_bytes()


def video_chat(client: TestClient, parts: list[dict[str, Any]], max_tokens: int = 8) -> Any:
    return client.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": [*parts, {"type": "text", "text": "What?"}]}],
        "max_tokens": max_tokens, "temperature": 0})


def video(url: str, fps: float | None = None) -> dict[str, Any]:
    return {"type": "video_url", "video_url": {"url": url, **({"fps": fps} if fps else {})}}


VIDEO_OUTSIDE = video("/etc/hostname")
AUDIO = {"type": "input_audio", "input_audio": {"data": "data:audio/wav;base64,UklGRg==",
                                                "format": "wav"}}


def test_video_frames_reach_the_model(client: TestClient, media: Path) -> None:
    clip = write_clip(media / "clip.avi", 1)
    write_clip(media / "other.avi", 2)
    local = answer(video_chat(client, [video(str(media / "clip.avi"))]))
    other = answer(video_chat(client, [video(f"file://{media / 'other.avi'}")]))
    inline = answer(video_chat(client, [video("data:video/x-msvideo;base64,"
                                              + base64.b64encode(clip).decode())]))
    assert local != other
    assert inline == local  # the data URI is written to a private file and decoded alike
    usage = video_chat(client, [video(str(media / "clip.avi"), fps=1.0)]).json()["usage"]
    assert usage["prompt_tokens"] > 0


def test_video_and_audio_errors(client: TestClient, media: Path) -> None:
    combined = error_of(video_chat(client, [VIDEO_OUTSIDE, AUDIO]), 400)
    assert combined["message"] == "Combined video and audio inputs are not supported"
    outside = error_of(video_chat(client, [VIDEO_OUTSIDE]), 400)
    assert "outside the server's allowed directories" in outside["message"]
    escape = error_of(video_chat(client, [video(f"{media}/../secret.png")]), 400)
    assert "outside the server's allowed directories" in escape["message"]
    not_video = error_of(video_chat(client, [video(str(media / "one.png"))]), 400)
    assert "not a decodable video" in not_video["message"]
    mixed = [video(str(media / "one.png")),
             {"type": "image_url", "image_url": {"url": data_uri(png_bytes(1))}}]
    assert "images and a video" in error_of(video_chat(client, mixed), 400)["message"]
    assert "no audio input path" in error_of(video_chat(client, [AUDIO]), 400)["message"]


def test_text_requests_still_work_after_errors(client: TestClient) -> None:
    # Every refusal above happened before the engine: the loop serves the next request.
    assert answer(chat(client, None, max_tokens=2))


def test_anthropic_url_sources_tool_results_and_token_counts(client: TestClient,
                                                             media: Path) -> None:
    image = {"type": "image", "source": {"type": "url", "url": str(media / "one.png")}}
    body = {"max_tokens": 8, "temperature": 0, "messages": [
        {"role": "user", "content": "Show me."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "camera", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [image]},
            {"type": "text", "text": "What is this?"}]}]}
    answered = client.post("/v1/messages", json=body)
    assert answered.status_code == 200, answered.text
    counted = client.post("/v1/messages/count_tokens", json=body)
    assert counted.json()["input_tokens"] == answered.json()["usage"]["input_tokens"]
    # The image inside the tool result reaches the model: another image, another answer.
    body["messages"][2]["content"][0]["content"] = [  # type: ignore[index]
        {**image, "source": {"type": "url", "url": str(media / "two.png")}}]
    other = client.post("/v1/messages", json=body)
    assert other.json()["content"] != answered.json()["content"]


def test_responses_input_tokens_count_the_image(client: TestClient) -> None:
    payload = {"input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": data_uri(png_bytes(1))},
        {"type": "input_text", "text": "What is this?"}]}]}
    counted = client.post("/v1/responses/input_tokens", json=payload)
    assert counted.status_code == 200, counted.text
    created = client.post("/v1/responses", json={**payload, "max_output_tokens": 4,
                                                 "temperature": 0})
    assert counted.json()["input_tokens"] == created.json()["usage"]["input_tokens"]


def test_too_many_images_is_413(client: TestClient) -> None:
    image = {"type": "image_url", "image_url": {"url": data_uri(png_bytes(1))}}
    response = client.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": [image] * 17}], "max_tokens": 2})
    error = error_of(response, 413)
    assert error["param"] == "messages.0.content.16"


def test_props_report_the_vision_modality(client: TestClient) -> None:
    assert client.get("/props").json()["modalities"] == {"vision": True, "video": False,
                                                         "audio": False}
