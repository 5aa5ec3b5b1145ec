"""The image routes on the committed Z-Image fixture, served beside the text model: PNGs of the
asked size, one image per seed, the documented 400s and 415, the single worker's 503 and 504,
image-to-image edits, and the text routes still answering while an image is drawn.

The fixture's weights are random: images are deterministic noise, so the tests assert shapes,
determinism, and that a seed, a prompt or an input image changes the pixels. Nothing is mocked.
"""

from __future__ import annotations

import base64
import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from PIL import Image

pytest.importorskip("mflux")

from mlxcel.app import create_app  # noqa: E402
from mlxcel.config import ServerConfig  # noqa: E402
from mlxcel.families.images.image_config import ImageConfig

ROOT = Path(__file__).resolve().parents[2]
ZIMAGE = str(ROOT / "fixtures" / "models" / "zimage-tiny")
TEXT_MODEL = str(ROOT / "fixtures" / "models" / "qwen3-tiny")
GENERATIONS = "/v1/images/generations"
EDITS = "/v1/images/edits"
SMALL = {"prompt": "a red fox in the snow", "size": "64x64", "num_inference_steps": 2}
# Seconds of work for the fixture on two CPU cores: the VAE decode dominates.
SLOW = {"prompt": "a slow one", "size": "256x256", "num_inference_steps": 9}


def image_app(**overrides: Any) -> TestClient:
    images = ImageConfig(model=ZIMAGE, **overrides)
    config = ServerConfig(model=TEXT_MODEL, sections={"images": images})
    return TestClient(create_app(config))


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with image_app() as c:
        yield c


def generate(client: TestClient, path: str = GENERATIONS, **fields: Any) -> dict[str, Any]:
    response = client.post(path, json={**SMALL, **fields})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def png_of(item: dict[str, Any]) -> bytes:
    return base64.b64decode(item["b64_json"], validate=True)


def decoded(item: dict[str, Any]) -> Image.Image:
    image = Image.open(io.BytesIO(png_of(item)))
    assert image.format == "PNG"
    return image


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


def test_a_generation_is_a_png_of_the_asked_size(client: TestClient) -> None:
    body = generate(client, size="128x64", seed=7, model="any-name")
    assert set(body) == {"created", "data", "output_format", "size"}
    assert (body["output_format"], body["size"]) == ("png", "128x64")
    assert isinstance(body["created"], int) and abs(body["created"] - time.time()) < 120
    (item,) = body["data"]
    assert set(item) == {"b64_json", "mime_type", "width", "height", "seed", "revised_prompt"}
    assert (item["mime_type"], item["width"], item["height"], item["seed"]) == (
        "image/png", 128, 64, 7)
    assert item["revised_prompt"] == SMALL["prompt"]
    image = decoded(item)
    assert (image.size, image.mode) == ((128, 64), "RGB")
    assert len(set(image.tobytes())) > 64  # not a flat image


def test_a_seed_gives_the_same_bytes_and_another_seed_other_pixels(client: TestClient) -> None:
    first, again = (png_of(generate(client, seed=11)["data"][0]) for _ in range(2))
    assert first == again
    assert png_of(generate(client, seed=12)["data"][0]) != first
    assert png_of(generate(client, seed=11, prompt="a blue whale")["data"][0]) != first


def test_without_a_seed_one_is_drawn_and_reported(client: TestClient) -> None:
    item = generate(client)["data"][0]
    assert isinstance(item["seed"], int) and 0 <= item["seed"] < 2**32
    assert png_of(generate(client, seed=item["seed"])["data"][0]) == png_of(item)


def test_n_images_take_consecutive_seeds(client: TestClient) -> None:
    body = generate(client, n=3, seed=2**32 - 2)
    seeds = [item["seed"] for item in body["data"]]
    assert seeds == [2**32 - 2, 2**32 - 1, 0]  # seed + i, modulo 2^32
    pngs = [png_of(item) for item in body["data"]]
    assert len(set(pngs)) == 3
    assert pngs[1] == png_of(generate(client, seed=2**32 - 1)["data"][0])


