"""The settings model: every flag and environment variable the server has accepted keeps
working, every flag states what it does and its default, the config objects are derived from
the declarations, and docs/configuration.md is what the declarations render."""

from __future__ import annotations

import dataclasses
import importlib.util
import pkgutil
from pathlib import Path
from typing import Any

import pytest

from mlxcel.cli import build_parser, config_from_args, engine_config
from mlxcel.config import GenerationDefaults, ServerConfig, section
from mlxcel.engine.worker import EngineConfig
from mlxcel.families import installed
from mlxcel.limits import RequestLimits
from mlxcel.settings.catalog import OPTIONS
from mlxcel.settings.derive import fields_of
from mlxcel.settings.option import SettingError, env_bool

ROOT = Path(__file__).resolve().parents[2]

# Every flag of mlxcel-server before the settings model, with its dest: none may disappear
# (but those of the retired NumPy decode path: RETIRED below).
FLAGS = {
    "-m": "model", "--model": "model", "--host": "host", "--port": "port",
    "--api-key": "api_key", "-c": "ctx_size", "--ctx-size": "ctx_size", "-a": "alias",
    "--alias": "alias", "-n": "n_predict", "--n-predict": "n_predict", "--temp": "temp",
    "--top-k": "top_k", "--top-p": "top_p", "--min-p": "min_p", "--seed": "seed",
    "--repeat-penalty": "repeat_penalty", "--repeat-last-n": "repeat_last_n",
    "--stream-interval-ms": "stream_interval_ms",
    "--frequency-penalty": "frequency_penalty", "--presence-penalty": "presence_penalty",
    "--dry-multiplier": "dry_multiplier", "--dry-base": "dry_base",
    "--dry-allowed-length": "dry_allowed_length", "--dry-penalty-last-n": "dry_penalty_last_n",
    "--xtc-probability": "xtc_probability", "--xtc-threshold": "xtc_threshold",
    "-np": "parallel", "--parallel": "parallel", "--max-queue": "max_queue",
    "--prefill-step-size": "prefill_step_size", "--no-cache-prompt": "cache_prompt",
    "--cache-bytes": "cache_bytes", "--cache-entries": "cache_entries",
    "--cache-ttl": "cache_ttl", "--metrics": "metrics", "--metrics-port": "metrics_port",
    "--slots": "slots", "--no-slots": "slots",
    "--media-path": "media_path", "--media-max-bytes": "media_max_bytes",
    "--media-max-pixels": "media_max_pixels", "--media-decode-timeout": "media_decode_timeout",
    "--media-fetch-timeout": "media_fetch_timeout", "--video-max-frames": "video_max_frames",
    "--draft-model": "draft_model", "-md": "draft_model", "--model-draft": "draft_model",
    "--spec-draft-model": "draft_model", "--draft-max": "draft_max",
    "--num-draft-tokens": "draft_max", "--spec-draft-n-max": "draft_max",
    "--draft": "draft_max", "--draft-n": "draft_max", "--spec-type": "spec_type",
    "--chat-template": "chat_template", "--chat-template-file": "chat_template_file",
    "--chat-template-kwargs": "chat_template_kwargs",
    "--responses-store-max-entries": "responses_store_max_entries",
    "--responses-store-ttl-secs": "responses_store_ttl_secs",
    "--conversation-store-max-entries": "conversation_store_max_entries",
    "--conversation-store-ttl-secs": "conversation_store_ttl_secs",
    "--embedding-model": "embedding_model", "--rerank-model": "rerank_model",
    "--pooling": "pooling", "--image-model": "image_model",
    "--image-max-queue": "image_max_queue", "--image-timeout": "image_timeout",
    "--audio-model": "audio_model", "--audio-max-queue": "audio_max_queue",
    "--audio-timeout": "audio_timeout", "--max-body-bytes": "max_body_bytes",
    "--max-json-values": "max_json_values", "--max-json-depth": "max_json_depth",
    "--max-stop-strings": "max_stop_strings", "--max-stop-chars": "max_stop_chars",
    "--max-dry-breakers": "max_dry_breakers", "--dry-breaker-chars": "dry_breaker_chars",
    "--max-tokenize-chars": "max_tokenize_chars", "--max-schema-depth": "max_schema_depth",
    "--prepare-threads": "prepare_threads", "--timeout-header": "timeout_header",
    "--timeout-read": "timeout_read", "--timeout-keep-alive": "timeout_keep_alive",
    "--allowed-origins": "allowed_origins", "--allowed-hosts": "allowed_hosts",
    "--responses-store-max-bytes": "responses_store_max_bytes",
    "--store-bytes": "responses_store_max_bytes", "--store-path": "store_path",
    "--adapter-dir": "adapter_dir", "--log-level": "log_level",
    "--max-logit-bias": "max_logit_bias", "--max-logprob-entries": "max_logprob_entries",
}

