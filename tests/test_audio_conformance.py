"""The suite's audio family against a real audio-only reference server (the Whisper fixture):
every audio feature PASSes there, the unconfigured-route checks of other families still
hold, and nothing FAILs. The default ``mlxcel-conformance`` run reports these UNSUPPORTED."""

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

pytest.importorskip("mlx_whisper")

WHISPER = MODELS / "whisper-tiny-random"
FEATURES = {"audio.transcriptions.json", "audio.transcriptions.verbose_json",
            "audio.transcriptions.text", "audio.translations.verbose_json",
            "audio.errors.missing_file", "audio.errors.bad_audio",
            "audio.errors.response_format", "audio.errors.too_large"}
GOLDENS = {f"golden.audio.{case}" for case in (
    "transcriptions_json", "transcriptions_verbose_json", "transcriptions_text",
    "transcriptions_srt", "transcriptions_vtt", "translations_json", "translations_verbose_json",
    "error_not_wav", "error_too_large")}


@pytest.fixture(scope="module")
def audio_server() -> Iterator[str]:
    yield from serve(audio_model=str(WHISPER), api_key=None, extra_args=())


def test_audio_family_passes_on_the_whisper_server(audio_server: str, tmp_path: Path) -> None:
    # The other families' goldens are recorded on the text server: an audio-only server
    # answers their 501s in its own words, so they are not replayed here in exact mode
    # (test_unconfigured_routes checks those routes).
    verdicts = suite_verdicts(
        audio_server, "test_audio or test_unconfigured_routes or golden and audio",
        tmp_path / "report", "--goldens", GOLDENS_MODE)
    assert_verdicts(verdicts, FEATURES, "PASS")
    # The audio goldens replay (exactly, on the CPU) on the fixture they were recorded on.
    assert_verdicts(verdicts, GOLDENS, "PASS")
    assert verdicts["audio.unconfigured_501"] == "PASS"  # speech needs a Kokoro checkpoint
    assert verdicts["golden.audio.transcriptions_unconfigured"] == "UNSUPPORTED"
    assert_no_failure(verdicts)
