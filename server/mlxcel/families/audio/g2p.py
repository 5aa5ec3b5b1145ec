"""Text to Kokoro phonemes (G2P), per language, and the phoneme chunks one forward pass takes.

Kokoro names a voice's language by its first letter (``af_heart``: American English). English
goes through misaki's lexicon G2P when spaCy and its ``en_core_web_sm`` model are installed
(misaki would otherwise try to download the model); otherwise through espeak-ng with misaki's
English phoneme mapping. Japanese and Mandarin use misaki's own G2P when its ``ja``/``zh``
extras are installed, else espeak-ng; the other languages use espeak-ng as misaki does. espeak-ng
itself comes from the ``espeakng-loader`` wheel: no system package is needed.

Every G2P runs on the audio worker thread (espeak-ng is not thread-safe), built on first use.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass

G2P = Callable[[str], str]
# Kokoro's phoneme context: 512 positions, two of them the boundary tokens.
MAX_CHUNK = 510
# Where a long phoneme string may break, best first: sentence ends, clause marks, spaces.
_BREAKS = ("!.?…", ":;,—", " ")


@dataclass(frozen=True)
class Language:
    name: str
    espeak: str  # the espeak-ng voice
    misaki: str | None = None  # misaki's own G2P module for the language, when installed


LANGUAGES = {
    "a": Language("American English", "en-us", "misaki.en"),
    "b": Language("British English", "en-gb", "misaki.en"),
    "e": Language("Spanish", "es"),
    "f": Language("French", "fr-fr"),
    "h": Language("Hindi", "hi"),
    "i": Language("Italian", "it"),
    "p": Language("Brazilian Portuguese", "pt-br"),
    "j": Language("Japanese", "ja", "misaki.ja"),
    "z": Language("Mandarin Chinese", "cmn", "misaki.zh"),
}
DEFAULT_LANGUAGE = "a"


def language_of(voice: str) -> str:
    """The Kokoro language code of a voice (its first letter); American English otherwise."""
    code = voice[:1].lower()
    return code if code in LANGUAGES else DEFAULT_LANGUAGE


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def english_lexicon_installed() -> bool:
    """Whether misaki's English G2P can run offline (spaCy and its small English model)."""
    return _installed("spacy") and _installed("en_core_web_sm")


def _espeak_english(british: bool) -> G2P:
    from misaki.espeak import EspeakFallback
    from misaki.token import MToken

    fallback = EspeakFallback(british=british)

    def g2p(text: str) -> str:
        phonemes, _ = fallback(MToken(text=text, tag="", whitespace=""))
        return phonemes or ""
    return g2p


def _espeak(language: str) -> G2P:
    from misaki.espeak import EspeakG2P

    espeak = EspeakG2P(language=language)
    return lambda text: str(espeak(text)[0] or "")


def _misaki_english(british: bool) -> G2P:
    from misaki import en
    from misaki.espeak import EspeakFallback

    lexicon = en.G2P(trf=False, british=british, fallback=EspeakFallback(british=british),
                     unk="")

    def g2p(text: str) -> str:
        phonemes = str(lexicon(text)[0])
        # Kokoro's American voices were trained with the flap written as T.
        return phonemes if british else phonemes.replace("ɾ", "T")
    return g2p


def _misaki_cjk(module: str) -> G2P | None:
    """misaki's Japanese or Mandarin G2P, or None without its extra (``misaki[ja]``/``[zh]``:
    the module ships with misaki, its dependencies do not)."""
    g2p_class = {"misaki.ja": "JAG2P", "misaki.zh": "ZHG2P"}[module]
    try:
        g2p = getattr(importlib.import_module(module), g2p_class)()
    except (ImportError, OSError):
        return None

    def run(text: str) -> str:
        result = g2p(text)
        return str(result[0] if isinstance(result, tuple) else result)
    return run


def missing_packages() -> list[str]:
    """The G2P packages (the ``audio`` extra) that are not installed."""
    modules = {"misaki": "misaki", "espeakng_loader": "espeakng-loader",
               "phonemizer": "phonemizer-fork"}
    return [package for module, package in modules.items() if not _installed(module)]


def make_g2p(code: str) -> G2P:
    language = LANGUAGES[code]
    if language.misaki == "misaki.en":
        british = code == "b"
        return _misaki_english(british) if english_lexicon_installed() else \
            _espeak_english(british)
    own = _misaki_cjk(language.misaki) if language.misaki else None
    return own or _espeak(language.espeak)


class Phonemizer:
    """One G2P per language, built on first use (call on the audio worker thread)."""

    def __init__(self) -> None:
        self._g2p: dict[str, G2P] = {}

    def __call__(self, text: str, voice: str) -> list[str]:
        """The phoneme chunks of ``text`` in ``voice``'s language: one per line, split further
        where a line is longer than one forward pass takes."""
        code = language_of(voice)
        if code not in self._g2p:
            self._g2p[code] = make_g2p(code)
        g2p = self._g2p[code]
        chunks: list[str] = []
        for line in re.split(r"\n+", text):
            if line.strip():
                chunks.extend(split_phonemes(" ".join(g2p(line.strip()).split())))
        return chunks


def split_phonemes(phonemes: str, limit: int = MAX_CHUNK) -> list[str]:
    """``phonemes`` in pieces of at most ``limit`` symbols, broken after the last sentence end,
    else clause mark, else space within the limit (a hard cut only with none of them)."""
    chunks = []
    rest = phonemes.strip()
    while len(rest) > limit:
        cut = _break_point(rest, limit)
        chunks.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        chunks.append(rest)
    return [c for c in chunks if c]


def _break_point(rest: str, limit: int) -> int:
    """The length of the next chunk: just past the best break mark (a space there is stripped
    off, so it may sit right at the limit), else the limit itself."""
    for marks in _BREAKS:
        span = limit + 1 if marks == " " else limit
        at = max(rest.rfind(mark, 0, span) for mark in marks)
        if at > 0:
            return at + 1
    return limit
