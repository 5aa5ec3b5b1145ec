"""Re-record the goldens from the reference server on the bundled fixtures (``nox -s goldens``).

    python -m mlxcel_conformance.record_goldens [--out goldens/] [--family vision ...]

Each case is recorded on the fixture it names, one server per fixture: the default text fixture;
the vision-language one for the `vision` family; an audio checkpoint (Whisper's for
transcription, the generated Kokoro one for the `speech_*` cases) on the audio-only server; the
Z-Image one for the `images` family, served beside the default text model. Run it from the
checkout: the fixtures come from ``fixtures/models`` (or ``--fixture-dir DIR``), the Kokoro one is
built by running ``fixtures/build_kokoro_fixture.py`` (or given by ``--speech-fixture``). Only the
reference server is recorded: goldens change on purpose, and the diff is read.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .client import SuiteClient
from .fixture_models import fixture_path
from .golden_cases import AUDIO_CASES, AUDIO_FIXTURE, CASES, VISION_CASES, GoldenCase
from .golden_media_cases import IMAGE_CASES, IMAGE_FIXTURE, SPEECH_CASES, SPEECH_FIXTURE
from .goldens import document, send, write_document
from .target import ReferenceServer

ALL_CASES = (*CASES, *VISION_CASES, *AUDIO_CASES, *IMAGE_CASES, *SPEECH_CASES)
# the fixtures served by the audio-only server (Whisper, Kokoro) and beside the text model
AUDIO_FIXTURES = frozenset({AUDIO_FIXTURE, SPEECH_FIXTURE})
IMAGE_FIXTURES = frozenset({IMAGE_FIXTURE})
# the checkout's builder of the generated Kokoro fixture (run, never imported)
KOKORO_BUILDER = Path(__file__).resolve().parents[2] / "fixtures" / "build_kokoro_fixture.py"


def built_speech_fixture(builder: Path = KOKORO_BUILDER) -> Path:
    """Build the Kokoro fixture (once; it is cached) with the checkout's script, which prints
    ``DIR (N bytes)``, and return DIR."""
    if not builder.is_file():
        raise SystemExit(f"no {builder}: give --speech-fixture DIR (the generated Kokoro "
                         "fixture) or run from a source checkout")
    done = subprocess.run([sys.executable, str(builder)], capture_output=True, text=True,
                          check=True)
    return Path(done.stdout.strip().splitlines()[-1].rsplit(" (", 1)[0])


def fixture_dir(fixture: str, fixtures: Path | None = None,
                speech: Path | None = None) -> Path:
    if fixture == SPEECH_FIXTURE:  # generated on first use: too big to commit
        return speech or built_speech_fixture()
    return fixture_path(fixture, fixtures)


def _server(fixture: str | None, fixtures: Path | None = None,
            speech: Path | None = None) -> ReferenceServer:
    if fixture is None:
        return ReferenceServer(fixtures=fixtures)  # the server's own default model
    path = str(fixture_dir(fixture, fixtures, speech))
    if fixture in AUDIO_FIXTURES:  # Whisper or Kokoro: the audio-only server
        return ReferenceServer(audio_model=path, fixtures=fixtures)
    if fixture in IMAGE_FIXTURES:  # a diffusers pipeline: Z-Image, beside the default model
        return ReferenceServer(image_model=path, fixtures=fixtures)
    return ReferenceServer(model=path, fixtures=fixtures)


def record(cases: Sequence[GoldenCase], server: ReferenceServer, out: Path) -> None:
    client = SuiteClient(server.start())
    try:
        model = client.model_for_requests()
        for case in cases:
            path = write_document(out, document(case, send(client, case, model)))
            print(f"recorded {path}")
    finally:
        client.close()
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="goldens", help="goldens directory to write")
    parser.add_argument("--family", action="append", default=None,
                        help="record only this family's cases (repeatable; default: all)")
    parser.add_argument("--fixture-dir", type=Path, default=None,
                        help="directory of the fixture models (default: $MLXCEL_FIXTURES, "
                        "else the checkout's fixtures/models)")
    parser.add_argument("--speech-fixture", type=Path, default=None,
                        help="the generated Kokoro fixture (default: built by the checkout's "
                        "fixtures/build_kokoro_fixture.py)")
    args = parser.parse_args()
    cases = [c for c in ALL_CASES if args.family is None or c.family in args.family]
    by_fixture: dict[str | None, list[GoldenCase]] = {}
    for case in cases:
        by_fixture.setdefault(case.fixture, []).append(case)
    for fixture, group in by_fixture.items():
        server = _server(fixture, args.fixture_dir, args.speech_fixture)
        record(group, server, Path(args.out))


if __name__ == "__main__":
    main()
