"""The OpenAI Audio routes (``/v1/audio/*`` and their aliases without ``/v1``).

Whisper and Kokoro run in an audio-only server process (``--audio-model``): the router's
lifespan loads the checkpoint at startup (a failed load stops the server) and keeps the
single-worker ``AudioService`` in ``services.parts["audio"]``. A Whisper server transcribes and
translates multipart uploads of WAV audio up to 25 MiB (here); a Kokoro server speaks
(``speech.py``). Each answers the other kind's routes with 501 ``not_implemented`` naming the
checkpoint they need, and a server without an audio model answers every audio route with
501 naming the flag that enables it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.datastructures import FormData
from starlette.formparsers import MultiPartException, MultiPartParser

from ...errors import InvalidRequestError, NotImplementedRoute, RequestTooLarge
from ...single_worker import worker_lifespan
from .audio_service import PART, AudioService, audio_service, start_audio_service
from .checkpoints import KINDS, AudioModel, kind_serving
from .transcription_form import parse_audio_form, render_audio
from .wav import decode_wav, duration_seconds
from .whisper import Task, WhisperModel

log = logging.getLogger("mlxcel.audio")
AUDIO_FLAG = "--audio-model (or MLXCEL_AUDIO_MODEL)"
MAX_UPLOAD_BYTES = 25 * 1024 * 1024
# Room for the form's other fields and boundaries around a file at the limit.
_FORM_OVERHEAD = 1024 * 1024
M = TypeVar("M", bound=AudioModel)


def _loaded(model: AudioModel) -> None:
    log.info("%s model %s loaded (%s)", KINDS[model.kind].label, model.name,
             ("multilingual" if model.multilingual else "English-only")
             if isinstance(model, WhisperModel) else "voices: " + ", ".join(model.voices))


router = APIRouter(lifespan=worker_lifespan(PART, start_audio_service, _loaded))


def audio_not_configured(route: str) -> NotImplementedRoute:
    return NotImplementedRoute(
        f"POST /v1/audio/{route} is not enabled: this server has no audio model. Whisper and "
        f"Kokoro checkpoints are served by an audio-only server started with {AUDIO_FLAG}; "
        "this server serves the text generation routes."
    )


def route_not_served(model: AudioModel, route: str) -> NotImplementedRoute:
    """The 501 of an audio-only server asked for a route its kind of checkpoint does not serve."""
    loaded, needed = KINDS[model.kind], kind_serving(route)
    return NotImplementedRoute(
        f"POST /v1/audio/{route} is not enabled: this audio-only server loaded the "
        f"{loaded.label} checkpoint {model.name} and serves {loaded.served} (and the aliases "
        f"without /v1); {route} needs a {needed.label} checkpoint given to {AUDIO_FLAG}."
    )


def served_model(request: Request, route: str, model_type: type[M]) -> tuple[AudioService, M]:
    """The audio worker and its model, where it serves ``route``; else the 501 that says why."""
    service = audio_service(request)
    if service is None:
        raise audio_not_configured(route)
    model = service.model
    if not isinstance(model, model_type):
        raise route_not_served(model, route)
    return service, model


async def _capped_body(request: Request) -> bytes:
    """The raw body, refused with 413 once it cannot hold a file within the limit."""
    cap = MAX_UPLOAD_BYTES + _FORM_OVERHEAD
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > cap:
        raise _too_large()
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            raise _too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large() -> RequestTooLarge:
    return RequestTooLarge(f"The audio file exceeds the {MAX_UPLOAD_BYTES // (1024 * 1024)} MiB "
                           "upload limit.", param="file")


async def _form(request: Request) -> FormData:
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise InvalidRequestError(
            "The audio routes take multipart/form-data with the audio in a 'file' field, "
            f"not {content_type or 'a body without Content-Type'}.")
    body = await _capped_body(request)

    async def stream() -> AsyncGenerator[bytes, None]:
        yield body

    try:
        return await MultiPartParser(request.headers, stream(), max_files=1).parse()
    except MultiPartException as exc:
        raise InvalidRequestError(f"The multipart body could not be parsed: {exc.message}")\
            from None


async def _transcribe(request: Request, task: Task) -> Response:
    route = "transcriptions" if task == "transcribe" else "translations"
    service, whisper = served_model(request, route, WhisperModel)
    form = await _form(request)
    try:
        audio = await parse_audio_form(form, task, multilingual=whisper.multilingual)
    finally:
        await form.close()
    if len(audio.audio) > MAX_UPLOAD_BYTES:
        raise _too_large()
    samples = await asyncio.to_thread(decode_wav, audio.audio)
    result = await service.run(lambda: whisper.run(
        samples, task=audio.task, language=audio.language, prompt=audio.prompt,
        temperature=audio.temperature, word_timestamps=audio.word_timestamps))
    return render_audio(audio, result, duration_seconds(samples))


@router.post("/v1/audio/transcriptions")
@router.post("/audio/transcriptions")
async def audio_transcriptions(request: Request) -> Response:
    return await _transcribe(request, "transcribe")


@router.post("/v1/audio/translations")
@router.post("/audio/translations")
async def audio_translations(request: Request) -> Response:
    return await _transcribe(request, "translate")
