"""Fixtures for the suite's own tests: the vendored real recordings."""

from __future__ import annotations

import sys
from pathlib import Path

# `real_stream_corpus` lives next to the tests; make it importable under any import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))
