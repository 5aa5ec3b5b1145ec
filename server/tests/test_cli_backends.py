"""Flags for backends this build lacks are refused at startup, never silently accepted."""

from __future__ import annotations

import pytest

from mlxcel.cli import build_parser, config_from_args, main
from mlxcel.families.audio.audio_config import AudioConfig
from mlxcel.families.embeddings.encoder_config import EncoderConfig


@pytest.mark.parametrize("other", ["--model", "--embedding-model", "--rerank-model"])
def test_audio_model_starts_an_audio_only_server(other: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--audio-model", "/m/whisper", other, "/m/x"])
    assert exc.value.code == 2
    assert f"audio-only server; it cannot also load {other}" in capsys.readouterr().err


def test_audio_flags_reach_the_config() -> None:
    args = build_parser().parse_args(
        ["--audio-model", "/m/w", "--audio-max-queue", "0", "--audio-timeout", "2.5"])
    config = config_from_args(args)
    assert AudioConfig.of(config) == AudioConfig(model="/m/w", max_queue=0, timeout_s=2.5)


def test_embedding_flags_reach_the_config() -> None:
    args = build_parser().parse_args(
        ["--embedding-model", "/m/e", "--rerank-model", "/m/r", "--pooling", "cls"]
    )
    config = config_from_args(args)
    assert EncoderConfig.of(config) == EncoderConfig(embedding_model="/m/e", rerank_model="/m/r",
                                                     pooling="cls")
