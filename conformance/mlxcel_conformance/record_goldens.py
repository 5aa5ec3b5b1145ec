"""Re-record the goldens from the reference server on the bundled fixtures (``nox -s goldens``).

    python -m mlxcel_conformance.record_goldens [--out goldens/] [--family vision ...]

Each case is recorded on the fixture it names (the default text fixture, the vision-language one
for the `vision` family, the Whisper one, served by the audio-only server, for the `audio`
family), one server per fixture. Only the reference server is recorded: goldens change on
purpose, and the diff is read.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from .client import SuiteClient
from .golden_cases import AUDIO_CASES, CASES, VISION_CASES, GoldenCase
from .goldens import document, send, write_document
from .target import ReferenceServer


def _server(fixture: str | None) -> ReferenceServer:
    if fixture is None:
        return ReferenceServer()  # the server's own default model
    from mlxcel.audio.whisper import is_whisper_checkpoint
    from mlxcel.bundled import bundled_model_path

    path = bundled_model_path(fixture)
    if is_whisper_checkpoint(path):
        return ReferenceServer(audio_model=str(path))
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
    cases = [c for c in (*CASES, *VISION_CASES, *AUDIO_CASES)
             if args.family is None or c.family in args.family]
    by_fixture: dict[str | None, list[GoldenCase]] = {}
    for case in cases:
        by_fixture.setdefault(case.fixture, []).append(case)
    for fixture, group in by_fixture.items():
        record(group, fixture, Path(args.out))


if __name__ == "__main__":
    main()
