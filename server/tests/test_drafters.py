"""The drafters on their own: prompt lookup's n-gram search, and the draft model's cache kept
in step with an accepted history that diverged from its guesses."""

from __future__ import annotations

from pathlib import Path

from mlxcel.engine.drafters import DraftModelDrafter, PromptLookupDrafter

DRAFT = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny-draft"


def test_prompt_lookup_continues_the_latest_match_longest_ngram_first() -> None:
    drafter = PromptLookupDrafter(max_ngram=3)
    # trailing 3-gram (1, 2, 3) occurred at 0 and 5; the later one (followed by 8, 9) wins
    assert drafter.propose([1, 2, 3, 4, 0, 1, 2, 3, 8, 9, 7, 1, 2, 3], 2) == [8, 9]
    # no 3- or 2-gram match, a 1-gram match falls back to its continuation
    assert drafter.propose([5, 6, 9, 7, 5], 3) == [6, 9, 7]
    assert drafter.propose([1, 2, 3], 4) == []
    assert drafter.propose([1, 2, 1, 2], 0) == []


def test_draft_model_rewinds_to_the_accepted_history() -> None:
    from mlx_lm import load

    model = load(str(DRAFT))[0]
    drafter = DraftModelDrafter(model)
    fresh = DraftModelDrafter(model)
    history = [100, 200, 300, 400, 500]
    first = drafter.propose(history, 3)
    assert len(first) == 3 and drafter.held == history + first[:2]
    # the model accepted one guess and then chose another token
    diverged = history + [first[0], (first[1] + 1) % 2048]
    assert drafter.propose(diverged, 3) == fresh.propose(diverged, 3)
    assert drafter.held[:len(diverged)] == diverged
