"""The suite's audio family against a real audio-only reference server (the Whisper fixture):
every audio feature PASSes there, the unconfigured-route checks of other families still
hold, and nothing FAILs. The default ``mlxcel-conformance`` run reports these UNSUPPORTED."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import mlx.core as mx
import pytest

from mlxcel_conformance.target import ReferenceServer

pytest.importorskip("mlx_whisper")

ROOT = Path(__file__).resolve().parents[1]
WHISPER = ROOT / "fixtures" / "models" / "whisper-tiny-random"
# The goldens were recorded on the CPU in float32; these fixtures are untrained, so Metal's
# float16 and kernels can flip their near-ties: exact replay on the CPU, shape on Metal.
GOLDENS_MODE = "shape" if mx.metal.is_available() else "exact"
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
    server = ReferenceServer(audio_model=str(WHISPER), api_key=None, extra_args=())
    try:
        yield server.start().base_url
    finally:
        server.stop()


def test_audio_family_passes_on_the_whisper_server(audio_server: str, tmp_path: Path) -> None:
    report = tmp_path / "report"
    run = subprocess.run(
        [sys.executable, "-m", "mlxcel_conformance", "--base-url", audio_server,
         # The other families' goldens are recorded on the text server: an audio-only server
         # answers their 501s in its own words, so they are not replayed here in exact mode
         # (test_unconfigured_routes checks those routes).
         "--profile", "mlxcel", "-k", "test_audio or test_unconfigured_routes or golden and audio",
         "--goldens", GOLDENS_MODE, "--report", str(report)],
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    records = json.loads((report / "conformance.json").read_text())["records"]
    verdicts = {r["feature"]: r["verdict"] for r in records}
    assert {f: verdicts.get(f) for f in FEATURES} == dict.fromkeys(FEATURES, "PASS")
    # The audio goldens replay (exactly, on the CPU) on the fixture they were recorded on.
    assert {f: verdicts.get(f) for f in GOLDENS} == dict.fromkeys(GOLDENS, "PASS")
    assert verdicts["audio.unconfigured_501"] == "PASS"  # speech: no Kokoro backend
    assert verdicts["golden.audio.transcriptions_unconfigured"] == "UNSUPPORTED"
    assert "FAIL" not in verdicts.values() and "ERROR" not in verdicts.values()
