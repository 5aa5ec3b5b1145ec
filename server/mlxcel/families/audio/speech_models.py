"""The OpenAI speech request (``POST /v1/audio/speech``, a JSON body) and its answers.

Fields (OpenAI's names): ``model`` (required; any value: the server has one model), ``input``
(required, 1 to 4096 characters), ``voice`` (required: one of the checkpoint's voices, by name
or as ``{"id": name}``), ``response_format`` (``mp3``, the default, ``opus``, ``flac``, ``wav``,
``pcm``; ``aac`` is refused), ``speed`` (0.25 to 4.0, default 1), ``instructions`` (accepted and
ignored: Kokoro takes no style prompt) and ``stream_format`` (``audio``, the default, or
``sse``). The answer is the audio itself; with ``sse`` the same bytes arrive base64-encoded in
``speech.audio.delta`` events, then ``speech.audio.done`` carries the usage (phonemes read as
input tokens, duration frames as output tokens).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass

from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from ...errors import InvalidRequestError
from ...protocol.body import parse_body
from ...sse import data_event, sse_response
from .encoding import FORMATS, UNSUPPORTED, supported_formats
from .kokoro import Speech

MAX_INPUT_CHARS = 4096
MIN_SPEED, MAX_SPEED = 0.25, 4.0
STREAM_FORMATS = ("audio", "sse")
DELTA_BYTES = 32 * 1024  # audio bytes per speech.audio.delta event


class VoiceId(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    id: str


class SpeechBody(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    model: str
    input: str
    voice: str | VoiceId
    response_format: str | None = None
    speed: float = 1.0
    instructions: str | None = None
    stream_format: str = "audio"


@dataclass(frozen=True)
class SpeechRequest:
    text: str
    voice: str
    response_format: str
    speed: float
    sse: bool


def _response_format(value: str | None) -> str:
    supported = supported_formats()
    if value is None:
        return "mp3" if "mp3" in supported else "wav"
    if value not in supported:
        why = " (this server has no encoder for it)" if value in (*FORMATS, *UNSUPPORTED) else ""
        raise InvalidRequestError(
            f"response_format {value!r} is not supported{why}; use one of "
            f"{', '.join(supported)}.", param="response_format")
    return value


def parse_speech(raw: bytes, voices: Collection[str]) -> SpeechRequest:
    body = parse_body(SpeechBody, raw)
    if not body.input.strip():
        raise InvalidRequestError("'input' must not be empty.", param="input")
    if len(body.input) > MAX_INPUT_CHARS:
        raise InvalidRequestError(
            f"'input' is {len(body.input)} characters long; the maximum is {MAX_INPUT_CHARS}.",
            param="input")
    voice = body.voice if isinstance(body.voice, str) else body.voice.id
    if voice not in voices:
        raise InvalidRequestError(
            f"Unknown voice {voice!r}: this server's voices are {', '.join(sorted(voices))}.",
            param="voice")
    if not MIN_SPEED <= body.speed <= MAX_SPEED:
        raise InvalidRequestError(f"'speed' must be between {MIN_SPEED} and {MAX_SPEED}.",
                                  param="speed")
    if body.stream_format not in STREAM_FORMATS:
        raise InvalidRequestError(
            f"stream_format {body.stream_format!r} is not supported; use one of "
            f"{', '.join(STREAM_FORMATS)}.", param="stream_format")
    return SpeechRequest(text=body.input, voice=voice,
                         response_format=_response_format(body.response_format),
                         speed=body.speed, sse=body.stream_format == "sse")


def render_speech(request: SpeechRequest, speech: Speech) -> Response:
    fmt = FORMATS[request.response_format]
    audio = fmt.encode(speech.samples, speech.sample_rate)
    if not request.sse:
        return Response(audio, media_type=fmt.media_type)
    return sse_response(_events(audio, speech))


async def _events(audio: bytes, speech: Speech) -> AsyncIterator[str]:
    for start in range(0, len(audio), DELTA_BYTES):
        chunk = base64.b64encode(audio[start:start + DELTA_BYTES]).decode("ascii")
        yield data_event({"type": "speech.audio.delta", "audio": chunk})
    usage = {"input_tokens": speech.phonemes, "output_tokens": speech.frames,
             "total_tokens": speech.phonemes + speech.frames}
    yield data_event({"type": "speech.audio.done", "usage": usage})
