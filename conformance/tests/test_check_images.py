"""The images family's checks on hand-made bodies: a well-formed answer passes, and each broken
property fails under its own check name."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from mlxcel_conformance.checks.images import (
    check_error_param,
    check_image_body,
    check_n_seeds,
    check_seed_determinism,
    png_size,
)
from mlxcel_conformance.checks.vision import solid_png
from mlxcel_conformance.errors import ConformanceFailure

RED, BLUE = solid_png((255, 0, 0), 64), solid_png((0, 0, 255), 64)


def body(*pngs: bytes, seed: int = 7, prompt: str = "a fox") -> dict[str, Any]:
    return {"created": 1764633600, "output_format": "png", "size": "64x64",
            "data": [{"b64_json": base64.b64encode(png).decode(), "mime_type": "image/png",
                      "width": 64, "height": 64, "seed": seed + i, "revised_prompt": prompt}
                     for i, png in enumerate(pngs)]}


def failure(call: Any, *args: Any, **kwargs: Any) -> ConformanceFailure:
    with pytest.raises(ConformanceFailure) as exc:
        call(*args, **kwargs)
    return exc.value


def test_png_size_reads_the_header() -> None:
    assert png_size(RED) == (64, 64) and png_size(solid_png((0, 0, 0), 8)) == (8, 8)
    assert png_size(b"GIF89a" + RED[6:]) is None and png_size(RED[:20]) is None


def test_a_well_formed_answer_passes() -> None:
    pngs = check_image_body(body(RED, BLUE), n=2, width=64, height=64, prompt="a fox", seed=7)
    assert pngs == [RED, BLUE]


@pytest.mark.parametrize(("path", "value"), [
    (("size",), "32x32"), (("output_format",), "jpeg"), (("created",), "now"),
    (("data", 0, "mime_type"), "image/jpeg"), (("data", 0, "width"), 32),
    (("data", 0, "seed"), -1), (("data", 0, "seed"), 8), (("data", 0, "revised_prompt"), "x"),
    (("data", 0, "b64_json"), "not base64!"),
    (("data", 0, "b64_json"), base64.b64encode(solid_png((0, 0, 0), 32)).decode()),
])
def test_each_broken_property_fails(path: tuple[Any, ...], value: Any) -> None:
    broken = copy.deepcopy(body(RED))
    node: Any = broken
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    error = failure(check_image_body, broken, n=1, width=64, height=64, prompt="a fox", seed=7)
    assert error.check == "image_generation_body"


def test_a_missing_field_or_count_fails() -> None:
    broken = body(RED)
    del broken["data"][0]["seed"]
    assert "lacks ['seed']" in str(failure(check_image_body, broken, n=1, width=64, height=64,
                                           prompt="a fox"))
    assert failure(check_image_body, body(RED), n=2, width=64, height=64,
                   prompt="a fox").check == "image_generation_body"


def test_determinism_n_and_param_checks() -> None:
    check_seed_determinism(RED, RED, BLUE)
    assert failure(check_seed_determinism, RED, BLUE, BLUE).check == "image_seed_determinism"
    assert failure(check_seed_determinism, RED, RED, RED).check == "image_seed_determinism"
    check_n_seeds([RED, BLUE], [7, 8], {8: BLUE})
    assert failure(check_n_seeds, [RED, RED], [7, 8], {}).check == "image_n_seeds"
    assert failure(check_n_seeds, [RED, BLUE], [7, 8], {8: RED}).check == "image_n_seeds"
    check_error_param({"param": "size"}, "size")
    assert failure(check_error_param, {"param": None}, "size").check == "image_error_param"
