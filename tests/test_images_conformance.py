"""The suite's images family against a real reference server with an image model (the Z-Image
fixture, beside the bundled text model): every images feature PASSes there, the 501 checks of
the image routes are UNSUPPORTED, and nothing FAILs; the images goldens recorded on this fixture
replay (exactly, on the CPU) with PASS. The default ``mlxcel-conformance`` run (no
``--image-model``) reports the images features and goldens UNSUPPORTED."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _conformance_run import (
    GOLDENS_MODE,
    MODELS,
    assert_no_failure,
    assert_verdicts,
    serve,
    suite_verdicts,
)

from mlxcel_conformance.golden_media_cases import IMAGE_CASES

pytest.importorskip("mflux")

ZIMAGE = MODELS / "zimage-tiny"
FEATURES = {"images.generations.shape", "images.generations.seed_determinism",
            "images.generations.n", "images.edits.shape", "images.errors.response_format_url",
            "images.errors.output_format", "images.errors.path_fields", "images.errors.size",
            "images.errors.empty_prompt", "images.errors.json_only"}
GOLDENS = {case.feature for case in IMAGE_CASES}  # recorded on this fixture


@pytest.fixture(scope="module")
def image_server() -> Iterator[str]:
    yield from serve(api_key=None, encoders=False, image_model=str(ZIMAGE), extra_args=())


def test_images_family_passes_on_the_image_server(image_server: str, tmp_path: Path) -> None:
    verdicts = suite_verdicts(
        image_server, "test_images or test_unconfigured_routes or golden and images",
        tmp_path / "report", "--goldens", GOLDENS_MODE)
    assert_verdicts(verdicts, FEATURES, "PASS")
    assert_verdicts(verdicts, GOLDENS, "PASS")
    # The image routes are served: their 501 checks and golden are UNSUPPORTED here, while the
    # other routes without their model (audio, realtime) still answer their 501.
    assert verdicts["images.unconfigured_501"] == "UNSUPPORTED"
    assert verdicts["golden.images.generations_unconfigured"] == "UNSUPPORTED"
    assert verdicts["audio.unconfigured_501"] == "PASS"
    assert_no_failure(verdicts)
