"""Where the bundled fixture model lives, in a wheel and in a source checkout."""

from __future__ import annotations

from pathlib import Path

DEFAULT_FIXTURE = "qwen3-tiny"


def bundled_model_path(name: str = DEFAULT_FIXTURE) -> Path:
    """The fixture shipped inside the wheel, else the one in the repository's fixtures/: a
    directory with a ``config.json``, or a diffusers pipeline's ``model_index.json`` (the
    Z-Image fixture)."""
    here = Path(__file__).resolve().parent
    candidates = [
        here / "_fixtures" / "models" / name,
        here.parents[1] / "fixtures" / "models" / name,
    ]
    for candidate in candidates:
        if any((candidate / name).is_file() for name in ("config.json", "model_index.json")):
            return candidate
    raise FileNotFoundError(f"bundled fixture model {name!r} not found in {candidates}")
