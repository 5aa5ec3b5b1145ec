"""OpenAI Audio: transcriptions and translations (Whisper), speech (Kokoro), and the Realtime
route's 501. With ``--audio-model`` the server is audio-only (``audio_only.py``): the audio routes
are what it serves; Realtime needs a VoiceChat checkpoint."""

from __future__ import annotations

from .. import Family
from . import realtime, routes, speech
from .audio_config import SECTION, AudioConfig
from .audio_only import audio_only_server

FAMILY = Family(
    routers=(routes.router, speech.router, realtime.router),
    text_model_free=frozenset({
        "/v1/audio/transcriptions", "/audio/transcriptions",
        "/v1/audio/translations", "/audio/translations",
        "/v1/audio/speech", "/audio/speech",  # its own 501 names what is missing
    }),
    needs={"/v1/realtime": "GET /v1/realtime needs a Nemotron VoiceChat checkpoint."},
    sole_model=audio_only_server,
    settings={SECTION: AudioConfig},
)
