"""What a diffusers-layout Z-Image checkpoint says about itself, read without loading it.

The layout (as ``Tongyi-MAI/Z-Image-Turbo`` ships it, and as ``mflux-save`` writes it)::

    transformer/   config.json (ZImageTransformer2DModel)  *.safetensors
    text_encoder/  config.json (Qwen3)                      *.safetensors
    vae/           config.json (AutoencoderKL)              *.safetensors
    tokenizer/     tokenizer.json, tokenizer_config.json (with the chat template)

Each ``config.json`` gives its part's sizes. A key or a whole file that is absent leaves the
model's default (Z-Image's full size) in place, as a checkpoint saved by ``mflux-save`` has no
configs. Sizes the model cannot be built with are refused here, by name, at startup.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PARTS = ("transformer", "text_encoder", "vae", "tokenizer")
# ZImageTransformer2DModel's config keys, as the transformer's constructor names them.
TRANSFORMER_KEYS = ("in_channels", "dim", "n_layers", "n_refiner_layers", "n_heads", "norm_eps",
                    "qk_norm", "cap_feat_dim", "rope_theta", "t_scale", "axes_dims", "axes_lens")
# Qwen3's config keys that size the text encoder.
TEXT_ENCODER_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "num_key_value_heads", "intermediate_size", "head_dim",
                     "max_position_embeddings", "rope_theta", "rms_norm_eps")
VAE_BLOCKS = 4  # three 2x down/upsamplings: the 8x latent Z-Image samples
VAE_GROUPS = 32  # the VAE's GroupNorms have 32 groups: channel counts are multiples of 32
LATENT_CHANNELS = 16
DEFAULT_SIDE = 1024  # diffusers' Z-Image pipeline default, when the VAE names no sample_size


class ImageCheckpointError(ValueError):
    """The directory is not a Z-Image checkpoint this server can build."""


@dataclass(frozen=True)
class VaeSizes:
    block_out_channels: tuple[int, ...]
    layers_per_block: int
    scaling_factor: float | None = None
    shift_factor: float | None = None


@dataclass(frozen=True)
class ZImageCheckpoint:
    path: Path
    transformer: dict[str, Any]  # constructor arguments; absent keys keep the defaults
    text_encoder: dict[str, Any]
    vae: VaeSizes | None  # None: the full-size VAE
    default_side: int

    @property
    def name(self) -> str:
        return self.path.name


def check_layout(path: str) -> Path:
    """The checkpoint directory, or an ``ImageCheckpointError`` saying what is missing."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise ImageCheckpointError(f"{path} is not a directory (a diffusers-layout Z-Image "
                                   "checkpoint: transformer/, text_encoder/, vae/, tokenizer/)")
    missing = [part for part in PARTS if not (root / part).is_dir()]
    if missing:
        raise ImageCheckpointError(f"{path} is not a Z-Image checkpoint: it lacks "
                                   f"{', '.join(p + '/' for p in missing)}")
    no_weights = [p for p in PARTS[:3] if not any((root / p).glob("*.safetensors"))]
    if no_weights:
        raise ImageCheckpointError(f"{path}: no *.safetensors weights in "
                                   f"{', '.join(p + '/' for p in no_weights)}")
    return root


def _config(root: Path, part: str) -> dict[str, Any] | None:
    file = root / part / "config.json"
    if not file.is_file():
        return None
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ImageCheckpointError(f"{file} is not valid JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ImageCheckpointError(f"{file} must hold a JSON object")
    return config


def transformer_sizes(config: dict[str, Any]) -> dict[str, Any]:
    sizes = {key: config[key] for key in TRANSFORMER_KEYS if key in config}
    for key, name in (("all_patch_size", "patch_size"), ("all_f_patch_size", "f_patch_size")):
        if key in config:  # diffusers lists the patch sizes it was trained with; Z-Image has one
            values = config[key]
            sizes[name] = values[0] if isinstance(values, list) and len(values) == 1 else values
    heads, kv_heads = config.get("n_heads"), config.get("n_kv_heads")
    if kv_heads is not None and kv_heads != heads:
        raise ImageCheckpointError(f"transformer/config.json: n_kv_heads {kv_heads} != n_heads "
                                   f"{heads} (grouped attention) is not supported")
    if not isinstance(sizes.get("patch_size", 2), int):
        raise ImageCheckpointError("transformer/config.json: one patch size is supported, not "
                                   f"{sizes['patch_size']}")
    return sizes


def text_encoder_sizes(config: dict[str, Any]) -> dict[str, Any]:
    sizes = {key: config[key] for key in TEXT_ENCODER_KEYS if key in config}
    rope = config.get("rope_parameters")  # transformers 5 keeps rope_theta in here
    if "rope_theta" not in sizes and isinstance(rope, dict) and "rope_theta" in rope:
        sizes["rope_theta"] = rope["rope_theta"]
    return sizes


def vae_sizes(config: dict[str, Any]) -> VaeSizes:
    channels = tuple(config.get("block_out_channels", (128, 256, 512, 512)))
    if len(channels) != VAE_BLOCKS or any(not isinstance(c, int) or c <= 0 or c % VAE_GROUPS
                                          for c in channels):
        raise ImageCheckpointError(f"vae/config.json: block_out_channels {list(channels)} must be "
                                   f"{VAE_BLOCKS} positive multiples of {VAE_GROUPS} (an 8x VAE)")
    for key, wanted in (("latent_channels", LATENT_CHANNELS), ("norm_num_groups", VAE_GROUPS),
                        ("in_channels", 3), ("out_channels", 3),
                        ("mid_block_add_attention", True), ("use_quant_conv", False),
                        ("use_post_quant_conv", False)):
        if key in config and config[key] != wanted:
            raise ImageCheckpointError(f"vae/config.json: {key} {config[key]!r} is not "
                                       f"supported (Z-Image's VAE has {wanted!r})")
    return VaeSizes(block_out_channels=channels,
                    layers_per_block=int(config.get("layers_per_block", 2)),
                    scaling_factor=config.get("scaling_factor"),
                    shift_factor=config.get("shift_factor"))


def read_checkpoint(path: str) -> ZImageCheckpoint:
    return read_configs(check_layout(path))


def read_configs(root: Path) -> ZImageCheckpoint:
    """The parts' sizes from their configs alone (the weights need not be there yet)."""
    transformer = _config(root, "transformer")
    text_encoder = _config(root, "text_encoder")
    vae = _config(root, "vae")
    sample = (vae or {}).get("sample_size", DEFAULT_SIDE)
    side = sample[0] if isinstance(sample, list) and sample else sample
    return ZImageCheckpoint(
        path=root,
        transformer=transformer_sizes(transformer) if transformer is not None else {},
        text_encoder=text_encoder_sizes(text_encoder) if text_encoder is not None else {},
        vae=vae_sizes(vae) if vae is not None else None,
        default_side=side if isinstance(side, int) and side > 0 else DEFAULT_SIDE,
    )
