"""Where the suite finds the fixture models it hands a self-started reference server.

The suite never imports the server (``nox -s lint`` enforces it), so it finds the fixtures by
location, first match wins:

1. an explicit directory: ``--fixture-dir DIR`` (``mlxcel-conformance``, ``record_goldens``,
   ``peers``);
2. the ``MLXCEL_FIXTURES`` environment variable;
3. the suite's package data, ``mlxcel_conformance/_data/fixtures/`` (the server's wheel puts
   the encoder fixtures there; the suite's own wheel has none: it runs against a URL);
4. a source checkout's ``fixtures/models/``.

Each directory holds one model directory per fixture name (``bert-tiny-embed/config.json``, a
Z-Image pipeline's ``model_index.json``). Without a fixture the caller leaves the option out,
and the server answers that family's documented 501.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

FIXTURES_ENV = "MLXCEL_FIXTURES"
# the reference server's default model, which peers and recordings start from
DEFAULT_FIXTURE = "qwen3-tiny"
EMBED_FIXTURE = "bert-tiny-embed"
RERANK_FIXTURE = "bert-tiny-rerank"
DRAFT_FIXTURE = "qwen3-tiny-draft"
_MARKERS = ("config.json", "model_index.json")


def fixture_roots(explicit: str | Path | None = None) -> list[Path]:
    """The directories searched for fixtures, in order (existing or not)."""
    here = Path(__file__).resolve().parent
    roots = [Path(explicit)] if explicit else []
    if os.environ.get(FIXTURES_ENV):
        roots.append(Path(os.environ[FIXTURES_ENV]))
    return roots + [here / "_data" / "fixtures", here.parents[1] / "fixtures" / "models"]


def fixture_path(name: str, root: str | Path | None = None) -> Path:
    """The directory of fixture ``name``; ``FileNotFoundError`` naming every place looked."""
    roots = fixture_roots(root)
    for candidate in (base / name for base in roots):
        if any((candidate / marker).is_file() for marker in _MARKERS):
            return candidate
    looked = ", ".join(str(base) for base in roots)
    raise FileNotFoundError(f"fixture model {name!r} not found in {looked} "
                            f"(give --fixture-dir DIR or set {FIXTURES_ENV})")


def encoder_args(root: str | Path | None = None) -> list[str]:
    """``--embedding-model``/``--rerank-model`` for the encoder fixtures, so the embedding and
    rerank families run against real models; none when the fixtures are not found, or when
    this interpreter (the self-started server's) lacks the server's ``embeddings`` extra
    (mlx-embeddings): the server would refuse to start, and its 501s say what is missing."""
    if importlib.util.find_spec("mlx_embeddings") is None:
        return []
    try:
        return ["--embedding-model", str(fixture_path(EMBED_FIXTURE, root)),
                "--rerank-model", str(fixture_path(RERANK_FIXTURE, root))]
    except FileNotFoundError:
        return []


def draft_args(root: str | Path | None = None) -> list[str]:
    """``--draft-model`` for the draft fixture (it shares the default fixture's tokenizer), so
    the speculative-decoding checks run; none when it is not found."""
    try:
        return ["--draft-model", str(fixture_path(DRAFT_FIXTURE, root))]
    except FileNotFoundError:
        return []