# Every environment variable the server has read: (variable, value, dest, parsed value).
ENV = [
    ("LLAMA_ARG_MODEL", "some/model", "model", "some/model"),
    ("LLAMA_ARG_HOST", "0.0.0.0", "host", "0.0.0.0"),
    ("LLAMA_ARG_PORT", "9000", "port", 9000),
    ("LLAMA_API_KEY", "k", "api_key", "k"),
    ("LLAMA_ARG_CTX_SIZE", "4096", "ctx_size", 4096),
    ("LLAMA_ARG_ALIAS", "name", "alias", "name"),
    ("LLAMA_ARG_N_PREDICT", "77", "n_predict", 77),
    ("LLAMA_ARG_N_PARALLEL", "2", "parallel", 2),
    ("MLXCEL_STREAM_INTERVAL_MS", "0", "stream_interval_ms", 0.0),
    ("MLXCEL_MAX_QUEUE", "9", "max_queue", 9),
    ("LLAMA_ARG_NO_CACHE_PROMPT", "1", "cache_prompt", False),
    ("LLAMA_ARG_ENDPOINT_METRICS", "true", "metrics", True),
    ("LLAMA_ARG_ENDPOINT_SLOTS", "off", "slots", False),
    ("MLXCEL_MEDIA_PATH", "/a,/b", "media_path", ["/a", "/b"]),
    ("LLAMA_ARG_SPEC_DRAFT_MODEL", "d1", "draft_model", "d1"),
    ("LLAMA_ARG_MODEL_DRAFT", "d2", "draft_model", "d2"),
    ("LLAMA_ARG_SPEC_DRAFT_N_MAX", "5", "draft_max", 5),
    ("LLAMA_ARG_DRAFT_MAX", "6", "draft_max", 6),
    ("LLAMA_ARG_SPEC_TYPE", "ngram-simple", "spec_type", "ngram-simple"),
    ("LLAMA_ARG_CHAT_TEMPLATE", "{{ x }}", "chat_template", "{{ x }}"),
    ("LLAMA_ARG_CHAT_TEMPLATE_FILE", "t.jinja", "chat_template_file", "t.jinja"),
    ("LLAMA_ARG_CHAT_TEMPLATE_KWARGS", "{}", "chat_template_kwargs", "{}"),
    ("LLAMA_ARG_RESPONSES_STORE_MAX_ENTRIES", "3", "responses_store_max_entries", 3),
    ("LLAMA_ARG_RESPONSES_STORE_TTL_SECS", "4", "responses_store_ttl_secs", 4),
    ("LLAMA_ARG_CONVERSATION_STORE_MAX_ENTRIES", "5", "conversation_store_max_entries", 5),
    ("LLAMA_ARG_CONVERSATION_STORE_TTL_SECS", "6", "conversation_store_ttl_secs", 6),
    ("MLXCEL_STORE_PATH", ":memory:", "store_path", ":memory:"),
    ("MLXCEL_STORE_BYTES", "1000", "responses_store_max_bytes", 1000),
    ("MLXCEL_EMBEDDING_MODEL", "e", "embedding_model", "e"),
    ("MLXCEL_RERANK_MODEL", "r", "rerank_model", "r"),
    ("LLAMA_ARG_POOLING", "cls", "pooling", "cls"),
    ("MLXCEL_IMAGE_MODEL", "i", "image_model", "i"),
    ("MLXCEL_IMAGE_MAX_QUEUE", "1", "image_max_queue", 1),
    ("MLXCEL_IMAGE_TIMEOUT", "2.5", "image_timeout", 2.5),
    ("MLXCEL_AUDIO_MODEL", "w", "audio_model", "w"),
    ("MLXCEL_AUDIO_MAX_QUEUE", "2", "audio_max_queue", 2),
    ("MLXCEL_AUDIO_TIMEOUT", "9", "audio_timeout", 9.0),
    ("MLXCEL_MAX_BODY_BYTES", "1000", "max_body_bytes", 1000),
    ("MLXCEL_TIMEOUT_HEADER", "3", "timeout_header", 3.0),
    ("MLXCEL_TIMEOUT_READ", "4", "timeout_read", 4.0),
    ("MLXCEL_TIMEOUT_KEEP_ALIVE", "2", "timeout_keep_alive", 2.0),
    ("MLXCEL_ALLOWED_ORIGINS", "http://a, http://b", "allowed_origins", ("http://a", "http://b")),
    ("MLXCEL_ALLOWED_HOSTS", "h1,h2", "allowed_hosts", ("h1", "h2")),
    ("MLXCEL_ADAPTER_DIR", "/adapters", "adapter_dir", "/adapters"),
    ("MLXCEL_LOG_LEVEL", "debug", "log_level", "debug"),
    ("MLXCEL_VIDEO_DIR_ALLOWLIST", "/v", "video_dirs", ["/v"]),
    ("MLXCEL_ALLOW_PRIVATE_MEDIA_URLS", "1", "allow_private_urls", True),
]


