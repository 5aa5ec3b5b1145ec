"""mlx-lm's per-request model-selection fields: ``adapters`` (a LoRA adapter directory, only
inside the operator's ``--adapter-dir`` allowlist) and ``draft_model`` / ``num_draft_tokens``
(speculative decoding).

An allowed adapter directory (holding mlx-lm's ``adapter_config.json`` and
``adapters.safetensors``) is applied to the request: the engine loads base + adapter once,
caches it, and decodes such requests unbatched. A non-null ``draft_model`` may only name the draft
model the server was started with (``--draft-model``: its path as given, its real path or its
directory name); any other value is a 400, because a request never makes the server load a
file. Without a configured draft model it is the documented 501. ``draft_model: null`` decodes
this request without a drafter (mlx-lm unloads its draft model; this server keeps it for the
other requests). Everything that is the request's fault (no allowlist configured, a path that
escapes it, a missing directory, an adapter configuration mlx-lm cannot apply) is a 400
``invalid_request_error`` first.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import InvalidRequestError, NotSupported
from .sampling_fields import OpenAISamplingFields

ADAPTER_FLAG = "--adapter-dir (env MLXCEL_ADAPTER_DIR)"
ADAPTER_FILES = ("adapter_config.json", "adapters.safetensors")


def resolve_adapter(value: str, adapter_dir: str | None) -> Path:
    """The real directory ``value`` names inside ``adapter_dir``; 400 on any escape.

    ``value`` is relative to the allowlist (an absolute path must lie inside it). A ``..``
    component is refused outright; the real path (symlinks followed) must stay inside the
    allowlist's real path, so a symlink pointing outside is refused too.
    """
    if adapter_dir is None:
        raise InvalidRequestError(
            f"Per-request adapters are disabled: start the server with {ADAPTER_FLAG} "
            "to allow adapter directories under it.", param="adapters")
    if not value or "\x00" in value:
        raise InvalidRequestError("adapters must name an adapter directory.", param="adapters")
    if ".." in Path(value).parts or ".." in value.replace("\\", "/").split("/"):
        raise InvalidRequestError("adapters must not contain '..'.", param="adapters")
    root = Path(os.path.realpath(adapter_dir))
    real = Path(os.path.realpath(Path(adapter_dir) / value))
    if real != root and root not in real.parents:
        raise InvalidRequestError(
            "adapters must name a directory inside the server's adapter directory.",
            param="adapters")
    if not real.is_dir():
        raise InvalidRequestError(
            f"No adapter directory {value!r} under the server's adapter directory.",
            param="adapters")
    if not all((real / name).is_file() for name in ADAPTER_FILES):
        raise InvalidRequestError(
            f"{value!r} is not an mlx-lm adapter directory (it needs "
            f"{' and '.join(ADAPTER_FILES)}).", param="adapters")
    problem = adapter_problem(real)
    if problem is not None:
        raise InvalidRequestError(f"Adapter {value!r}: {problem}.", param="adapters")
    return real


def adapter_problem(directory: Path) -> str | None:
    """What keeps mlx-lm from applying the adapter in ``directory``, or None. The fields are
    what ``mlx_lm.tuner.utils.load_adapters`` reads (``fine_tune_type`` lora, dora or full;
    otherwise ``num_layers`` and ``lora_parameters`` with ``rank``, ``scale`` and ``dropout``);
    the weights file must at least be a safetensors file (an 8-byte header length, then a
    JSON header: https://github.com/huggingface/safetensors#format)."""
    try:
        config = json.loads((directory / "adapter_config.json").read_bytes())
    except (OSError, ValueError):
        return "adapter_config.json is not readable JSON"
    if not isinstance(config, dict):
        return "adapter_config.json must hold a JSON object"
    kind = config.get("fine_tune_type", "lora")
    if kind not in ("lora", "dora", "full"):
        return f"adapter_config.json: fine_tune_type must be lora, dora or full, not {kind!r}"
    if kind != "full":
        if not isinstance(config.get("num_layers"), int):
            return "adapter_config.json needs an integer num_layers"
        lora = config.get("lora_parameters")
        if not isinstance(lora, dict):
            return "adapter_config.json needs a lora_parameters object"
        for key in ("rank", "scale", "dropout"):
            if isinstance(lora.get(key), bool) or not isinstance(lora.get(key), int | float):
                return f"adapter_config.json: lora_parameters needs a number {key}"
    return _safetensors_problem(directory / "adapters.safetensors")


def _safetensors_problem(path: Path) -> str | None:
    try:
        with path.open("rb") as weights:
            size = path.stat().st_size
            header_bytes = int.from_bytes(weights.read(8), "little")
            if size < 8 or header_bytes > size - 8:
                return "adapters.safetensors is not a safetensors file"
            header = json.loads(weights.read(header_bytes))
    except (OSError, ValueError):
        return "adapters.safetensors is not a safetensors file"
    return None if isinstance(header, dict) else "adapters.safetensors is not a safetensors file"


def draft_model_names(draft_model: str) -> set[str]:
    """The values a request's ``draft_model`` may use for the configured draft model."""
    return {draft_model, os.path.realpath(draft_model), Path(draft_model).name}


def check_model_fields(request: OpenAISamplingFields, adapter_dir: str | None,
                       draft_model: str | None = None) -> str | None:
    """Refuse what this server cannot honour; return the adapter directory to apply, if any.
    ``draft_model: null`` and ``num_draft_tokens`` are accepted (they switch the server's
    drafter off, or size its drafts)."""
    adapter = (str(resolve_adapter(request.adapters, adapter_dir))
               if request.adapters is not None else None)
    if request.draft_model is None:
        return adapter
    if draft_model is None:
        raise NotSupported(
            "This server has no draft model: start it with --draft-model PATH to serve "
            "speculative decoding with one.", param="draft_model")
    if request.draft_model not in draft_model_names(draft_model):
        raise InvalidRequestError(
            f"draft_model must name the server's draft model ({Path(draft_model).name}); "
            "a request cannot load another model.", param="draft_model")
    return adapter
