"""Round trips with the official openai SDK, strict response validation on."""

from __future__ import annotations

import asyncio

import openai
import pytest

from mlxcel_conformance import pace
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.sdk_clients import async_openai_client, openai_client
from mlxcel_conformance.target import Target

MESSAGES: list[openai.types.chat.ChatCompletionMessageParam] = [
    {"role": "user", "content": "Say hello."}
]


@pytest.fixture(scope="module")
def sdk_model(model_name: str | None) -> str:
    # The SDK requires a model; "default_model" is what mlx-lm reads as "the loaded model".
    return model_name or "default_model"


def _sync(target: Target) -> openai.OpenAI:
    return openai_client(target)


def _async(target: Target) -> openai.AsyncOpenAI:
    return async_openai_client(target)


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.chat.sync")
def test_sdk_chat_sync(target: Target, sdk_model: str) -> None:
    with _sync(target) as client:
        completion = client.chat.completions.create(
            model=sdk_model, messages=MESSAGES, max_tokens=8, temperature=0
        )
    if completion.choices[0].message.role != "assistant" or completion.usage is None:
        fail(
            "sdk_openai",
            "chat completion lacks the assistant role or usage",
            body=completion.model_dump(),
        )


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.chat.stream")
def test_sdk_chat_stream(target: Target, sdk_model: str) -> None:
    with _sync(target) as client:
        stream = client.chat.completions.create(
            model=sdk_model,
            messages=MESSAGES,
            max_tokens=8,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    if not chunks or chunks[-1].usage is None or chunks[-1].choices:
        fail(
            "sdk_openai",
            "the SDK stream did not end with the usage chunk",
            last=chunks[-1].model_dump() if chunks else None,
        )


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.chat.async")
def test_sdk_chat_async(target: Target, sdk_model: str) -> None:
    async def run() -> list[str]:
        async with _async(target) as client:
            results = await asyncio.gather(
                *[
                    client.chat.completions.create(
                        model=sdk_model, messages=MESSAGES, max_tokens=6, temperature=0
                    )
                    for _ in range(3)
                ]
            )
        return [r.choices[0].message.content or "" for r in results]

    texts = asyncio.run(run())
    if len(set(texts)) != 1:
        fail("sdk_openai", "three concurrent greedy requests gave different text", texts=texts)


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.completions")
def test_sdk_completions(target: Target, sdk_model: str) -> None:
    with _sync(target) as client:
        completion = client.completions.create(
            model=sdk_model, prompt="The capital of France is", max_tokens=8, temperature=0
        )
    # The SDK types a completion choice's finish_reason as non-null, yet the real API streams
    # `finish_reason: null` until the last chunk: strict validation would reject OpenAI itself.
    with openai.OpenAI(
        base_url=f"{target.base_url}/v1",
        api_key=target.api_key or "none",
        max_retries=0,
        timeout=pace.current().request_timeout_s,
    ) as client:
        streamed = "".join(
            c.choices[0].text
            for c in client.completions.create(
                model=sdk_model,
                prompt="The capital of France is",
                max_tokens=8,
                temperature=0,
                stream=True,
            )
            if c.choices
        )
    if streamed != completion.choices[0].text:
        fail(
            "sdk_openai",
            "streamed and non-streamed greedy completions differ",
            streamed=streamed,
            non_streamed=completion.choices[0].text,
        )


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.models")
def test_sdk_models(target: Target) -> None:
    with _sync(target) as client:
        models = list(client.models.list())
    if not models:
        fail("sdk_openai", "models.list() returned nothing")