def _flag_actions() -> dict[str, Any]:
    return {flag: action for action in build_parser(environ={})._actions
            for flag in action.option_strings}


@pytest.mark.parametrize("flag", sorted(FLAGS))
def test_every_existing_flag_is_kept(flag: str) -> None:
    actions = _flag_actions()
    assert flag in actions, f"{flag} is no longer accepted"
    assert actions[flag].dest == FLAGS[flag]


@pytest.mark.parametrize(("name", "raw", "dest", "expected"), ENV, ids=[e[0] for e in ENV])
def test_every_existing_environment_variable_is_read(name: str, raw: str, dest: str,
                                                     expected: object) -> None:
    args = build_parser(environ={name: raw}).parse_args([])
    assert getattr(args, dest) == expected


def test_a_flag_wins_over_its_variable() -> None:
    args = build_parser(environ={"LLAMA_ARG_PORT": "9000"}).parse_args(["--port", "9001"])
    assert args.port == 9001


def test_the_first_variable_set_wins() -> None:
    env = {"LLAMA_ARG_SPEC_DRAFT_N_MAX": "5", "LLAMA_ARG_DRAFT_MAX": "6"}
    assert build_parser(environ=env).parse_args([]).draft_max == 5


def test_every_flag_has_help_and_states_its_default() -> None:
    for action in build_parser(environ={})._actions:
        if action.dest in ("help", "version"):
            continue
        assert action.help and len(action.help) > 20, f"{action.option_strings}: no help"
        assert "(default: " in action.help, f"{action.option_strings}: no default in help"


def test_help_prints_every_flag_with_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(environ={}).parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    for flag in ("--host", "--port", "--temp", "--top-k", "--log-level"):
        assert flag in out
    assert "port to listen on (default: 8080) [env LLAMA_ARG_PORT]" in out
    assert "(default: info) [env MLXCEL_LOG_LEVEL]" in out


def test_ttl_helps_describe_a_time_not_entries() -> None:
    for flag in ("--responses-store-ttl-secs", "--conversation-store-ttl-secs"):
        text = _flag_actions()[flag].help
        assert "entries" not in text and "seconds" in text, text


@pytest.mark.parametrize("word", ["1", "true", "ON", "yes", "enabled"])
def test_boolean_variables_true(word: str) -> None:
    assert env_bool("X", word) is True


@pytest.mark.parametrize("word", ["0", "false", "Off", "no", "disabled"])
def test_boolean_variables_false(word: str) -> None:
    assert env_bool("X", word) is False


def test_an_unreadable_variable_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SettingError):
        env_bool("X", "maybe")
    for env in ({"LLAMA_ARG_ENDPOINT_METRICS": "maybe"}, {"LLAMA_ARG_PORT": "eighty"},
                {"LLAMA_ARG_POOLING": "max"}, {"MLXCEL_MAX_QUEUE": "two"}):
        with pytest.raises(SystemExit) as info:
            build_parser(environ=env).parse_args([])
        assert info.value.code == 2
        assert next(iter(env)) in capsys.readouterr().err


def test_config_defaults_are_the_declared_defaults() -> None:
    args = build_parser(environ={}).parse_args(["--model", "m"])
    config = config_from_args(args)
    assert dataclasses.replace(config, sections={}) == ServerConfig(model="m")
    for family in installed():  # the parsed values of a family's section are its defaults
        for name, kind in family.settings.items():
            assert section(config, name, kind) == kind(), name


def test_an_engine_built_without_arguments_is_the_shipped_engine() -> None:
    """Tests and embedders that build ``EngineConfig(model=...)`` get what mlxcel-server runs
    (4 slots, streams paced at 4 ms), not defaults of their own."""
    args = build_parser(environ={}).parse_args(["--model", "m"])
    shipped = engine_config(args, config_from_args(args))
    assert shipped == EngineConfig(model="m")
    assert (shipped.parallel, shipped.stream_interval_ms) == (4, 16.0)


