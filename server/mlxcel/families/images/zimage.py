"""Z-Image through mflux: the one module that knows mflux's internals, pinned to 0.24.0.

mflux's ``ZImageInitializer`` builds every part at Z-Image's full size, whatever the checkpoint
holds. For the load only, its ``_init_models`` step is swapped for one that builds each part with
the sizes the checkpoint's own configs give (``checkpoint.py``); weight loading and mapping, the
tokenizer, the scheduler, sampling and the VAE decode are mflux's own. mflux pins a CUDA build of
mlx on Linux, so it is installed without its dependencies (``pip install --no-deps
mflux==0.24.0`` after ``pip install 'mlxcel[images]'``) and imported only when an image model is
configured.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from PIL import Image

from .checkpoint import ImageCheckpointError, VaeSizes, ZImageCheckpoint, read_checkpoint

MFLUX_VERSION = "0.24.0"
INSTALL = f"pip install 'mlxcel[images]' && pip install --no-deps mflux=={MFLUX_VERSION}"
_LOAD_LOCK = threading.Lock()  # the initializer swap is process-wide: one load at a time


class ImageBackendMissing(RuntimeError):
    """mflux is not installed, or not the release this module is written against."""


def require_mflux() -> None:
    try:
        found = metadata.version("mflux")
    except metadata.PackageNotFoundError:
        raise ImageBackendMissing(f"--image-model needs mflux: {INSTALL}") from None
    if found != MFLUX_VERSION:
        raise ImageBackendMissing(f"--image-model needs mflux {MFLUX_VERSION}, not {found}: "
                                  f"{INSTALL}")


@dataclass
class ZImageModel:
    checkpoint: ZImageCheckpoint
    model: Any  # mflux.models.z_image.variants.z_image.ZImage
    max_width: int
    max_height: int

    @property
    def name(self) -> str:
        return self.checkpoint.name

    def generate(self, prompt: str, *, seed: int, width: int, height: int, steps: int,
                 init_image: Image.Image | None = None,
                 image_strength: float | None = None) -> Image.Image:
        """One image; call on the image worker. ``init_image`` makes it image-to-image, where
        ``image_strength`` (0..1] is how much of the input survives (mflux's meaning)."""
        result = self.model.generate_image(
            seed=seed, prompt=prompt, num_inference_steps=steps, width=width, height=height,
            image_path=init_image, image_strength=image_strength)
        image: Image.Image = result.image
        return image


def _vae(sizes: VaeSizes | None) -> Any:
    from mflux.models.common.vae.block_decoder import VAEBlockDecoder
    from mflux.models.z_image.model.z_image_vae.vae import VAE

    vae = VAE() if sizes is None else _sized_vae(sizes)
    vae.decode_mode = VAEBlockDecoder.LOW_MEMORY  # as mflux's own initializer sets it
    return vae


def _sized_vae(sizes: VaeSizes) -> Any:
    """mflux's VAE layout (diffusers' AutoencoderKL: encoder down blocks, decoder up blocks with
    one more resnet each, a mid block with attention) at the checkpoint's widths and depth."""
    from mflux.models.z_image.model.z_image_vae.common.unet_mid_block import UNetMidBlock
    from mflux.models.z_image.model.z_image_vae.decoder import conv_in as dec_in
    from mflux.models.z_image.model.z_image_vae.decoder import conv_norm_out as dec_norm
    from mflux.models.z_image.model.z_image_vae.decoder import conv_out as dec_out
    from mflux.models.z_image.model.z_image_vae.decoder.decoder import Decoder
    from mflux.models.z_image.model.z_image_vae.decoder.up_decoder_block import UpDecoderBlock
    from mflux.models.z_image.model.z_image_vae.encoder import conv_in as enc_in
    from mflux.models.z_image.model.z_image_vae.encoder import conv_norm_out as enc_norm
    from mflux.models.z_image.model.z_image_vae.encoder import conv_out as enc_out
    from mflux.models.z_image.model.z_image_vae.encoder.down_encoder_block import (
        DownEncoderBlock,
    )
    from mflux.models.z_image.model.z_image_vae.encoder.encoder import Encoder
    from mflux.models.z_image.model.z_image_vae.vae import VAE
    from mlx import nn

    down, up = sizes.block_out_channels, sizes.block_out_channels[::-1]
    last = len(down) - 1
    encoder, decoder, vae = Encoder.__new__(Encoder), Decoder.__new__(Decoder), VAE.__new__(VAE)
    for module in (encoder, decoder, vae):
        nn.Module.__init__(module)  # the attributes below, not the full-size ones
    encoder.conv_in = enc_in.ConvIn(in_channels=3, out_channels=down[0])
    encoder.down_blocks = [
        DownEncoderBlock(in_channels=down[max(i - 1, 0)], out_channels=c,
                         num_layers=sizes.layers_per_block, add_downsample=i < last)
        for i, c in enumerate(down)]
    encoder.mid_block = UNetMidBlock(channels=down[-1])
    encoder.conv_norm_out = enc_norm.ConvNormOut(num_channels=down[-1])
    encoder.conv_out = enc_out.ConvOut(in_channels=down[-1], out_channels=2 * VAE.latent_channels)
    decoder.conv_in = dec_in.ConvIn(in_channels=VAE.latent_channels, out_channels=up[0])
    decoder.mid_block = UNetMidBlock(channels=up[0])
    decoder.up_blocks = [
        UpDecoderBlock(in_channels=up[max(i - 1, 0)], out_channels=c,
                       num_layers=sizes.layers_per_block + 1, add_upsample=i < last)
        for i, c in enumerate(up)]
    decoder.conv_norm_out = dec_norm.ConvNormOut(channels=up[-1])
    decoder.conv_out = dec_out.ConvOut(in_channels=up[-1], out_channels=3)
    vae.encoder, vae.decoder = encoder, decoder
    if sizes.scaling_factor is not None:
        vae.scaling_factor = float(sizes.scaling_factor)
    if sizes.shift_factor is not None:
        vae.shift_factor = float(sizes.shift_factor)
    return vae


def build_parts(checkpoint: ZImageCheckpoint) -> tuple[Any, Any, Any]:
    """The VAE, transformer and text encoder at the checkpoint's sizes, weights as initialised."""
    from mflux.models.z_image.model.z_image_text_encoder.text_encoder import TextEncoder
    from mflux.models.z_image.model.z_image_transformer.transformer import ZImageTransformer

    return (_vae(checkpoint.vae), ZImageTransformer(**checkpoint.transformer),
            TextEncoder(**checkpoint.text_encoder))


PART_NAMES = ("vae", "transformer", "text_encoder")  # build_parts' order


def _shapes(module: Any) -> dict[str, tuple[int, ...]]:
    from mlx.utils import tree_flatten

    flat: list[tuple[str, Any]] = tree_flatten(module.parameters())  # type: ignore[assignment]
    return {name: tuple(value.shape) for name, value in flat}


@contextmanager
def _parts_sized_by(checkpoint: ZImageCheckpoint,
                    built: dict[str, dict[str, tuple[int, ...]]]) -> Iterator[None]:
    """mflux builds the parts of the next load with the checkpoint's sizes; ``built`` gets
    their parameter shapes, to compare with what the weights then put there."""
    from mflux.models.z_image.z_image_initializer import ZImageInitializer

    def init_models(model: Any) -> None:
        model.vae, model.transformer, model.text_encoder = build_parts(checkpoint)
        built.update({part: _shapes(getattr(model, part)) for part in PART_NAMES})

    with _LOAD_LOCK:
        original = ZImageInitializer.__dict__["_init_models"]
        ZImageInitializer._init_models = staticmethod(init_models)
        try:
            yield
        finally:
            ZImageInitializer._init_models = original


def _check_shapes(path: str, model: Any, built: dict[str, dict[str, tuple[int, ...]]]) -> None:
    """mflux puts loaded arrays in place without comparing shapes: a config that disagrees with
    the weights would only fail (or worse, not) while drawing. Say so at startup instead."""
    for part in PART_NAMES:
        loaded = _shapes(getattr(model, part))
        for name, shape in built[part].items():
            if loaded.get(name, shape) != shape:
                raise ImageCheckpointError(
                    f"{path}: the Z-Image checkpoint did not load: {part} weight {name} has shape "
                    f"{list(loaded[name])}, {part}/config.json makes it {list(shape)}")


def load_zimage(path: str) -> ZImageModel:
    """Load the checkpoint at ``path``; call on the thread that will run it."""
    require_mflux()
    checkpoint = read_checkpoint(path)
    from mflux.models.common.config.model_config import ModelConfig
    from mflux.models.z_image.variants.z_image import ZImage

    built: dict[str, dict[str, tuple[int, ...]]] = {}
    try:
        with _parts_sized_by(checkpoint, built):
            model = ZImage(model_path=str(checkpoint.path),
                           model_config=ModelConfig.z_image_turbo())
    except (ValueError, KeyError, TypeError, OSError) as exc:
        raise ImageCheckpointError(f"{path}: the Z-Image checkpoint did not load: {exc}") from exc
    if model.bits is None:  # quantized layers change shapes on purpose
        _check_shapes(path, model, built)
    transformer = model.transformer
    scale = transformer.patch_size * model.vae.spatial_scale
    rows, cols = (len(table) for table in transformer.rope_embedder.freqs_cis[1:3])
    return ZImageModel(checkpoint=checkpoint, model=model, max_width=cols * scale,
                       max_height=rows * scale)
