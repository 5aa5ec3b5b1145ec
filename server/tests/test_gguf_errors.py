"""A GGUF file the server cannot serve fails at startup with one line naming what is unsupported:
``UnsupportedGGUF`` from the loader, a non-zero exit and no traceback from the commands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

from mlxcel.engine.gguf import UnsupportedGGUF, check_gguf, load_gguf

from .synthetic_gguf import LLAMA, write_fixture_gguf


def _write(path: Path, arch: str, tensors: dict[str, np.ndarray]) -> Path:
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(1)
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    for step in (writer.write_header_to_file, writer.write_kv_data_to_file,
                 writer.write_tensors_to_file, writer.close):
        step()
    return path


def _reason(path: Path) -> str:
    with pytest.raises(UnsupportedGGUF) as caught:
        check_gguf(str(path))
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    return caught.value.reason


def test_an_architecture_not_handled_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path / "phi.gguf", "phi3", {"token_embd.weight": np.zeros((8, 32), "f4")})
    assert _reason(path) == ("architecture 'phi3' is not supported (supported: gemma, llama, "
                             "qwen2, qwen3)")


def test_not_a_gguf_truncated_and_missing(tmp_path: Path) -> None:
    (tmp_path / "text.gguf").write_text("hello")
    assert _reason(tmp_path / "text.gguf") == "not a GGUF file (it does not start with 'GGUF')"
    assert _reason(tmp_path / "absent.gguf") == "no such file"
    write_fixture_gguf(LLAMA, tmp_path / "whole.gguf")
    data = (tmp_path / "whole.gguf").read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[: len(data) // 2])
    assert _reason(tmp_path / "cut.gguf").startswith("unreadable GGUF file (truncated or damaged")


def test_a_tensor_the_model_has_no_place_for(tmp_path: Path) -> None:
    write_fixture_gguf(LLAMA, tmp_path / "m.gguf",
                       extra={"blk.0.mystery.weight": np.zeros((4, 32), np.float32)})
    assert _reason(tmp_path / "m.gguf") == ("tensor blk.0.mystery.weight has no place in "
                                            "mlx-lm's llama model")
    with pytest.raises(UnsupportedGGUF, match="blk.0.mystery.weight has no place"):
        load_gguf(str(tmp_path / "m.gguf"))


def test_a_missing_tensor_is_named(tmp_path: Path) -> None:
    write_fixture_gguf(LLAMA, tmp_path / "m.gguf", drop=("model.norm.weight",
                                                         "model.layers.1.mlp.up_proj.weight"))
    assert _reason(tmp_path / "m.gguf") == ("mlx-lm's llama model needs tensors the file does "
                                            "not hold: blk.1.ffn_up, output_norm")
    with pytest.raises(UnsupportedGGUF, match=r"tensors do not fit .*model\.norm\.weight"):
        load_gguf(str(tmp_path / "m.gguf"))


@pytest.mark.parametrize("command", [["-m", "mlxcel", "--model"], ["-m", "mlxcel.convert_gguf"]])
def test_commands_print_one_line_and_exit_non_zero(tmp_path: Path, command: list[str]) -> None:
    path = _write(tmp_path / "phi.gguf", "phi3", {"token_embd.weight": np.zeros((8, 32), "f4")})
    args = [sys.executable, *command, str(path)]
    if "mlxcel.convert_gguf" in command:
        args.append(str(tmp_path / "out"))
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    # mlxcel-server's startup errors exit 2 (mlxcel/startup.py); mlxcel-convert's exit 1
    assert done.returncode == (1 if "mlxcel.convert_gguf" in command else 2)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "architecture 'phi3' is not supported" in lines[0]
