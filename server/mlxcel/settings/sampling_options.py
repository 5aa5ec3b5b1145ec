"""Sampling defaults: what a request that leaves a field out gets (llama-server's flag names).
A request's own field always wins."""

from __future__ import annotations

from .option import Option

SAMPLING = "Sampling defaults"


def _sampling(dest: str, flag: str, default: float | int | None, help_text: str,
              kind: type = float, field: str | None = None) -> Option[object]:
    return Option(dest, default, help_text, SAMPLING, flags=(flag,), type=kind,
                  to="defaults", field=field)


SAMPLING_OPTIONS: tuple[Option[object], ...] = (
    Option("n_predict", 512, "most tokens generated when a request sets no max_tokens",
           SAMPLING, flags=("-n", "--n-predict"), env=("LLAMA_ARG_N_PREDICT",), type=int,
           to="defaults"),
    _sampling("temp", "--temp", 0.8, "temperature (0 = greedy)", field="temperature"),
    _sampling("top_k", "--top-k", 40, "keep only the k most likely tokens (0 = all)", int),
    _sampling("top_p", "--top-p", 0.95, "nucleus sampling: keep the most likely tokens whose "
              "probabilities add up to p (1.0 = off)"),
    _sampling("min_p", "--min-p", 0.05, "drop tokens less likely than min-p times the most "
              "likely one (0 = off)"),
    Option("seed", None, "random seed of sampling", SAMPLING, flags=("--seed",), type=int,
           to="defaults", shown_default="a random seed per request"),
    _sampling("repeat_penalty", "--repeat-penalty", 1.0, "divide the logits of tokens seen in "
              "the last --repeat-last-n tokens by this (1.0 = off)"),
    _sampling("repeat_last_n", "--repeat-last-n", 64, "tokens the repeat penalty looks back "
              "on", int),
    _sampling("frequency_penalty", "--frequency-penalty", 0.0, "subtract this times a token's "
              "count so far from its logit (0 = off)"),
    _sampling("presence_penalty", "--presence-penalty", 0.0, "subtract this from the logit of "
              "every token already generated (0 = off)"),
    _sampling("dry_multiplier", "--dry-multiplier", 0.0, "DRY (don't repeat yourself) "
              "penalty strength (0 = off)"),
    _sampling("dry_base", "--dry-base", 1.75, "DRY penalty base: the penalty grows as "
              "base^(repeat length - allowed length)"),
    _sampling("dry_allowed_length", "--dry-allowed-length", 2, "longest repeated sequence DRY "
              "leaves unpenalized", int),
    _sampling("dry_penalty_last_n", "--dry-penalty-last-n", 0, "tokens DRY looks back on (0 = "
              "the whole context)", int),
    _sampling("xtc_probability", "--xtc-probability", 0.0, "XTC (exclude top choices): chance "
              "per token of removing the likeliest tokens above --xtc-threshold (0 = off)"),
    _sampling("xtc_threshold", "--xtc-threshold", 0.1, "XTC: tokens at least this likely may "
              "be removed (all but the least likely of them)"),
)
