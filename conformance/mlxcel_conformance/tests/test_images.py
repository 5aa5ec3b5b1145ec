"""Image generation and edits (`images` family) on a server with an image model.

A server that answers the generation route with 501 has no image model: these features are
UNSUPPORTED there (its 501 is checked by ``test_unconfigured_routes``). Run them against an
mlxcel server started with ``--image-model`` (``--base-url URL --families images``). Requests
are small (64x64, two steps), so a tiny or CPU-bound model answers them quickly. The images
goldens recorded on the Z-Image fixture are replayed behind the same probe: ``shape`` mode,
``exact`` only with ``--goldens exact``.
"""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from mlxcel_conformance.checks.images import (
    check_error_param,
    check_image_body,
    check_n_seeds,
    check_seed_determinism,
)
from mlxcel_conformance.checks.vision import solid_png
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import check_schema, openai_error
from mlxcel_conformance.golden_media_cases import IMAGE_FIXTURE
from mlxcel_conformance.goldens import family_golden_params, replay_golden

GENERATIONS = "/v1/images/generations"
EDITS = "/v1/images/edits"
PROMPT = "A red fox in fresh snow"
SIDE = 64
FIELDS: dict[str, Any] = {"prompt": PROMPT, "size": f"{SIDE}x{SIDE}", "num_inference_steps": 2}
SEED = 1234


def request(client: SuiteClient, route: str = GENERATIONS, /, **fields: Any) -> httpx.Response:
    """``fields`` over the small defaults; positional ``route``, so a ``path`` field is a field."""
    model = client.model_for_requests()
    return client.post(route, {**FIELDS, **({"model": model} if model else {}), **fields})


def serves_images(client: SuiteClient) -> bool:
    """Whether the target draws images (anything but 501 to a valid generation request)."""
    return client.probe("images", lambda: request(client, seed=SEED).status_code != 501)


def require_images(client: SuiteClient) -> None:
    if not serves_images(client):
        pytest.skip("UNSUPPORTED: the server has no image model (generation answers 501)")


def _images(response: httpx.Response, path: str = GENERATIONS, n: int = 1,
            seed: int | None = SEED) -> tuple[dict[str, Any], list[bytes]]:
    expect_status(response, 200)
    body = json_body(response)
    check_schema("POST", path, 200, body)
    return body, check_image_body(body, n=n, width=SIDE, height=SIDE, prompt=PROMPT, seed=seed)


def _error(response: httpx.Response, status: int = 400, path: str = GENERATIONS,
           param: str | None = None) -> dict[str, Any]:
    error = openai_error(response, path, status)
    if param is not None:
        check_error_param(error, param)
    return error


@pytest.mark.conformance(family="images", feature="images.generations.shape")
def test_generation_shape(client: SuiteClient) -> None:
    require_images(client)
    _images(request(client, seed=SEED))
    _images(request(client), seed=None)  # without a seed: one is drawn and reported


@pytest.mark.conformance(family="images", feature="images.generations.seed_determinism")
def test_seed_determinism(client: SuiteClient) -> None:
    require_images(client)
    first = _images(request(client, seed=SEED))[1][0]
    again = _images(request(client, seed=SEED))[1][0]
    other = _images(request(client, seed=SEED + 1), seed=SEED + 1)[1][0]
    check_seed_determinism(first, again, other)


@pytest.mark.conformance(family="images", feature="images.generations.n")
def test_n_images(client: SuiteClient) -> None:
    require_images(client)
    body, pngs = _images(request(client, seed=SEED, n=2), n=2)
    alone = {SEED + 1: _images(request(client, seed=SEED + 1), seed=SEED + 1)[1][0]}
    check_n_seeds(pngs, [item["seed"] for item in body["data"]], alone)


@pytest.mark.conformance(family="images", feature="images.edits.shape")
def test_edit_shape(client: SuiteClient) -> None:
    require_images(client)
    source = "data:image/png;base64," + base64.b64encode(solid_png((200, 40, 40), SIDE)).decode()
    _images(request(client, EDITS, seed=SEED, images=[{"image_url": source}]), EDITS)


@pytest.mark.parametrize("doc", family_golden_params("images", IMAGE_FIXTURE))
def test_images_goldens(client: SuiteClient, model_name: str | None,
                        probed_golden_mode: str, doc: dict[str, Any]) -> None:
    """Generations (n=1, n=2), an edit, the documented 400s and the 415 against goldens recorded
    on the Z-Image fixture at a fixed seed: shape mode (any image server), exact only when
    ``--goldens exact`` is asked for."""
    require_images(client)
    replay_golden(client, doc, model_name, probed_golden_mode)


@pytest.mark.conformance(family="images", feature="images.errors.response_format_url")
def test_url_response_format_is_400(client: SuiteClient) -> None:
    require_images(client)
    _error(request(client, response_format="url"), param="response_format")


@pytest.mark.conformance(family="images", feature="images.errors.output_format")
def test_output_format_other_than_png_is_400(client: SuiteClient) -> None:
    require_images(client)
    _error(request(client, output_format="jpeg"), param="output_format")


@pytest.mark.conformance(family="images", feature="images.errors.path_fields")
@pytest.mark.parametrize("field", ["url", "path", "output_path", "output_dir"])
def test_file_fields_are_400(client: SuiteClient, field: str) -> None:
    require_images(client)
    _error(request(client, **{field: "/tmp/mlxcel-conformance.png"}), param=field)


@pytest.mark.conformance(family="images", feature="images.errors.size")
@pytest.mark.parametrize("size", ["65x64", "64", "huge", "0x0"])
def test_bad_size_is_400(client: SuiteClient, size: str) -> None:
    require_images(client)
    _error(request(client, size=size), param="size")


@pytest.mark.conformance(family="images", feature="images.errors.empty_prompt")
@pytest.mark.parametrize("prompt", ["", "   ", None])
def test_empty_prompt_is_400(client: SuiteClient, prompt: str | None) -> None:
    require_images(client)
    fields = {**FIELDS}
    if prompt is None:
        fields.pop("prompt")
    else:
        fields["prompt"] = prompt
    _error(client.post(GENERATIONS, fields), param="prompt")


@pytest.mark.conformance(family="images", feature="images.errors.json_only")
@pytest.mark.parametrize("path", [GENERATIONS, EDITS])
def test_bodies_are_json_only(client: SuiteClient, path: str) -> None:
    require_images(client)
    upload = client.post(path, data={"prompt": PROMPT},
                         files={"image": ("a.png", solid_png((0, 0, 0), 8), "image/png")})
    _error(upload, 415, path)
