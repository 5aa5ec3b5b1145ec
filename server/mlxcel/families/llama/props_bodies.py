"""llama-server's settings objects, as its README documents ``GET /props`` and ``GET /slots``:
the ``params`` of a generation (the server defaults, or a running request's own), a slot entry
(``id``, ``id_task``, ``n_ctx``, ``speculative``, ``is_processing``, ``params``, ``next_token``)
and the ``/props`` body (``default_generation_settings`` nesting ``params``, ``total_slots``,
``model_path``, ``chat_template``, ``modalities``, ``build_info``, ``is_sleeping`` ...).

Samplers mlxcel does not have report their disabled values (``mirostat`` 0, ``typical_p`` 1,
``dynatemp_range`` 0), so a client reading them sees what runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...generation import SamplingParams

# llama-server's LLAMA_DEFAULT_SEED: the seed it reports when none is configured (a random seed
# per request), as its README example and its server send it.
NO_SEED = 4294967295
DEFAULT_BREAKERS = ["\n", ":", '"', "*"]
SAMPLERS = ["penalties", "dry", "top_k", "top_p", "min_p", "xtc", "temperature"]


@dataclass(frozen=True)
class ParamsView:
    """What a generation runs with, in llama-server's terms (the caller resolves defaults)."""

    sampling: SamplingParams
    n_predict: int
    repeat_last_n: int
    dry_penalty_last_n: int
    stop: list[str] = field(default_factory=list)
    dry_sequence_breakers: list[str] = field(default_factory=lambda: list(DEFAULT_BREAKERS))
    ignore_eos: bool = False
    stream: bool = False
    n_probs: int = 0
    grammar: str = ""
    timings_per_token: bool = False
    post_sampling_probs: bool = False
    speculative_n_max: int = 16
    chat_format: str = "Content-only"
    reasoning_format: str = "none"


def params_body(view: ParamsView) -> dict[str, Any]:
    s = view.sampling
    return {
        "n_predict": view.n_predict,
        "seed": NO_SEED if s.seed is None else s.seed,
        "temperature": s.temperature,
        "dynatemp_range": 0.0,
        "dynatemp_exponent": 1.0,
        "top_k": s.top_k,
        "top_p": s.top_p,
        "min_p": s.min_p,
        "top_n_sigma": -1.0,
        "xtc_probability": s.xtc_probability,
        "xtc_threshold": s.xtc_threshold,
        "typical_p": 1.0,
        "repeat_last_n": view.repeat_last_n,
        "repeat_penalty": 1.0 if s.repetition_penalty is None else s.repetition_penalty,
        "presence_penalty": s.presence_penalty or 0.0,
        "frequency_penalty": s.frequency_penalty or 0.0,
        "dry_multiplier": s.dry_multiplier,
        "dry_base": s.dry_base,
        "dry_allowed_length": s.dry_allowed_length,
        "dry_penalty_last_n": view.dry_penalty_last_n,
        "dry_sequence_breakers": list(view.dry_sequence_breakers),
        "mirostat": 0,
        "mirostat_tau": 5.0,
        "mirostat_eta": 0.1,
        "stop": list(view.stop),
        "max_tokens": view.n_predict,
        "n_keep": 0,
        "n_discard": 0,
        "ignore_eos": view.ignore_eos,
        "stream": view.stream,
        "n_probs": view.n_probs,
        "min_keep": 0,
        "grammar": view.grammar,
        "chat_format": view.chat_format,
        "reasoning_format": view.reasoning_format,
        "reasoning_in_content": False,
        "generation_prompt": "",
        "samplers": list(SAMPLERS),
        "speculative.n_max": view.speculative_n_max,
        "speculative.n_min": 0,
        "speculative.p_min": 0.75,
        "timings_per_token": view.timings_per_token,
        "post_sampling_probs": view.post_sampling_probs,
        "lora": [],
    }


def next_token(n_decoded: int, n_remain: int, has_new_line: bool,
               processing: bool) -> dict[str, Any]:
    return {"has_next_token": processing or n_decoded == 0, "has_new_line": has_new_line,
            "n_remain": n_remain, "n_decoded": n_decoded}


def slot_entry(slot_id: int, n_ctx: int, speculative: bool, params: dict[str, Any], *,
               processing: bool, id_task: int = -1, n_decoded: int = 0, n_remain: int = -1,
               has_new_line: bool = False) -> dict[str, Any]:
    """One ``/slots`` entry in the README's shape."""
    return {
        "id": slot_id,
        "id_task": id_task,
        "n_ctx": n_ctx,
        "speculative": speculative,
        "is_processing": processing,
        "params": params,
        "next_token": next_token(n_decoded, n_remain, has_new_line, processing),
    }


def default_generation_settings(n_ctx: int, speculative: bool, params: dict[str, Any]
                                ) -> dict[str, Any]:
    """``/props``' ``default_generation_settings``: an idle slot with the server defaults."""
    entry = slot_entry(0, n_ctx, speculative, params, processing=False)
    entry["prompt"] = ""
    entry["next_token"]["stopping_word"] = ""
    return entry


def template_caps(template: str | None) -> dict[str, bool]:
    """``chat_template_caps``: what the template text shows it renders."""
    text = template or ""
    tools = "tools" in text
    return {
        "supports_tools": tools,
        "supports_tool_calls": "tool_calls" in text,
        "supports_parallel_tool_calls": "tool_calls" in text,
        "supports_system_role": "system" in text,
        "supports_string_content": True,
        "supports_typed_content": False,
        "supports_object_arguments": "tool_calls" in text,
        "supports_preserve_reasoning": False,
        "supports_reasoning_effort": "reasoning_effort" in text,
    }
