"""The OpenAI Audio request (multipart form) and its answers in each ``response_format``.

Fields read from the form (OpenAI's names): ``file`` (required), ``model`` (any value: the
server has one model), ``language`` (transcriptions only), ``prompt``, ``response_format``
(``json``, ``text``, ``srt``, ``verbose_json``, ``vtt``), ``temperature`` (0 to 1; 0 lets
Whisper raise it on failed windows), ``timestamp_granularities[]`` (``segment``, ``word``;
``verbose_json`` only). ``stream`` is ignored, as OpenAI ignores it for Whisper models.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.datastructures import FormData, UploadFile

from ...errors import InvalidRequestError
from .whisper import Task

RESPONSE_FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
GRANULARITIES = ("segment", "word")


@dataclass(frozen=True)
class AudioRequest:
    task: Task
    audio: bytes
    language: str | None
    prompt: str | None
    response_format: str
    temperature: float
    granularities: tuple[str, ...]

    @property
    def word_timestamps(self) -> bool:
        return "word" in self.granularities


def _text_field(form: FormData, name: str) -> str | None:
    value = form.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequestError(f"'{name}' must be a text field, not a file.", param=name)
    return value


def _language_code(value: str, multilingual: bool) -> str:
    from mlx_whisper.tokenizer import LANGUAGES, TO_LANGUAGE_CODE

    code = value.strip().lower()
    code = TO_LANGUAGE_CODE.get(code, code)
    if code not in LANGUAGES:
        raise InvalidRequestError(
            f"Unsupported language {value!r}: use an ISO-639-1 code such as 'en' or 'fr'.",
            param="language")
    if not multilingual and code != "en":
        raise InvalidRequestError(
            f"The loaded Whisper model is English-only; language {value!r} is not supported.",
            param="language")
    return code


def _temperature(raw: str | None) -> float:
    if raw is None or raw == "":
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        raise InvalidRequestError(f"'temperature' must be a number, not {raw!r}.",
                                  param="temperature") from None
    if not 0.0 <= value <= 1.0:
        raise InvalidRequestError("'temperature' must be between 0 and 1.", param="temperature")
    return value


def _granularities(form: FormData, response_format: str) -> tuple[str, ...]:
    values = [*form.getlist("timestamp_granularities[]"),
              *form.getlist("timestamp_granularities")]
    chosen: list[str] = []
    for value in values:
        if not isinstance(value, str) or value not in GRANULARITIES:
            raise InvalidRequestError(
                f"timestamp_granularities accepts {', '.join(GRANULARITIES)}; got {value!r}.",
                param="timestamp_granularities")
        chosen.append(value)
    if chosen and response_format != "verbose_json":
        raise InvalidRequestError(
            "timestamp_granularities requires response_format 'verbose_json'.",
            param="timestamp_granularities")
    return tuple(dict.fromkeys(chosen))


async def parse_audio_form(form: FormData, task: Task, *, multilingual: bool) -> AudioRequest:
    upload = form.get("file")
    if upload is None:
        raise InvalidRequestError("'file' is required: upload the audio as a multipart file "
                                  "field named 'file'.", param="file")
    if not isinstance(upload, UploadFile):
        raise InvalidRequestError("'file' must be a file upload, not a text field.",
                                  param="file")
    response_format = _text_field(form, "response_format") or "json"
    if response_format not in RESPONSE_FORMATS:
        raise InvalidRequestError(
            f"response_format {response_format!r} is not supported; use one of "
            f"{', '.join(RESPONSE_FORMATS)}.", param="response_format")
    language = _text_field(form, "language")
    if task == "translate" and language is not None:
        raise InvalidRequestError("Translations take no 'language': the source language is "
                                  "detected and the output is English.", param="language")
    if task == "translate" and not multilingual:
        raise InvalidRequestError("The loaded Whisper model is English-only and cannot "
                                  "translate.", param="model")
    return AudioRequest(
        task=task,
        audio=await upload.read(),
        language=_language_code(language, multilingual) if language else None,
        prompt=_text_field(form, "prompt") or None,
        response_format=response_format,
        temperature=_temperature(_text_field(form, "temperature")),
        granularities=_granularities(form, response_format),
    )


def _timestamp(seconds: float, separator: str) -> str:
    ms = max(0, round(seconds * 1000))
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    secs, ms = divmod(ms, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{ms:03d}"


def _subtitles(segments: list[dict[str, Any]], vtt: bool) -> str:
    blocks = ["WEBVTT\n"] if vtt else []
    for index, seg in enumerate(segments, 1):
        sep = "." if vtt else ","
        span = f"{_timestamp(seg['start'], sep)} --> {_timestamp(seg['end'], sep)}"
        text = str(seg["text"]).strip()
        blocks.append(f"{span}\n{text}\n" if vtt else f"{index}\n{span}\n{text}\n")
    return "\n".join(blocks)


def _segment(seg: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": int(seg["id"]), "seek": int(seg["seek"]),
        "start": float(seg["start"]), "end": float(seg["end"]), "text": str(seg["text"]),
        "tokens": [int(t) for t in seg["tokens"]], "temperature": float(seg["temperature"]),
        "avg_logprob": float(seg["avg_logprob"]),
        "compression_ratio": float(seg["compression_ratio"]),
        "no_speech_prob": float(seg["no_speech_prob"]),
    }


def render_audio(request: AudioRequest, result: dict[str, Any], duration: float) -> Response:
    """``result`` is mlx-whisper's ``transcribe`` dictionary (text, segments, language)."""
    from mlx_whisper.tokenizer import LANGUAGES

    text = str(result["text"]).strip()
    segments = list(result["segments"])
    usage = {"type": "duration", "seconds": math.ceil(duration)}
    if request.response_format == "text":
        return PlainTextResponse(text + "\n")
    if request.response_format in ("srt", "vtt"):
        vtt = request.response_format == "vtt"
        return PlainTextResponse(_subtitles(segments, vtt),
                                 media_type="text/vtt" if vtt else "application/x-subrip")
    if request.response_format == "json":
        return JSONResponse({"text": text, "usage": usage})
    language = "english" if request.task == "translate" else LANGUAGES.get(
        str(result["language"]), str(result["language"]))
    body: dict[str, Any] = {
        "task": request.task, "language": language, "duration": round(duration, 3),
        "text": text, "segments": [_segment(s) for s in segments], "usage": usage,
    }
    if request.word_timestamps:
        body["words"] = [{"word": str(w["word"]), "start": float(w["start"]),
                          "end": float(w["end"])}
                         for s in segments for w in s.get("words", [])]
    if "segment" not in request.granularities and request.granularities:
        body.pop("segments")
    return JSONResponse(body)
