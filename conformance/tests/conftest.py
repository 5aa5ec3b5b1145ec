"""Fixtures for the suite's own tests: the vendored real recordings."""

from __future__ import annotations

import sys
from pathlib import Path

# httpx imports httpcore lazily and keeps the httpcore exception classes it maps to its own on
# first use. pytester's in-process runs drop every module they imported when they end, so an
# httpcore first imported inside one would come back as new classes in the next, which httpx no
# longer maps: its timeouts would escape as raw httpcore errors, without the request they
# belong to. Imported here, before any run, it stays one module for the whole session.
import httpcore  # noqa: F401

# `real_stream_corpus` lives next to the tests; make it importable under any import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))
