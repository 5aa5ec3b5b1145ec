"""POST /completion and its alias /completions: llama-server's native completion.

``/infill`` reuses ``run_native`` once it has built its fill-in-the-middle prompt.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ...api.engine_stream import server_stop_error, watched_events
from ...api.offload import off_loop, parse_request
from ...api.priority import request_priority
from ...api.state import AppState, app_state
from ...engine.handle import RequestHandle
from ...generation import Finished, PromptProgress, TokenDelta
from ...sse import data_event, sse_response
from .errors import LLAMA_ERROR_SHAPE
from .native_completion import (
    NativeCompletionRequest,
    NativeRun,
    check_logprob_entries,
    generation_settings,
    to_generation_requests,
)
from .probs import encode_final

router = APIRouter()
# llama-server's native routes (here and in the modules beside this one) answer in its shape.
error_shape = LLAMA_ERROR_SHAPE


@router.post("/completion")
@router.post("/completions")
async def native_completion(request: Request) -> Response:
    state = app_state(request)
    body = await parse_request(request, NativeCompletionRequest)
    model = state.require_model()
    gens = await off_loop(to_generation_requests, body, model, state.config.defaults)
    return await run_native(request, state, body, gens)


async def run_native(request: Request, state: AppState, body: NativeCompletionRequest,
                     gens: list[Any]) -> Response:
    """Submit every prompt and answer in llama-server's shape (array for several prompts)."""
    model = state.require_model()
    check_logprob_entries([] if body.stream else gens, model.context_size)
    prompts = await off_loop(lambda: [model.decode(list(g.prompt_tokens)) for g in gens])
    # All prompts are admitted together or none is (a 503 leaves nothing queued). The
    # reference: streaming native /completion requests do not record in the metrics.
    handles = state.engine.submit_all(gens, request_priority(request),
                                      count_in_metrics=not body.stream)
    runs = [NativeRun(index, gen, keep_logprobs=not body.stream)
            for index, gen in enumerate(gens)]
    renderer = _FinalRenderer(state, body, prompts)
    if body.stream:
        return sse_response(_stream(handles, runs, renderer))
    try:
        for handle, run in zip(handles, runs, strict=True):
            await _collect(request, handle, run)
    finally:
        for handle in handles:
            handle.cancel()  # the client left, or one prompt failed: drop the rest
    return Response(content=await off_loop(renderer.encode, runs), media_type="application/json")


class _FinalRenderer:
    def __init__(self, state: AppState, body: NativeCompletionRequest, prompts: list[str]):
        self.state, self.body, self.prompts = state, body, prompts

    def __call__(self, run: NativeRun, *, streamed: bool) -> dict[str, Any]:
        model = self.state.require_model()
        settings = generation_settings(self.body, run.gen, self.state.model_name,
                                       model.context_size)
        return run.final(self.state.model_name, self.prompts[run.index], settings,
                         streamed=streamed, return_tokens=bool(self.body.return_tokens))

    def encode(self, runs: list[NativeRun]) -> bytes:
        """The non-streamed answer: one final object, or an array of them for several
        prompts (run off the loop: it grows with n_probs)."""
        finals = [encode_final(self(run, streamed=False), run.probabilities(streamed=False),
                               run.gen.post_sampling_probs)
                  for run in runs]
        return finals[0] if len(finals) == 1 else b"".join([b"[", b",".join(finals), b"]"])


async def _collect(request: Request, handle: RequestHandle, run: NativeRun) -> None:
    async for event in watched_events(request, handle):
        run.feed(event)


# A streamed partial with at least this many alternatives is encoded on the preparation pool
# (~1 ms of interpreter time per 500 alternatives, on the event loop every other client's).
OFF_LOOP_ALTERNATIVES = 256


def _alternatives(event: TokenDelta) -> int:
    return sum(len(lp.top) for lp in event.logprobs)


async def _stream(handles: list[RequestHandle], runs: list[NativeRun],
                  renderer: _FinalRenderer) -> AsyncIterator[str]:
    """Partials (``stop: false``) then one final object per prompt; no ``[DONE]``. With
    ``return_progress``, a prompt-progress partial before the prompt is read, after each
    prefill chunk and once it is all read (the engine's ``PromptProgress``); with
    ``timings_per_token``, the timings so far on every partial."""
    body = renderer.body
    try:
        for handle, run in zip(handles, runs, strict=True):
            async for batch in handle.batches_with_progress():
                for event in batch:
                    if isinstance(event, PromptProgress):
                        yield data_event(run.progress(event))
                        continue
                    run.feed(event)
                    if not isinstance(event, Finished):
                        timings = bool(body.timings_per_token)
                        # thousands of alternatives (n_probs) are encoded off the loop
                        partial = (await off_loop(run.partial_json, event, timings)
                                   if _alternatives(event) >= OFF_LOOP_ALTERNATIVES
                                   else run.partial_json(event, timings))
                        yield f"data: {partial}\n\n"
                    elif event.reason == "error":
                        error = {"code": 500, "message": f"generation failed: {event.error}",
                                 "type": "server_error"}
                        yield data_event({"error": error})
                        return
                    else:
                        yield data_event(renderer(run, streamed=True))
        if (stopped := server_stop_error(handles)) is not None:
            yield data_event(stopped)
    finally:
        for handle in handles:
            handle.cancel()
