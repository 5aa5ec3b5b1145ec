"""Multimodal chat prompts: the family-neutral media parts every adapter produces, and how
they become a vision-language prompt (token ids plus pixels).

Adapters put media into a message's ``content`` list as neutral parts, next to
``{"type": "text", "text": ...}``:

* ``{"type": "image", "url": <data URI | http(s) URL | file:// URL | absolute path>,
  "param": <where the request had it>}`` (chat ``image_url``, Responses ``input_image``,
  Anthropic ``image`` blocks with a base64 or url source);
* ``{"type": "video", "url": ..., "fps": ..., "param": ...}`` (chat ``video_url``) and
  ``{"type": "audio", "param": ...}``.

A text-only model answers 400 naming the part. On a VLM each image is read under the media
policy (media/sources.py), decoded under its bounds (media/decode.py), the template renders the
content list (an ``image`` part becomes the model's placeholder) and the model's processor
expands the placeholders and makes the pixel arrays. A video goes to a model with a native
video placeholder (Qwen2-VL's ``<|video_pad|>``) as sampled frames (media/video.py); images and
a video in one request are a 400 there. Any other VLM gets the frames-as-images fallback: the
same frames, sampled under the same rules, replace the video part as ordered ``image`` parts
before the template renders, and count against the per-request image limit (413 past it).
Audio has no path in this build: 400 (a video and an audio part together: the reference's
message).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import InvalidRequestError, RequestTooLarge
from ..generation import VisionInputs
from ..generation.model_view import ModelView
from ..media.decode import decode_image
from ..media.policy import MediaPolicy
from ..media.sources import read_media
from ..media.video import sample_frame_images, sample_frames

MEDIA_TYPES = ("image", "video", "audio")
COMBINED_VIDEO_AUDIO = "Combined video and audio inputs are not supported"


def image_part(url: Any, param: str) -> dict[str, Any]:
    if not isinstance(url, str) or not url:
        raise InvalidRequestError(f"{param}: the image URL must be a non-empty string.",
                                  param=param)
    return {"type": "image", "url": url, "param": param}


def media_parts(messages: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and part.get("type") in MEDIA_TYPES:
                    yield part


def _refuse_text_only(part: dict[str, Any]) -> InvalidRequestError:
    what = {"image": "an image", "video": "a video", "audio": "an audio"}[part["type"]]
    return InvalidRequestError(
        f"{part['param']} is {what} input, but the loaded model is text-only and cannot read "
        f"{'images' if part['type'] == 'image' else part['type']}.", param=part["param"])


def _check_video(part: dict[str, Any], model: ModelView, kinds: set[str]) -> None:
    assert model.vision is not None
    if not isinstance(part.get("url"), str) or not part["url"]:
        raise InvalidRequestError(f"{part['param']}: the video URL must be a non-empty string.",
                                  param=part["param"])
    if model.vision.video_token is not None and "image" in kinds:
        raise InvalidRequestError(
            f"{part['param']}: images and a video in one request are not supported by the "
            "loaded model.", param=part["param"])


def check_media(model: ModelView, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The media parts (images, videos) of ``messages`` after the refusals; empty for a text
    prompt."""
    parts = list(media_parts(messages))
    if not parts:
        return []
    if model.vision is None:
        raise _refuse_text_only(parts[0])
    kinds = {p["type"] for p in parts}
    if {"video", "audio"} <= kinds:
        raise InvalidRequestError(COMBINED_VIDEO_AUDIO, param=parts[0]["param"])
    for part in parts:
        if part["type"] == "video":
            _check_video(part, model, kinds)
        if part["type"] == "audio":
            raise InvalidRequestError(
                f"{part['param']}: the loaded model has no audio input path.",
                param=part["param"])
    limit = model.vision.policy.max_images
    if len(parts) > limit:
        raise RequestTooLarge(f"The request has {len(parts)} media parts; the server accepts at "
                              f"most {limit} per request.", param=parts[limit]["param"])
    return parts


