"""Flags for backends this build lacks are refused at startup, never silently accepted."""

from __future__ import annotations

import pytest

from mlxcel.cli import build_parser, config_from_args, main


@pytest.mark.parametrize("flag", ["--image-model", "--audio-model"])
def test_unavailable_backend_flag_is_refused(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([flag, "/nonexistent"])
    assert exc.value.code == 2
    assert "no backend" in capsys.readouterr().err


def test_embedding_flags_reach_the_config() -> None:
    args = build_parser().parse_args(
        ["--embedding-model", "/m/e", "--rerank-model", "/m/r", "--pooling", "cls"]
    )
    config = config_from_args(args)
    assert (config.embedding_model, config.rerank_model, config.pooling) == ("/m/e", "/m/r", "cls")