def test_every_config_field_has_its_setting() -> None:
    assert fields_of("defaults") == {f.name for f in dataclasses.fields(GenerationDefaults)}
    assert fields_of("limits") == {f.name for f in dataclasses.fields(RequestLimits)}
    computed = {"model", "ctx_size", "media", "draft_model", "prompt_lookup", "solo_only"}
    engine_fields = {f.name for f in dataclasses.fields(EngineConfig)}
    assert fields_of("engine") == engine_fields - computed, "an EngineConfig field lacks a flag"
    server_computed = {"defaults", "parallel", "chat_template", "chat_template_kwargs",
                       "limits", "sections"}
    server_fields = {f.name for f in dataclasses.fields(ServerConfig)}
    assert fields_of("server") == server_fields - server_computed
    sections: dict[str, type[Any]] = {}
    for family in installed():  # each family's section dataclass: a setting per field
        sections.update(family.settings)
    assert {o.section for o in OPTIONS if o.section} == set(sections)
    for name, kind in sections.items():
        assert fields_of(name) == {f.name for f in dataclasses.fields(kind)}, name


def test_values_reach_the_engine_clamped() -> None:
    args = build_parser(environ={}).parse_args(
        ["--model", "m", "-np", "0", "--cache-ttl", "5", "--no-cache-prompt",
         "--spec-type", "prompt-lookup", "--media-max-bytes", "0", "--video-max-frames", "1"])
    config = config_from_args(args)
    engine = engine_config(args, config)
    assert (engine.parallel, config.parallel) == (1, 1)
    assert engine.cache_ttl_s == 5.0 and not engine.cache_prompt and engine.prompt_lookup
    assert engine.media.max_bytes == 1 and engine.media.video_max_frames == 2


# The NumPy decode path's settings, gone with the path (issue 38): a usage error, not a no-op.
RETIRED = ["--numpy-decode", "--no-numpy-decode", "--decode-lanes", "--decode-lanes-from",
           "-t", "--threads", "--no-cpu-kernels"]


@pytest.mark.parametrize("flag", RETIRED)
def test_the_numpy_decode_flags_are_refused(flag: str) -> None:
    with pytest.raises(SystemExit):
        build_parser(environ={}).parse_args(["--model", "m", flag, "1"])


def test_every_setting_is_declared_once() -> None:
    flags = [flag for option in OPTIONS for flag in option.all_flags]
    assert len(flags) == len(set(flags))
    env = [name for option in OPTIONS for name in option.env]
    assert len(env) == len(set(env))


def test_configuration_page_is_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "configuration_page", ROOT / "docs" / "hooks" / "configuration.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert page == module.render(), (
        "docs/configuration.md is stale: run `python docs/hooks/configuration.py`")


def test_services_live_in_the_typed_state() -> None:
    """The metrics registry exists when the app is built, before any request; a family's
    services (the Responses store, its workers) are the family's, in ``parts``, and no other
    attribute of ``Services`` names one; nothing but the typed state is kept on the app."""
    from mlxcel.app import create_app
    from mlxcel.bundled import bundled_model_path
    from mlxcel.engine.worker import Engine
    from mlxcel.families.responses.store_config import StoreConfig
    from mlxcel.families.responses.store_service import stores_in

    store = StoreConfig(responses_store_max_entries=7, conversation_store_ttl_secs=9,
                        store_path=":memory:")
    config = ServerConfig(model=str(bundled_model_path()), metrics=True,
                          sections={"responses": store})
    app = create_app(config, Engine(EngineConfig(model=config.model)))
    services = app.state.mlxcel.services
    assert services.parts == {}  # opened by the family's lifespan, or on first use
    stores = stores_in(app.state.mlxcel)
    assert services.parts == {"responses": stores}
    assert stores.responses.limits.max_entries == 7
    assert stores.conversations.limits.ttl_secs == 9
    assert services.metrics is not None
    assert {f.name for f in dataclasses.fields(services)} == {"parts", "metrics"}
    assert set(vars(app.state)["_state"]) == {"mlxcel"}


def test_a_store_path_naming_a_directory_is_refused_before_startup(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(environ={}).parse_args(["--store-path", str(tmp_path)])
    assert "is a directory; name a file in it" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        build_parser(environ={"MLXCEL_STORE_PATH": str(tmp_path)}).parse_args([])
    file = str(tmp_path / "store.sqlite3")
    assert build_parser(environ={}).parse_args(["--store-path", file]).store_path == file
    assert build_parser(environ={}).parse_args(["--store-path", ":memory:"]).store_path == \
        ":memory:"


def test_no_shared_config_field_or_service_names_a_family() -> None:
    """What one family reads is its own section; ``Services`` holds families' parts by name."""
    from mlxcel import families
    from mlxcel.api.state import AppState, Services

    names = {info.name for info in pkgutil.iter_modules(families.__path__)}
    words = names | {name.removesuffix("s") for name in names}
    shared = [f.name for cls in (ServerConfig, Services, AppState)
              for f in dataclasses.fields(cls)]
    named = [field for field in shared if set(field.split("_")) & words or field in words]
    assert named == []
    assert {"audio", "images", "embeddings", "responses"} <= names  # the words are real
