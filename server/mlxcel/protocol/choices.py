"""``n`` choices of one chat or completions request: one engine request per choice, the same
prompt and constraints, each with its own sampling, and their usage summed as OpenAI sums it.

OpenAI's Chat Completions API (https://platform.openai.com/docs/api-reference/chat/create,
``n``: "How many chat completion choices to generate for each input message"; its Completions
API likewise, per prompt) answers ``n`` choices indexed 0..n-1; ``usage.completion_tokens``
counts every choice's tokens and ``prompt_tokens`` the prompt once. llama-server bounds ``n``
by its slot count (``n_cmpl`` in tools/server/server-schema.cpp, hard limits
1..``n_parallel``): so does this server (``--parallel``), since more choices than slots would
only queue behind each other.

A seeded request gets seeds ``seed``, ``seed + 1``, ... (mod 2**64), so choice 0 is what the
same request with ``n: 1`` answers and every choice is reproducible; an unseeded one samples
each choice afresh. Greedy decoding gives ``n`` equal choices.
"""

from __future__ import annotations

import dataclasses

from ..errors import InvalidRequestError
from ..generation import Finished, GenerationRequest
from .sampling_fields import SEED_SPACE


def check_choice_count(n: int | None, slots: int) -> int:
    """The number of choices a request asks for (1 when absent); a 400 beyond the slots."""
    count = 1 if n is None else n
    if count > max(1, slots):
        raise InvalidRequestError(
            f"n must be at most {max(1, slots)}, the server's parallel slots (--parallel).",
            param="n")
    return count


def choice_requests(generation: GenerationRequest, n: int) -> list[GenerationRequest]:
    """``n`` engine requests for one chat request, choice ``i`` seeded ``seed + i``."""
    seed = generation.sampling.seed
    requests = [generation]
    for i in range(1, n):
        sampling = generation.sampling if seed is None else dataclasses.replace(
            generation.sampling, seed=(seed + i) % SEED_SPACE)
        # Progress is reported once, by the first choice: the prompt is the same.
        requests.append(dataclasses.replace(generation, sampling=sampling,
                                            report_progress=False))
    return requests


def summed_finish(finished: list[Finished]) -> Finished:
    """One ``Finished`` whose counts are the usage of all choices: the prompt (and its cached
    part) once, the completion tokens of every choice."""
    first = finished[0]
    return dataclasses.replace(
        first, completion_tokens=sum(f.completion_tokens for f in finished))
