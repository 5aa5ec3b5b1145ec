"""The OpenAI Audio routes (``/v1/audio/*`` and their aliases without ``/v1``).

This build has no audio backend: Whisper (transcription, translation) and Kokoro (speech) are
not loaded, so every route answers 501 ``not_implemented`` and names the flag that would enable
them, as the API reference prescribes for a route without its model.
"""

from __future__ import annotations

from fastapi import APIRouter

from ..errors import NotImplementedRoute

router = APIRouter()

AUDIO_FLAG = "--audio-model (or MLXCEL_AUDIO_MODEL)"
AUDIO_ROUTES = ("speech", "transcriptions", "translations")


def audio_not_configured(route: str) -> NotImplementedRoute:
    return NotImplementedRoute(
        f"POST /v1/audio/{route} is not enabled: this server has no audio model. Whisper and "
        f"Kokoro checkpoints are served by an audio-only server started with {AUDIO_FLAG}; "
        "this server serves the text generation routes."
    )


def _make(route: str) -> None:
    async def handler() -> None:
        raise audio_not_configured(route)

    handler.__name__ = f"audio_{route}"
    router.post(f"/v1/audio/{route}")(handler)
    router.post(f"/audio/{route}")(handler)


for _route in AUDIO_ROUTES:
    _make(_route)
