"""Every setting of ``mlxcel-server``, in the order ``--help`` and the docs list them."""

from __future__ import annotations

from typing import Any

from .engine_options import ENGINE_OPTIONS, MEDIA_OPTIONS, SPECULATIVE_OPTIONS
from .limit_options import ACCESS_OPTIONS, LIMIT_OPTIONS, WORKER_OPTIONS
from .option import Option, Target
from .sampling_options import SAMPLING_OPTIONS
from .server_options import SERVER_OPTIONS

OPTIONS: tuple[Option[object], ...] = (
    *SERVER_OPTIONS, *SAMPLING_OPTIONS, *ENGINE_OPTIONS, *SPECULATIVE_OPTIONS, *MEDIA_OPTIONS,
    *LIMIT_OPTIONS, *ACCESS_OPTIONS, *WORKER_OPTIONS,
)
BY_DEST: dict[str, Option[object]] = {o.dest: o for o in OPTIONS}
if len(BY_DEST) != len(OPTIONS):  # pragma: no cover - a declaration error, caught at import
    raise RuntimeError("two settings share a dest")


BY_FIELD: dict[tuple[str, str], Option[object]] = {
    (o.destination, o.target_field): o for o in OPTIONS}
if len(BY_FIELD) != len(OPTIONS):  # pragma: no cover - a declaration error, caught at import
    raise RuntimeError("two settings fill one field")


def default_of(to: Target | str, field: str) -> Any:
    """The declared default of the setting filling ``field`` of ``to`` (a config dataclass's
    field default; a family's section is named by the family)."""
    return BY_FIELD[(to, field)].default