def test_auto_size_and_the_aliases(client: TestClient) -> None:
    body = generate(client, size="auto", seed=5)
    assert body["size"] == "64x64"  # the fixture VAE's sample_size
    again = generate(client, "/images/generations", size="auto", seed=5)
    assert png_of(again["data"][0]) == png_of(body["data"][0])


def test_an_edit_starts_from_the_input_image(client: TestClient) -> None:
    source = png_of(generate(client, seed=21)["data"][0])
    other = png_of(generate(client, seed=22)["data"][0])

    def edit(png: bytes, **fields: Any) -> dict[str, Any]:
        # 9 steps: strength 0.4 starts at step 3, 0.9 at step 8 (2 steps would start both at 1)
        request = {"images": [{"image_url": data_uri(png)}], "seed": 3,
                   "num_inference_steps": 9, **fields}
        return generate(client, EDITS, **request)

    body = edit(source, size="auto")
    assert body["size"] == "64x64" and body["data"][0]["seed"] == 3
    edited = decoded(body["data"][0])
    assert edited.size == (64, 64)
    assert png_of(edit(source)["data"][0]) == png_of(body["data"][0])
    assert png_of(edit(other)["data"][0]) != png_of(body["data"][0])
    assert png_of(edit(source, image_strength=0.9)["data"][0]) != png_of(body["data"][0])
    assert png_of(generate(client, "/images/edits", images=[{"image_url": data_uri(source)}],
                           seed=3, num_inference_steps=9)["data"][0]) == png_of(body["data"][0])
    resized = edit(source, size="128x64", n=2)
    assert resized["size"] == "128x64" and [d["seed"] for d in resized["data"]] == [3, 4]


@pytest.mark.parametrize(("fields", "param", "words"), [
    ({"prompt": "  "}, "prompt", "must not be empty"),
    ({"prompt": None}, "prompt", "Invalid value"),
    ({"size": "65x64"}, "size", "multiple of 16"),
    ({"size": "1024x1024"}, "size", "width 64 to 512"),
    ({"size": "32x32"}, "size", "WIDTHxHEIGHT"),
    ({"size": "big"}, "size", "WIDTHxHEIGHT"),
    ({"response_format": "url"}, "response_format", "b64_json"),
    ({"output_format": "jpeg"}, "output_format", "only png"),
    ({"output_format": "webp"}, "output_format", "only png"),
    ({"url": "https://example.com/x.png"}, "url", "writes no files"),
    ({"path": "/tmp/x.png"}, "path", "writes no files"),
    ({"output_path": "/tmp/x.png"}, "output_path", "writes no files"),
    ({"output_dir": "/tmp"}, "output_dir", "writes no files"),
    ({"n": 0}, "n", "greater than or equal to 1"),
    ({"n": 11}, "n", "less than or equal to 10"),
    ({"seed": -1}, "seed", "greater than or equal to 0"),
    ({"seed": 2**32}, "seed", "less than or equal to"),
    ({"num_inference_steps": 0}, "num_inference_steps", "greater than or equal to 1"),
    ({"num_inference_steps": 51}, "num_inference_steps", "less than or equal to 50"),
    ({"background": "transparent"}, "background", "Invalid value"),
    ({"stream": True}, "stream", "Invalid value"),
])
def test_documented_400s(client: TestClient, fields: dict[str, Any], param: str,
                         words: str) -> None:
    error = error_of(client.post(GENERATIONS, json={**SMALL, **fields}), 400)
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    assert words in error["message"]


def test_missing_prompt_and_bad_json_are_400(client: TestClient) -> None:
    assert error_of(client.post(GENERATIONS, json={"size": "64x64"}), 400)["param"] == "prompt"
    broken = client.post(GENERATIONS, content=b"{nope",
                         headers={"content-type": "application/json"})
    assert "not valid JSON" in error_of(broken, 400)["message"]