def prepare_media(model: ModelView, messages: list[dict[str, Any]]) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]]]:
    """The messages to render and their media parts in order: ``check_media``'s refusals, then,
    on a VLM without a native video path, each video replaced by its frames as images."""
    parts = check_media(model, messages)
    if not any(p["type"] == "video" for p in parts):
        return messages, parts
    assert model.vision is not None
    if model.vision.video_token is not None:
        return messages, parts
    expanded = _videos_as_frames(messages, model.vision.policy,
                                 sum(p["type"] == "image" for p in parts))
    return expanded, list(media_parts(expanded))


def _videos_as_frames(messages: list[dict[str, Any]], policy: MediaPolicy,
                      images: int) -> list[dict[str, Any]]:
    """A copy of ``messages`` with every video part replaced by its sampled frames, each an
    ``image`` part holding the decoded frame (the request's own messages are not changed)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list) or not any(
                isinstance(p, dict) and p.get("type") == "video" for p in content):
            out.append(message)
            continue
        parts: list[Any] = []
        for part in content:
            if not (isinstance(part, dict) and part.get("type") == "video"):
                parts.append(part)
                continue
            frames = sample_frame_images(part["url"], part.get("fps"), policy, part["param"])
            images += len(frames)
            if images > policy.max_images:
                raise RequestTooLarge(
                    f"{part['param']}: the video gives {len(frames)} frames, which make "
                    f"{images} images in the request; the server accepts at most "
                    f"{policy.max_images} per request.", param=part["param"])
            parts.extend({"type": "image", "frame": frame, "param": part["param"]}
                         for frame in frames)
        out.append({**message, "content": parts})
    return out


def _image_of(part: dict[str, Any], policy: MediaPolicy) -> Any:
    if "frame" in part:  # a video frame of the fallback, already decoded
        return part["frame"]
    return decode_image(read_media(part["url"], policy, part["param"]), policy, part["param"])


def _check_placeholders(text: str, token: str | None, count: int, what: str) -> None:
    if token is not None and text.count(token) != count:
        raise InvalidRequestError(
            f"The chat template placed {text.count(token)} {what} placeholders for {count} "
            f"{what}s (a {what} in a turn the template does not render?).")


def vision_prompt(model: ModelView, text: str, parts: list[dict[str, Any]]) -> tuple[
        list[int], VisionInputs]:
    """Token ids and pixels for a rendered prompt ``text`` holding one placeholder per part."""
    support = model.vision
    assert support is not None
    policy = support.policy
    image_parts = [p for p in parts if p["type"] == "image"]
    video_parts = [p for p in parts if p["type"] == "video"]
    _check_placeholders(text, support.image_token, len(image_parts), "image")
    _check_placeholders(text, support.video_token, len(video_parts), "video")
    images = [_image_of(p, policy) for p in image_parts]
    videos = [sample_frames(p["url"], p.get("fps"), policy, p["param"]) for p in video_parts]
    return processor_inputs(support, text, images, videos)


def processor_inputs(support: Any, text: str, images: list[Any],
                     videos: list[Any]) -> tuple[list[int], VisionInputs]:
    """Run the model's processor: placeholder expansion, token ids and pixel arrays (kept as
    numpy here; the engine thread makes them MLX arrays)."""
    batch = support.processor(text=[text], images=images or None, videos=videos or None,
                              padding=False, add_special_tokens=False)
    ids = np.array(batch["input_ids"]).reshape(-1).tolist()
    arrays = {key: np.array(value) for key, value in batch.items()
              if key not in ("input_ids", "attention_mask") and value is not None}
    pixels = arrays.pop("pixel_values", None)
    if pixels is None:  # a video: its frames' patches go where an image's would
        pixels = arrays.pop("pixel_values_videos", None)
    return [int(i) for i in ids], VisionInputs(pixels, arrays, len(images) + len(videos))
