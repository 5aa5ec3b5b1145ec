"""``POST /v1/audio/speech`` (and ``/audio/speech``): OpenAI's text-to-speech on a Kokoro
audio-only server.

The body is JSON (another Content-Type is 415). It is validated before the worker is asked, so
a bad request never waits in the queue; G2P and synthesis then run on the audio worker (503
when its queue is full, 504 past ``--audio-timeout``), and the audio is encoded off the event
loop. Other servers answer 501 (``routes.py`` words it).
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...api.offload import off_loop
from ...protocol.body import require_json_media_type
from .kokoro import KokoroModel
from .routes import served_model
from .speech_models import parse_speech, render_speech

router = APIRouter()


@router.post("/v1/audio/speech")
@router.post("/audio/speech")
async def audio_speech(request: Request) -> Response:
    service, kokoro = served_model(request, "speech", KokoroModel)
    require_json_media_type(request.headers.get("content-type"), "POST /v1/audio/speech")
    speech_request = await off_loop(parse_speech, await request.body(), kokoro.voices)
    speech = await service.run(lambda: kokoro.synthesize(
        speech_request.text, speech_request.voice, speech_request.speed))
    return await asyncio.to_thread(render_speech, speech_request, speech)
