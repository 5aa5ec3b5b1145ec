"""Golden cases for the generative media backends, each recorded on its own fixture and replayed
by its family behind that family's probe (UNSUPPORTED on a server without the model).

``images``: image generation and edits on the Z-Image fixture (``--image-model``, beside the
default text model): a 64x64 image in two steps at a fixed seed, so the PNGs are the same bytes
on every run. ``audio`` (``speech_*``): text-to-speech on the generated Kokoro fixture (the
audio-only server); WAV and PCM bodies are recorded as a digest (``golden_binary``), the SSE
form as its events (the base64 audio inline).
"""

from __future__ import annotations

import base64
from typing import Any

from .checks.vision import solid_png
from .golden_cases import GoldenCase

IMAGE_FIXTURE = "zimage-tiny"
GENERATIONS = "/v1/images/generations"
EDITS = "/v1/images/edits"
_DRAW: dict[str, Any] = {"prompt": "A red fox in fresh snow", "size": "64x64",
                         "num_inference_steps": 2, "seed": 1234}
_SOURCE = "data:image/png;base64," + base64.b64encode(solid_png((200, 40, 40), 8)).decode()
# A form upload: both image routes take JSON only (415).
_FORM = {"fields": {"prompt": "A red fox in fresh snow"},
         "file": {"filename": "a.png", "content_type": "image/png", "text": "not a png"}}


def _image(name: str, route: str = GENERATIONS, /, **fields: Any) -> GoldenCase:
    """Positional ``route``, so a ``path`` field is a field."""
    return GoldenCase(name, "images", "POST", route, {**_DRAW, **fields}, fixture=IMAGE_FIXTURE)


IMAGE_CASES: tuple[GoldenCase, ...] = (
    _image("generations"),
    _image("generations_n2", n=2),
    _image("edits", EDITS, images=[{"image_url": _SOURCE}]),
    _image("error_response_format_url", response_format="url"),
    _image("error_output_format_jpeg", output_format="jpeg"),
    _image("error_path_field", path="/tmp/mlxcel-conformance.png"),
    _image("error_size", size="65x64"),
    GoldenCase("error_not_json", "images", "POST", GENERATIONS, fixture=IMAGE_FIXTURE,
               multipart=_FORM),
)

# Generated on first use (``fixtures/build_kokoro_fixture.py``): too big to commit.
SPEECH_FIXTURE = "kokoro-tiny"
SPEECH_VOICE = "af_heart"  # the fixture's American English voice, Kokoro's usual one
SPEECH = "/v1/audio/speech"
_SAY = {"input": "Hi.", "voice": SPEECH_VOICE, "response_format": "wav"}


def _speech(name: str, **fields: Any) -> GoldenCase:
    return GoldenCase(f"speech_{name}", "audio", "POST", SPEECH, {**_SAY, **fields},
                      stream=fields.get("stream_format") == "sse", fixture=SPEECH_FIXTURE)


SPEECH_CASES: tuple[GoldenCase, ...] = (
    _speech("wav"),
    _speech("pcm", response_format="pcm"),
    _speech("sse", stream_format="sse"),
    _speech("error_empty_input", input=""),
    _speech("error_unknown_voice", voice="no-such-voice"),
    _speech("error_speed", speed=4.5),
    _speech("error_aac", response_format="aac"),
    GoldenCase("speech_error_not_json", "audio", "POST", SPEECH, fixture=SPEECH_FIXTURE,
               multipart={"fields": {"input": "Hi.", "voice": SPEECH_VOICE},
                          "file": {"filename": "hi.txt", "content_type": "text/plain",
                                   "text": "Hi."}}),
)
