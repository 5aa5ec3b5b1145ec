"""OpenAI Audio: transcriptions and translations (Whisper), speech (Kokoro), and the Realtime
route's 501. The audio routes are what an audio-only server serves; Realtime needs a VoiceChat
checkpoint."""

from __future__ import annotations

from .. import Family
from . import realtime, routes, speech

FAMILY = Family(
    routers=(routes.router, speech.router, realtime.router),
    text_model_free=frozenset({
        "/v1/audio/transcriptions", "/audio/transcriptions",
        "/v1/audio/translations", "/audio/translations",
        "/v1/audio/speech", "/audio/speech",  # its own 501 names what is missing
    }),
    needs={"/v1/realtime": "GET /v1/realtime needs a Nemotron VoiceChat checkpoint."},
)
