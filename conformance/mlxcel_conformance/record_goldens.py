"""Re-record every golden from the reference server on the bundled fixture (``nox -s goldens``).

    python -m mlxcel_conformance.record_goldens [--out goldens/]

Only the reference server is recorded: goldens change on purpose, and the diff is read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .client import SuiteClient
from .golden_cases import CASES
from .goldens import document, send, write_document
from .target import ReferenceServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="goldens", help="goldens directory to write")
    args = parser.parse_args()
    out = Path(args.out)
    server = ReferenceServer()
    target = server.start()
    client = SuiteClient(target)
    try:
        model = client.model_for_requests()
        for case in CASES:
            path = write_document(out, document(case, send(client, case, model)))
            print(f"recorded {path}")
    finally:
        client.close()
        server.stop()


if __name__ == "__main__":
    main()
