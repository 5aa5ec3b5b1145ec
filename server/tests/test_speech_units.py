"""The pieces of Kokoro speech without a server: G2P per voice language, phoneme chunking,
audio encoding, and how ``--audio-model`` checkpoints are recognised or refused."""

from __future__ import annotations

import io
import json
import shutil
import wave
from pathlib import Path

import numpy as np
import pytest

from mlxcel.cli import main
from mlxcel.families.audio.checkpoints import checkpoint_problem, kind_of, load_audio_model
from mlxcel.families.audio.encoding import FORMATS, pcm16, supported_formats
from mlxcel.families.audio.g2p import (
    LANGUAGES,
    MAX_CHUNK,
    Phonemizer,
    english_lexicon_installed,
    language_of,
    split_phonemes,
)

WHISPER = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "whisper-tiny-random"


@pytest.mark.parametrize(("voice", "code"), [
    ("af_heart", "a"), ("bf_emma", "b"), ("ff_siwis", "f"), ("jf_alpha", "j"),
    ("zm_yunxi", "z"), ("custom", "a"), ("", "a"),
])
def test_a_voice_names_its_language(voice: str, code: str) -> None:
    assert language_of(voice) == code


def test_english_through_espeak_ng() -> None:
    pytest.importorskip("misaki")
    if english_lexicon_installed():
        pytest.skip("spaCy's English model is installed: English uses misaki's lexicon")
    phonemize = Phonemizer()
    assert phonemize("Hello world.", "af_heart") == ["həlˈO wˈɜɹld."]
    assert phonemize("Hello world.", "bf_emma") == ["həlˈQ wˈɜːld."]
    assert phonemize("One.\n\nTwo!", "af_heart") == ["wˌʌn.", "tˈu!"]


def test_other_languages_through_espeak_ng() -> None:
    pytest.importorskip("misaki")
    phonemize = Phonemizer()
    assert phonemize("Bonjour le monde.", "ff_siwis")[0].startswith("bɔ̃ʒˈuʁ")
    assert LANGUAGES["f"].misaki is None and LANGUAGES["j"].misaki == "misaki.ja"
    # Without misaki[ja] (pyopenjtalk), Japanese falls back to espeak-ng's kana reading.
    assert phonemize("こんにちは", "jf_alpha")[0].startswith("k")
    assert phonemize("  \n ", "af_heart") == []


def test_long_text_is_chunked_at_sentence_ends() -> None:
    pytest.importorskip("misaki")
    chunks = Phonemizer()("The quick brown fox jumps over the lazy dog. " * 40, "af_heart")
    assert len(chunks) > 1 and all(0 < len(c) <= MAX_CHUNK for c in chunks)
    assert all(c.endswith(".") for c in chunks)


@pytest.mark.parametrize(("phonemes", "limit", "chunks"), [
    ("ab cd. ef gh", 6, ["ab cd.", "ef gh"]),
    ("ab, cd ef", 5, ["ab,", "cd ef"]),
    ("ab cd ef", 5, ["ab cd", "ef"]),
    ("abcdefghij", 4, ["abcd", "efgh", "ij"]),
    ("short", 510, ["short"]),
    ("", 10, []),
])
def test_split_phonemes(phonemes: str, limit: int, chunks: list[str]) -> None:
    assert split_phonemes(phonemes, limit) == chunks


def test_wav_and_pcm_encoding() -> None:
    samples = np.array([0.0, 0.5, -0.5, 1.0, -1.0, 2.0], dtype=np.float32)
    assert pcm16(samples) == np.array([0, 16384, -16384, 32767, -32767, 32767], "<i2").tobytes()
    with wave.open(io.BytesIO(FORMATS["wav"].encode(samples, 24_000))) as audio:
        assert (audio.getnchannels(), audio.getsampwidth(), audio.getframerate()) == (1, 2, 24_000)
        assert audio.readframes(6) == pcm16(samples)
    assert FORMATS["pcm"].encode(samples, 24_000) == pcm16(samples)
    assert {"wav", "pcm"} <= set(supported_formats()) and "aac" not in supported_formats()


def _kokoro_copy(kokoro_checkpoint: Path, tmp_path: Path, voices: bool) -> Path:
    """A checkpoint directory holding the fixture's config (and voices), weights linked."""
    out = tmp_path / "kokoro"
    out.mkdir()
    shutil.copy(kokoro_checkpoint / "config.json", out / "config.json")
    (out / "model.safetensors").symlink_to(kokoro_checkpoint / "model.safetensors")
    if voices:
        shutil.copytree(kokoro_checkpoint / "voices", out / "voices")
    return out


def test_checkpoint_kinds(kokoro_checkpoint: Path, tmp_path: Path) -> None:
    assert kind_of(kokoro_checkpoint) == "kokoro" and kind_of(WHISPER) == "whisper"
    assert checkpoint_problem(str(kokoro_checkpoint)) is None
    assert checkpoint_problem(str(WHISPER)) is None
    assert checkpoint_problem("hexgrad/Kokoro-82M") is None  # a hub id is checked when fetched
    assert "does not exist" in str(checkpoint_problem(str(tmp_path / "missing")))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert "neither a Whisper" in str(checkpoint_problem(str(tmp_path)))
    (tmp_path / "config.json").write_text("{not json")
    assert "neither a Whisper" in str(checkpoint_problem(str(tmp_path)))
    voiceless = _kokoro_copy(kokoro_checkpoint, tmp_path, voices=False)
    assert "has no voices" in str(checkpoint_problem(str(voiceless)))


@pytest.mark.parametrize(("name", "words"), [
    ("missing", "does not exist"), ("", "is neither a Whisper checkpoint"),
])
def test_a_bad_checkpoint_stops_the_cli(name: str, words: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / name if name else tmp_path
    with pytest.raises(SystemExit) as exc:
        main(["--audio-model", str(path)])
    assert exc.value.code == 2
    assert f"--audio-model: {path} {words}" in capsys.readouterr().err


def test_a_bad_voice_pack_fails_the_load(kokoro_checkpoint: Path, tmp_path: Path) -> None:
    checkpoint = _kokoro_copy(kokoro_checkpoint, tmp_path, voices=True)
    (checkpoint / "voices" / "broken.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="broken.safetensors could not be read"):
        load_audio_model(str(checkpoint))
