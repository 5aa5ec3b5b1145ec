"""Where the bundled fixture model lives, in a wheel and in a source checkout."""

from __future__ import annotations

from pathlib import Path

DEFAULT_FIXTURE = "qwen3-tiny"


def bundled_model_path(name: str = DEFAULT_FIXTURE) -> Path:
    """The fixture shipped inside the wheel, else the one in the repository's fixtures/."""
    here = Path(__file__).resolve().parent
    candidates = [
        here / "_fixtures" / "models" / name,
        here.parents[1] / "fixtures" / "models" / name,
    ]
    for candidate in candidates:
        if (candidate / "config.json").is_file():
            return candidate
    raise FileNotFoundError(f"bundled fixture model {name!r} not found in {candidates}")
