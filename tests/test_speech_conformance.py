"""The suite's speech features against a real audio-only reference server on the generated
Kokoro fixture: every one PASSes there, the speech goldens recorded on this fixture replay
(exactly, on the CPU) with PASS, the transcription routes answer their 501, and nothing FAILs.
The default ``mlxcel-conformance`` run reports these UNSUPPORTED."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _conformance_run import (
    GOLDENS_MODE,
    assert_no_failure,
    assert_verdicts,
    serve,
    suite_verdicts,
)

from mlxcel_conformance.golden_media_cases import SPEECH_CASES

pytest.importorskip("misaki")

FEATURES = {f"audio.speech.{name}" for name in (
    "wav", "deterministic", "depends_on_input", "pcm", "sse", "errors.missing_input",
    "errors.empty_input", "errors.input_too_long", "errors.unknown_voice",
    "errors.response_format", "errors.speed")}
GOLDENS = {case.feature for case in SPEECH_CASES}  # recorded on this fixture
TRANSCRIPTION = {"audio.transcriptions.json", "audio.translations.verbose_json"}


@pytest.fixture(scope="module")
def speech_server() -> Iterator[str]:
    from fixtures.build_kokoro_fixture import ensure_fixture

    yield from serve(audio_model=str(ensure_fixture()), api_key=None, extra_args=())


def test_speech_features_pass_on_the_kokoro_server(speech_server: str, tmp_path: Path) -> None:
    verdicts = suite_verdicts(speech_server, "test_audio or test_unconfigured_routes",
                              tmp_path / "report", "--goldens", GOLDENS_MODE)
    assert_verdicts(verdicts, FEATURES, "PASS")
    assert_verdicts(verdicts, GOLDENS, "PASS")
    # Transcription needs a Whisper checkpoint: UNSUPPORTED here, its 501 checked instead.
    assert_verdicts(verdicts, TRANSCRIPTION, "UNSUPPORTED")
    assert verdicts["audio.unconfigured_501"] == "PASS"
    assert_no_failure(verdicts)