@pytest.mark.parametrize(("fields", "param"), [
    ({}, "images"),
    ({"images": []}, "images"),
    ({"images": [{"file_id": "file-1"}]}, "images.0.image_url"),
    ({"images": [{"image_url": "data:image/png;base64,AAAA"}] * 2}, "images"),
    ({"images": [{"image_url": "data:image/png;base64,bm90IGFuIGltYWdl"}]}, "images.0.image_url"),
    ({"images": [{"image_url": "/etc/hostname"}]}, "images.0.image_url"),
    ({"images": [{"image_url": "data:image/png;base64,AAAA"}], "mask": {"image_url": "x"}},
     "mask"),
    ({"images": [{"image_url": "data:image/png;base64,AAAA"}], "image_strength": 1.5},
     "image_strength"),
])
def test_edit_400s(client: TestClient, fields: dict[str, Any], param: str) -> None:
    error = error_of(client.post(EDITS, json={**SMALL, **fields}), 400)
    assert error["param"] == param, error


@pytest.mark.parametrize("path", [GENERATIONS, EDITS, "/images/edits"])
def test_bodies_are_json_only(client: TestClient, path: str) -> None:
    upload = client.post(path, data={"prompt": "a cat"}, files={"image": ("a.png", b"x")})
    error = error_of(upload, 415)
    assert error["code"] == "unsupported_media_type" and "JSON body" in error["message"]
    assert "multipart/form-data" in error["message"]
    form = client.post(path, data={"prompt": "a cat"})
    assert error_of(form, 415)["type"] == "invalid_request_error"


def test_text_routes_answer_while_an_image_is_drawn(client: TestClient) -> None:
    results: list[int] = []
    thread = threading.Thread(
        target=lambda: results.append(client.post(GENERATIONS, json=SLOW).status_code))
    thread.start()
    _wait_for_queue(client, 1)
    chat = client.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8,
        "temperature": 0})
    assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"]
    assert _queue_depth(client) == 1  # the chat did not wait for the image
    thread.join(120)
    assert results == [200]
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["model"] == "qwen3-tiny"
    assert health["images"] == {"model": "zimage-tiny", "queue_depth": 0, "max_queue": 4,
                                "timeout_s": 300.0}


def _queue_depth(client: TestClient) -> int:
    depth: int = client.get("/health").json()["images"]["queue_depth"]
    return depth


def _wait_for_queue(client: TestClient, depth: int) -> None:
    deadline = time.monotonic() + 60
    while _queue_depth(client) != depth:
        assert time.monotonic() < deadline, f"the image queue never reached {depth}"
        time.sleep(0.01)


def test_a_full_queue_is_503() -> None:
    with image_app(max_queue=0) as client:
        results: list[int] = []
        thread = threading.Thread(
            target=lambda: results.append(client.post(GENERATIONS, json=SLOW).status_code))
        thread.start()
        _wait_for_queue(client, 1)
        error = error_of(client.post(GENERATIONS, json=SMALL), 503)
        assert error["type"] == "server_busy" and "image queue is full" in error["message"]
        thread.join(120)
        assert results == [200]
        assert client.post(GENERATIONS, json=SMALL).status_code == 200  # free again


def test_a_request_past_its_timeout_is_504_and_the_worker_serves_the_next() -> None:
    with image_app(timeout_s=0.2) as client:
        error = error_of(client.post(GENERATIONS, json=SLOW), 504)
        assert error["type"] == "timeout_error" and "--image-timeout" in error["message"]
        client.app.state.mlxcel.services.parts["images"].timeout_s = 120.0
        _wait_for_queue(client, 0)
        assert client.post(GENERATIONS, json=SMALL).status_code == 200


def test_without_an_image_model_the_routes_are_501() -> None:
    with TestClient(create_app(ServerConfig(model=TEXT_MODEL))) as client:
        for path in (GENERATIONS, EDITS, "/images/generations", "/images/edits"):
            error = error_of(client.post(path, json=SMALL), 501)
            assert error["type"] == "not_implemented" and "--image-model" in error["message"]
        assert "images" not in client.get("/health").json()
