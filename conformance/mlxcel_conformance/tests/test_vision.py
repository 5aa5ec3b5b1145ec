"""Image input (the `vision` family): an image part on chat, Responses and Messages reaches the
model, the three families agree, and local paths outside the allowed roots are refused.

A server whose model reads no images answers the probe image with 400: the family is then
UNSUPPORTED for that server (and the text-only refusal is checked instead, in `chat`).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.vision import (
    check_families_agree,
    check_image_not_a_server_error,
    check_image_probe,
    check_local_path_refused,
    check_pixels_reach_model,
    png_data_uri,
    solid_png,
)
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import chat_payload, message_content, response_of
from mlxcel_conformance.flows_typed import messages_payload, responses_payload
from mlxcel_conformance.goldens import family_golden_params, replay_golden
from mlxcel_conformance.readers import read_chat, read_message, read_response

CHAT_PATH = "/v1/chat/completions"
QUESTION = "What colour is this image?"
RED, BLUE = (220, 20, 20), (20, 20, 220)


def image_chat(model: str | None, url: str, max_tokens: int = 12) -> dict[str, Any]:
    content = [{"type": "image_url", "image_url": {"url": url}},
               {"type": "text", "text": QUESTION}]
    return chat_payload(model, content, max_tokens=max_tokens)  # type: ignore[arg-type]


def _probe(client: SuiteClient, model: str | None) -> tuple[int, Any]:
    return response_of(client.post(CHAT_PATH, image_chat(model, png_data_uri(RED), 1)))


@pytest.fixture(scope="module")
def reads_images(client: SuiteClient, model_name: str | None) -> bool:
    return check_image_probe(*_probe(client, model_name))


@pytest.fixture()
def vision(reads_images: bool) -> None:
    if not reads_images:
        pytest.skip("UNSUPPORTED: the server's model reads no images (a valid PNG answered 400)")


@pytest.mark.conformance(family="vision", feature="vision.pixels_reach_model")
def test_different_images_give_different_answers(client: SuiteClient, model_name: str | None,
                                                 vision: None) -> None:
    answers = {name: message_content(read_chat(client, image_chat(model_name, png_data_uri(rgb))))
               for name, rgb in (("red", RED), ("blue", BLUE))}
    check_pixels_reach_model(answers)


@pytest.mark.conformance(family="vision", feature="vision.families_agree", extension="media")
def test_chat_responses_and_messages_share_the_image_path(
        client: SuiteClient, model_name: str | None, vision: None) -> None:
    data = solid_png(BLUE)
    uri = "data:image/png;base64," + base64.b64encode(data).decode()
    chat = message_content(read_chat(client, image_chat(model_name, uri)))
    responses = read_response(client, responses_payload(model_name, [{"role": "user", "content": [
        {"type": "input_image", "image_url": uri},
        {"type": "input_text", "text": QUESTION}]}], max_output_tokens=12))
    message = read_message(client, messages_payload(model_name, [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": base64.b64encode(data).decode()}},
        {"type": "text", "text": QUESTION}], max_tokens=12, temperature=0,
        # Messages without thinking render the turn without reasoning; chat and Responses
        # here leave the template's default, which thinking asked for renders
        thinking={"type": "adaptive"}))
    texts = {
        "chat": chat,
        "responses": "".join(part.get("text", "") for item in responses["output"]
                             if item.get("type") == "message" for part in item["content"]),
        "messages": "".join(block.get("text", "") for block in message["content"]
                            if block.get("type") == "text"),
    }
    check_families_agree(texts)


@pytest.mark.parametrize("doc", family_golden_params("vision"))
def test_vision_goldens(client: SuiteClient, model_name: str | None, vision: None,
                        probed_golden_mode: str, doc: dict[str, Any]) -> None:
    """Image input on chat, Responses and Messages against goldens recorded on the VLM fixture:
    shape mode (any vision model), exact only when ``--goldens exact`` is asked for."""
    replay_golden(client, doc, model_name, probed_golden_mode)


TRAVERSALS = ("/etc/passwd", "file:///etc/passwd", "/tmp/../etc/passwd",
              "file:///tmp/../../etc/hostname")


@pytest.mark.conformance(family="vision", feature="vision.local_path_refused",
                         extension="media", destructive=True)
@pytest.mark.parametrize("url", TRAVERSALS)
def test_local_paths_outside_the_roots_are_refused(client: SuiteClient, model_name: str | None,
                                                   vision: None, url: str) -> None:
    status, body = response_of(client.post(CHAT_PATH, image_chat(model_name, url)))
    check_local_path_refused(status, body, url)
    check_error_body_openai(body, status=status, expected=400)


@pytest.mark.conformance(family="vision", feature="vision.local_video_refused", extension="media",
                         destructive=True)
def test_local_videos_outside_the_allowlist_are_refused(
        client: SuiteClient, model_name: str | None, vision: None) -> None:
    """Local video paths are fail-closed (MLXCEL_VIDEO_DIR_ALLOWLIST); /etc is never on it."""
    url = "/etc/../etc/hostname"
    payload = chat_payload(model_name, [  # type: ignore[arg-type]
        {"type": "video_url", "video_url": {"url": url}}, {"type": "text", "text": QUESTION}])
    status, body = response_of(client.post(CHAT_PATH, payload))
    check_local_path_refused(status, body, url)


@pytest.mark.conformance(family="chat", feature="chat.errors.image_text_only", destructive=True)
def test_text_only_model_refuses_images(client: SuiteClient, model_name: str | None,
                                        reads_images: bool) -> None:
    if reads_images:
        pytest.skip("the server's model reads images: the text-only refusal does not apply")
    status, body = _probe(client, model_name)
    check_error_body_openai(body, status=status, expected=400, case="image on a text-only model",
                            source="OpenAI API reference, Chat Completions image_url content "
                            "parts (only models that read images take them): 400")


# The same image on the other families. Whether a text-only model refuses it (and with which
# 4xx) is the reference's own promise (`anthropic.errors.image_text_only`,
# `responses.errors.refused`); that an image a client sent is never a server error is every
# server's: RFC 9110, 15.5 and 15.6 (a client's request answered 5xx blames the server).
def image_turns(model: str | None, family: str) -> tuple[str, dict[str, Any]]:
    uri = png_data_uri(RED)
    if family == "responses":
        return "/v1/responses", responses_payload(model, [{"role": "user", "content": [
            {"type": "input_image", "image_url": uri},
            {"type": "input_text", "text": QUESTION}]}], max_output_tokens=8)
    return "/v1/messages", messages_payload(model, [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": uri.split(",", 1)[1]}},
        {"type": "text", "text": QUESTION}], max_tokens=8)


@pytest.mark.conformance(family="responses", feature="responses.image_no_server_error",
                         destructive=True)
@pytest.mark.parametrize("family", ["responses", pytest.param("anthropic", marks=(
    pytest.mark.conformance(family="anthropic", feature="anthropic.image_no_server_error",
                            destructive=True)))])
def test_an_image_is_never_a_server_error(client: SuiteClient, model_name: str | None,
                                          family: str) -> None:
    path, payload = image_turns(model_name, family)
    check_image_not_a_server_error(path, *response_of(client.post(path, payload)))
