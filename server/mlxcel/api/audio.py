"""The OpenAI Audio routes (``/v1/audio/*`` and their aliases without ``/v1``).

Whisper runs in an audio-only server process (``--audio-model``): the router's lifespan loads
it at startup (a failed load stops the server) and keeps the single-worker ``AudioService`` on
``app.state.mlxcel_audio``. Such a server transcribes and translates multipart uploads of WAV
audio up to 25 MiB; Kokoro speech has no backend in this build. A server without an audio
model answers every audio route with 501 ``not_implemented`` naming the flag that enables it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response
from starlette.datastructures import FormData
from starlette.formparsers import MultiPartException, MultiPartParser

from ..audio.service import AudioService, audio_service, start_audio_service
from ..audio.wav import decode_wav, duration_seconds
from ..audio.whisper import Task
from ..errors import InvalidRequestError, NotImplementedRoute, RequestTooLarge
from ..protocol.audio import parse_audio_form, render_audio

log = logging.getLogger("mlxcel.audio")
AUDIO_FLAG = "--audio-model (or MLXCEL_AUDIO_MODEL)"
AUDIO_ROUTES = ("speech", "transcriptions", "translations")
MAX_UPLOAD_BYTES = 25 * 1024 * 1024
# Room for the form's other fields and boundaries around a file at the limit.
_FORM_OVERHEAD = 1024 * 1024


@asynccontextmanager
async def _audio_worker(app: FastAPI) -> AsyncIterator[None]:
    config = app.state.mlxcel.config
    if not config.audio_model:
        yield
        return
    service = start_audio_service(config.audio_model, max_queue=config.audio_max_queue,
                                  timeout_s=config.audio_timeout_s)
    log.info("Whisper model %s loaded (%s)", service.model.name,
             "multilingual" if service.model.multilingual else "English-only")
    app.state.mlxcel_audio = service
    try:
        yield
    finally:
        service.close()


router = APIRouter(lifespan=_audio_worker)


def audio_not_configured(route: str) -> NotImplementedRoute:
    return NotImplementedRoute(
        f"POST /v1/audio/{route} is not enabled: this server has no audio model. Whisper and "
        f"Kokoro checkpoints are served by an audio-only server started with {AUDIO_FLAG}; "
        "this server serves the text generation routes."
    )


def speech_not_served(service: AudioService) -> NotImplementedRoute:
    return NotImplementedRoute(
        "POST /v1/audio/speech is not enabled: this audio-only server loaded the Whisper "
        f"checkpoint {service.model.name} and serves POST /v1/audio/transcriptions and "
        "/v1/audio/translations (and their aliases without /v1); speech needs a Kokoro "
        f"checkpoint given to {AUDIO_FLAG}, and this build has no Kokoro backend."
    )


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
    service = audio_service(request)
    if service is None:
        raise audio_not_configured("transcriptions" if task == "transcribe" else "translations")
    form = await _form(request)
    try:
        audio = await parse_audio_form(form, task, multilingual=service.model.multilingual)
    finally:
        await form.close()
    if len(audio.audio) > MAX_UPLOAD_BYTES:
        raise _too_large()
    samples = await asyncio.to_thread(decode_wav, audio.audio)
    result = await service.run(lambda: service.model.run(
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


@router.post("/v1/audio/speech")
@router.post("/audio/speech")
async def audio_speech(request: Request) -> Response:
    service = audio_service(request)
    raise audio_not_configured("speech") if service is None else speech_not_served(service)
