"""Tests for mlxcel_conformance.profiles."""

from __future__ import annotations

import pytest

from mlxcel_conformance.errors import SetupError
from mlxcel_conformance.profiles import FAMILIES, PROFILES, custom_profile, get_profile


def test_mlxcel_claims_everything() -> None:
    assert all(get_profile("mlxcel").claims(family) for family in FAMILIES)


def test_mlx_lm() -> None:
    profile = get_profile("mlx-lm")
    assert profile.families == {"chat", "completions", "models", "health", "sdk-openai",
                                "mlx-lm-fields", "robustness"}
    for family in ("tokenize", "auth", "responses", "anthropic", "llama-native", "embeddings"):
        assert not profile.claims(family)


def test_llama_server_serves_responses_and_messages() -> None:
    profile = get_profile("llama-server")
    assert profile.claims("responses") and profile.claims("anthropic")
    assert profile.claims("llama-native") and profile.claims("sdk-anthropic")
    assert not profile.claims("schema")
    assert not profile.claims("mlx-lm-fields")


def test_openai() -> None:
    assert get_profile("openai").families == {
        "chat",
        "completions",
        "models",
        "responses",
        "sdk-openai",
        "auth",
    }


def test_only_mlxcel_claims_the_schema_family() -> None:
    assert [name for name, p in PROFILES.items() if p.claims("schema")] == ["mlxcel"]


def test_unknown_profile_is_a_setup_error() -> None:
    with pytest.raises(SetupError, match="mlx-lm"):
        get_profile("vllm")


def test_unknown_family_is_a_setup_error() -> None:
    with pytest.raises(SetupError):
        get_profile("mlxcel").claims("chat-completions")
    with pytest.raises(SetupError):
        custom_profile(["chat", "bogus"])


def test_custom_profile() -> None:
    profile = custom_profile(["chat", "models"])
    assert profile.claims("chat") and not profile.claims("responses")


def test_narrowed_profile_claims_only_the_chosen_families_it_had() -> None:
    chat_only = get_profile("mlxcel").narrowed(["chat"])
    assert chat_only.claims("chat") and not chat_only.claims("responses")
    assert chat_only.name == "mlxcel:chat"
    # narrowing never adds a family the profile did not claim
    assert not get_profile("mlx-lm").narrowed(["chat", "responses"]).claims("responses")
    with pytest.raises(SetupError):
        get_profile("mlxcel").narrowed(["bogus"])
