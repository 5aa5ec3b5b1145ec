"""Re-record the goldens from the reference server on the bundled fixtures (``nox -s goldens``).

    python -m mlxcel_conformance.record_goldens [--out goldens/] [--family vision ...]

Each case is recorded on the fixture it names, one server per fixture: the default text fixture;
the vision-language one for the `vision` family; an audio checkpoint (Whisper's for
transcription, the generated Kokoro one for the `speech_*` cases) on the audio-only server; the
Z-Image one for the `images` family, served beside the default text model. Run it from the
repository root (the Kokoro fixture is built by ``fixtures/build_kokoro_fixture.py``). Only the
reference server is recorded: goldens change on purpose, and the diff is read.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from pathlib import Path

from .client import SuiteClient
from .golden_cases import AUDIO_CASES, CASES, VISION_CASES, GoldenCase
from .golden_media_cases import IMAGE_CASES, SPEECH_CASES, SPEECH_FIXTURE
from .goldens import document, send, write_document
from .target import ReferenceServer

ALL_CASES = (*CASES, *VISION_CASES, *AUDIO_CASES, *IMAGE_CASES, *SPEECH_CASES)


def _fixture_path(fixture: str) -> Path:
    if fixture == SPEECH_FIXTURE:  # generated on first use: too big to commit
        # a repository script, not part of the package (nor of its type-checked files)
        builder = importlib.import_module("fixtures.build_kokoro_fixture")
        return Path(builder.ensure_fixture())
    from mlxcel.bundled import bundled_model_path

    return bundled_model_path(fixture)


def _server(fixture: str | None) -> ReferenceServer:
    if fixture is None:
        return ReferenceServer()  # the server's own default model
    from mlxcel.audio.checkpoints import kind_of

    path = _fixture_path(fixture)
    if kind_of(path) is not None:  # Whisper or Kokoro: the audio-only server
        return ReferenceServer(audio_model=str(path))
    if (path / "model_index.json").is_file():  # a diffusers pipeline: Z-Image
        return ReferenceServer(image_model=str(path))  # beside the default text model
    return ReferenceServer(model=str(path))


def record(cases: Sequence[GoldenCase], fixture: str | None, out: Path) -> None:
    server = _server(fixture)
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
    args = parser.parse_args()
    cases = [c for c in ALL_CASES if args.family is None or c.family in args.family]
    by_fixture: dict[str | None, list[GoldenCase]] = {}
    for case in cases:
        by_fixture.setdefault(case.fixture, []).append(case)
    for fixture, group in by_fixture.items():
        record(group, fixture, Path(args.out))


if __name__ == "__main__":
    main()
