"""Tests for checks/vision.py: the test images are real PNGs, and each check fails on the
behaviour it names."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from mlxcel_conformance.checks.vision import (
    check_families_agree,
    check_image_probe,
    check_local_path_refused,
    check_pixels_reach_model,
    png_data_uri,
    solid_png,
)
from mlxcel_conformance.errors import ConformanceFailure

ERROR = {"error": {"message": "no", "type": "invalid_request_error"}}


def test_solid_png_is_a_real_png() -> None:
    image = Image.open(io.BytesIO(solid_png((1, 2, 3), size=7)))
    assert image.size == (7, 7) and image.mode == "RGB"
    assert image.getpixel((6, 6)) == (1, 2, 3)
    assert png_data_uri((0, 0, 0)).startswith("data:image/png;base64,iVBORw0KGgo")


def test_pixels_reach_model() -> None:
    check_pixels_reach_model({"red": "a", "blue": "b"})
    with pytest.raises(ConformanceFailure) as failure:
        check_pixels_reach_model({"red": "same", "blue": "same"})
    assert failure.value.check == "vision_pixels_reach_model"


def test_families_agree() -> None:
    check_families_agree({"chat": "x", "responses": "x", "messages": "x"})
    with pytest.raises(ConformanceFailure):
        check_families_agree({"chat": "x", "responses": "y", "messages": "x"})


def test_local_path_refused() -> None:
    check_local_path_refused(400, ERROR, "/etc/passwd")
    for status, body in ((200, {"choices": []}), (500, ERROR), (400, "plain text")):
        with pytest.raises(ConformanceFailure) as failure:
            check_local_path_refused(status, body, "/etc/passwd")
        assert failure.value.severity.value == "critical"


def test_image_probe() -> None:
    assert check_image_probe(200, {}) is True
    assert check_image_probe(400, ERROR) is False
    # llama-server without an mmproj: 500 with an error body; the model reads no images
    assert check_image_probe(500, ERROR) is False
    for status, body in ((500, "Internal Server Error"), (400, "nope"), (404, "gone")):
        with pytest.raises(ConformanceFailure):
            check_image_probe(status, body)
