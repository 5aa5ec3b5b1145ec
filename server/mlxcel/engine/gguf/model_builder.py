"""A GGUF file as the mlx-lm model of its architecture: what ``mlx_lm.load(path,
return_config=True)`` returns for an mlx-lm directory, ``(model, tokenizer, config)``.

The model is built as mlx-lm builds one (``mlx_lm/utils.py``, ``load_model``): the class from
``mlx_lm.models.<model_type>``, every layer whose weight arrives with ``.scales`` swapped for its
quantized form by ``nn.quantize`` (bits and group size read off the arrays with mlx-lm's
``infer_quant_config``), then ``load_weights(strict=True)``.
"""

from __future__ import annotations

import importlib
import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten
from mlx_lm.tokenizer_utils import TokenizerWrapper
from mlx_lm.utils import infer_quant_config

from .architectures import CONFIG_TENSORS, architecture_of, model_config
from .gguf_file import check_tensor_types, open_reader, plain, read_gguf
from .gguf_tokenizer import load_gguf_tokenizer
from .tensor_names import gguf_to_module_paths, missing_tensors, rename_tensors
from .unsupported import UnsupportedGGUF

log = logging.getLogger(__name__)

_SMALL_FIELD = 64  # array elements


@dataclass
class GGUFModel:
    """A loaded file: the model, its mlx-lm config and the file's metadata (the tokenizer's
    source, which the conversion command writes out)."""

    path: str
    model: nn.Module
    config: dict[str, Any]
    metadata: dict[str, Any]


def _parameter_paths(model: nn.Module) -> list[str]:
    flat = cast(list[tuple[str, Any]], tree_flatten(model.parameters()))
    return [name for name, _ in flat]


def _empty_model(config: dict[str, Any]) -> nn.Module:
    module = importlib.import_module(f"mlx_lm.models.{config['model_type']}")
    model: nn.Module = module.Model(module.ModelArgs.from_dict(config))
    return model


def _permuted_heads(path: str, metadata: dict[str, Any], config: dict[str, Any]
                    ) -> dict[str, int]:
    _, spec = architecture_of(path, metadata)
    if not spec.rope_permuted:
        return {}
    return {"attn_q": config["num_attention_heads"], "attn_k": config["num_key_value_heads"]}


def _quantization(model: nn.Module, weights: dict[str, mx.array]) -> dict[str, Any] | None:
    """Swap in quantized layers where the weights are quantized; the config's ``quantization``:
    the most common width, and an entry of its own for each layer packed otherwise (a Q4_1
    file keeps its token embeddings in Q8_0), as mlx-lm's mixed-precision configs name them, so
    that an mlx-lm that does not read widths off the arrays loads the directory too."""
    widths: Counter[tuple[int, int]] = Counter()  # (bits, group size) -> layers
    layers: dict[str, dict[str, Any]] = {}

    def predicate(module_path: str, module: nn.Module) -> bool | dict[str, Any]:
        if not hasattr(module, "to_quantized") or f"{module_path}.scales" not in weights:
            return False
        params = infer_quant_config(module_path, module, weights)
        widths[(params["bits"], params["group_size"])] += 1
        layers[module_path] = params
        return params

    nn.quantize(model, class_predicate=predicate)
    if not widths:
        return None
    bits, group_size = widths.most_common(1)[0][0]
    quantization: dict[str, Any] = {"group_size": group_size, "bits": bits, "mode": "affine"}
    for module_path, params in layers.items():
        if (params["bits"], params["group_size"]) != (bits, group_size):
            quantization[module_path] = {"group_size": params["group_size"],
                                         "bits": params["bits"], "mode": params["mode"]}
    return quantization


def build_model(path: str, config: dict[str, Any], metadata: dict[str, Any],
                tensors: dict[str, mx.array]) -> nn.Module:
    model = _empty_model(config)
    _, spec = architecture_of(path, metadata)
    table = gguf_to_module_paths(spec.gguf_arch, config["num_hidden_layers"],
                                 _parameter_paths(model))
    weights = rename_tensors(path, {k: v for k, v in tensors.items() if k not in CONFIG_TENSORS},
                             table, _permuted_heads(path, metadata, config))
    if spec.norms_plus_one:
        weights = {name: value - 1 if name.endswith("norm.weight") else value
                   for name, value in weights.items()}
    if hasattr(model, "sanitize"):
        weights = model.sanitize(weights)
    quantization = _quantization(model, weights)
    if quantization:
        config["quantization"] = config["quantization_config"] = quantization
    model.eval()
    try:
        model.load_weights(list(weights.items()), strict=True)
    except ValueError as exc:  # missing or misshapen tensors: mlx names them
        raise UnsupportedGGUF(path, f"tensors do not fit mlx-lm's {config['model_type']} "
                              f"model: {exc}") from None
    mx.eval(model.parameters())
    return model


def load_gguf_model(path: str) -> GGUFModel:
    contents = read_gguf(path)
    config = model_config(path, contents.metadata, contents.tensors)
    model = build_model(path, config, contents.metadata, contents.tensors)
    log.info("GGUF %s: %s model, %d layers%s", Path(path).name, config["model_type"],
             config["num_hidden_layers"],
             f", quantized {config['quantization']}" if "quantization" in config else "")
    return GGUFModel(path, model, config, contents.metadata)


def load_gguf(path: str) -> tuple[nn.Module, TokenizerWrapper, dict[str, Any]]:
    """What ``mlx_lm.load(path, return_config=True)`` returns, from a GGUF file."""
    loaded = load_gguf_model(path)
    tokenizer = load_gguf_tokenizer(path, loaded.metadata, loaded.config)
    return loaded.model, tokenizer, loaded.config


def check_gguf(path: str) -> None:
    """Raise ``UnsupportedGGUF`` for a file the server cannot load, reading only its header,
    metadata and tensor table (memory-mapped): fast enough for startup, before any weight loads."""
    reader = open_reader(path)
    check_tensor_types(path, reader)
    # the vocabulary's arrays are what is slow to turn into Python, and the check needs none
    metadata = {name: plain(field.contents()) for name, field in reader.fields.items()
                if len(field.data) <= _SMALL_FIELD}
    config = model_config(path, metadata, {tensor.name: tensor.data for tensor in reader.tensors})
    _, spec = architecture_of(path, metadata)
    model = _empty_model(config)  # lazy arrays: nothing is computed
    paths = _parameter_paths(model)
    table = gguf_to_module_paths(spec.gguf_arch, config["num_hidden_layers"], paths)
    for tensor in reader.tensors:
        stem = tensor.name.rpartition(".")[0]
        if stem not in table and tensor.name not in CONFIG_TENSORS:
            raise UnsupportedGGUF(path, f"tensor {tensor.name} has no place in mlx-lm's "
                                  f"{config['model_type']} model")
    present = {tensor.name.rpartition(".")[0] for tensor in reader.tensors}
    missing = missing_tensors(spec.gguf_arch, config["num_hidden_layers"], paths, present)
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if missing[3:] else "")
        raise UnsupportedGGUF(path, f"mlx-lm's {config['model_type']} model needs tensors the "
                              f"file does not hold: {shown}")
