"""``--image-model`` at startup: a path that is no Z-Image checkpoint is refused before anything
loads, a checkpoint that does not load stops the server with its reason, and the flags reach the
config. The checkpoint's configs size each part (``mlxcel.families.images.checkpoint``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.cli import build_parser, config_from_args, main
from mlxcel.config import ServerConfig
from mlxcel.families.images.checkpoint import ImageCheckpointError, read_checkpoint
from mlxcel.families.images.image_config import ImageConfig
from mlxcel_conformance.target import free_port

ROOT = Path(__file__).resolve().parents[2]
ZIMAGE = ROOT / "fixtures" / "models" / "zimage-tiny"
TEXT_MODEL = str(ROOT / "fixtures" / "models" / "qwen3-tiny")


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_a_missing_directory_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["--image-model", "/nonexistent/zimage"], capsys)
    assert "--image-model: /nonexistent/zimage is not a directory" in err
    assert "transformer/, text_encoder/, vae/, tokenizer/" in err


def test_a_directory_without_the_parts_is_refused(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "transformer").mkdir()
    err = refused(["--image-model", str(tmp_path)], capsys)
    assert "is not a Z-Image checkpoint: it lacks text_encoder/, vae/, tokenizer/" in err
    for part in ("text_encoder", "vae", "tokenizer"):
        (tmp_path / part).mkdir()
    assert "no *.safetensors weights in transformer/, text_encoder/, vae/" in refused(
        ["--image-model", str(tmp_path)], capsys)


def test_bad_queue_flags_and_an_audio_only_server_are_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert "--image-timeout > 0" in refused(
        ["--image-model", str(ZIMAGE), "--image-timeout", "0"], capsys)
    assert "--image-max-queue must be >= 0" in refused(
        ["--image-model", str(ZIMAGE), "--image-max-queue", "-1"], capsys)
    err = refused(["--audio-model", "/m/whisper", "--image-model", str(ZIMAGE)], capsys)
    assert "audio-only server; it cannot also load --image-model" in err


def test_image_flags_reach_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    args = build_parser().parse_args(
        ["--image-model", "/m/z", "--image-max-queue", "0", "--image-timeout", "2.5"])
    config = config_from_args(args)
    assert ImageConfig.of(config) == ImageConfig(model="/m/z", max_queue=0, timeout_s=2.5)
    monkeypatch.setenv("MLXCEL_IMAGE_MODEL", "/env/z")
    monkeypatch.setenv("MLXCEL_IMAGE_TIMEOUT", "7")
    args = build_parser().parse_args([])
    assert (args.image_model, args.image_max_queue, args.image_timeout) == ("/env/z", 4, 7.0)


def test_the_configs_size_each_part() -> None:
    checkpoint = read_checkpoint(str(ZIMAGE))
    assert checkpoint.name == "zimage-tiny" and checkpoint.default_side == 64
    assert checkpoint.transformer["dim"] == 64 and checkpoint.transformer["patch_size"] == 2
    assert checkpoint.transformer["axes_lens"] == [1024, 32, 32]
    assert checkpoint.text_encoder["hidden_size"] == 64
    assert checkpoint.vae is not None and checkpoint.vae.block_out_channels == (32, 32, 32, 32)


def _copy_with(tmp_path: Path, part: str, **changes: object) -> Path:
    copy = tmp_path / "zimage"
    shutil.copytree(ZIMAGE, copy)
    config = copy / part / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), **changes}))
    return copy


def test_a_config_without_a_file_keeps_the_full_size(tmp_path: Path) -> None:
    copy = _copy_with(tmp_path, "vae")
    for part in ("transformer", "text_encoder", "vae"):
        (copy / part / "config.json").unlink()
    checkpoint = read_checkpoint(str(copy))
    assert (checkpoint.transformer, checkpoint.text_encoder, checkpoint.vae) == ({}, {}, None)
    assert checkpoint.default_side == 1024


@pytest.mark.parametrize(("changes", "words"), [
    ({"norm_num_groups": 16}, "norm_num_groups 16 is not supported"),
    ({"block_out_channels": [32, 48, 64, 64]}, "multiples of 32"),
    ({"block_out_channels": [32, 32, 32]}, "must be 4 positive"),
    ({"latent_channels": 4}, "latent_channels 4"),
])
def test_a_vae_config_the_model_cannot_build_is_refused(tmp_path: Path, changes: dict[str, object],
                                                        words: str) -> None:
    with pytest.raises(ImageCheckpointError, match=words):
        read_checkpoint(str(_copy_with(tmp_path, "vae", **changes)))


def test_sizes_that_disagree_with_the_weights_stop_the_startup(tmp_path: Path) -> None:
    pytest.importorskip("mflux")
    copy = _copy_with(tmp_path, "transformer", dim=96, axes_dims=[16, 16, 16])
    app = create_app(ServerConfig(model=TEXT_MODEL,
                                  sections={"images": ImageConfig(model=str(copy))}))
    with pytest.raises(ImageCheckpointError, match="has shape .64, 64., transformer/config"):
        with TestClient(app):
            pass


def test_the_server_process_exits_with_the_reason(tmp_path: Path) -> None:
    pytest.importorskip("mflux")
    copy = _copy_with(tmp_path, "transformer", dim=96, axes_dims=[16, 16, 16])
    run = subprocess.run(
        [sys.executable, "-m", "mlxcel", "--model", TEXT_MODEL, "--image-model", str(copy),
         "--port", str(free_port())], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1  # the app's startup failed, after the text engine stopped
    last = run.stderr.rstrip().splitlines()[-1]  # one line, no traceback (cli.py, startup.py)
    assert last.startswith("mlxcel-server: error: startup failed: ")
    assert "transformer weight all_x_embedder.2-1.weight has shape [64, 64], " \
        "transformer/config.json makes it [96, 64]" in last
    assert "Traceback" not in run.stderr


def test_a_sized_vae_has_the_layout_of_mflux_own() -> None:
    """At Z-Image's own sizes, the VAE built from a config has exactly the parameters (names and
    shapes) of mflux's full-size VAE, so a real checkpoint's weights land where mflux puts them."""
    pytest.importorskip("mflux")
    from mflux.models.z_image.model.z_image_vae.vae import VAE
    from mlx.utils import tree_flatten

    from mlxcel.families.images.checkpoint import VaeSizes
    from mlxcel.families.images.zimage import _sized_vae

    def shapes(module: Any) -> dict[str, tuple[int, ...]]:
        return {k: tuple(v.shape) for k, v in tree_flatten(module.parameters())}

    assert shapes(_sized_vae(VaeSizes((128, 256, 512, 512), 2))) == shapes(VAE())
