"""Golden transcripts: record, normalize, and replay in two modes.

``exact``: the same fixture model answers; after normalization (ids, timestamps, fingerprints,
model names) the transcript must be identical, text and token counts included; fractional numbers
(logprobs, embeddings) within a relative or absolute 1e-4, since the last bits of a float depend
on the BLAS and kernels the server runs on, not on what it does: a logprob near 0 is a difference
of two logits, and MLX's float32 ones are within 2.4e-5 of a float64 reference, so two
builds summing in another order (another BLAS, another backend) differ by up to 5e-5 in absolute
terms and by percents in relative ones.
``shape``: any server; structure, JSON types, status codes and the order of stream event kinds
must match, while text and counts may differ; what every plain answer of the route carries is
left to the body and parity features (``golden_base``). Both modes return readable diffs. A body
served as text (``text/plain``, subtitles) is kept as ``body_text`` and compared line by line in
exact mode. A binary body (speech audio: ``audio/*``, ``image/*``, ``application/octet-stream``) is
kept as ``body_binary``, its SHA-256 digest and length, not its bytes: exact mode compares both,
shape mode only the content type (``golden_binary``). Goldens recorded on a capability's own
fixture (``vision``, ``audio``, ``images``) are replayed by that family behind its probe
(``family_goldens``, which can also narrow to one fixture: Whisper's and Kokoro's goldens are
both ``audio``), not by the general replay.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from . import spec
from .checks.anthropic_events import check_anthropic_stream
from .checks.contract_edges import BAD_INPUT, judge_leniency, judge_refusal
from .checks.errors_checks import status_problem
from .checks.openai_common import USAGE_ON_CHOICES, is_int, is_number
from .checks.registry import REGISTRY, check, fail
from .checks.responses_events import CUT_ENDS_COMPLETED, check_responses_stream
from .client import SuiteClient
from .defects import refusal
from .errors import ConformanceFailure, SetupError, Severity
from .golden_base import Case, case_of, is_base, left_to_base
from .golden_binary import binary_summary, compare_binary, is_binary
from .golden_cases import GoldenCase
from .golden_diff import format_case
from .golden_uploads import multipart_request, recorded_multipart
from .sse import parse_sse

FLOAT_REL_TOL, FLOAT_ABS_TOL = 1e-4, 1e-4

VOLATILE = {"id": "<id>", "created": "<created>", "system_fingerprint": "<fingerprint>",
            "model": "<model>", "owned_by": "<owner>",
            # what earlier requests left in the prompt cache decides this one
            "cached_tokens": "<cached_tokens>", "tokens_cached": "<cached_tokens>",
            # Responses / Anthropic: item and call ids, timestamps
            "created_at": "<created>", "completed_at": "<created>", "item_id": "<id>",
            "call_id": "<id>", "tool_use_id": "<id>",
            # llama-server native: wall-clock measurements and the model name in settings
            "timings": "<timings>", "generation_settings": "<settings>",
            # embeddings and rerank: floats that differ in the last bits across backends
            "embedding": "<vector>", "relevance_score": "<score>"}


def goldens_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "_data" / "goldens", here.parents[1] / "goldens"):
        if candidate.is_dir():
            return candidate
    raise SetupError("goldens directory not found (neither installed nor in the repository)")


def normalize(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: VOLATILE[k] if _volatile(k, v) else normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def _volatile(key: str, value: Any) -> bool:
    # An integer id is an index (a transcription segment's), not a generated identifier.
    return key in VOLATILE and value is not None and not (key == "id" and is_int(value))


def send(client: SuiteClient, case: GoldenCase, model: str | None) -> dict[str, Any]:
    """Send the case's request; return the normalized transcript of the response."""
    kwargs: dict[str, Any] = {}
    if case.multipart is not None:
        kwargs = multipart_request(case.multipart, model)
    elif case.raw is not None:
        kwargs = {"content": case.raw.encode(), "headers": {"Content-Type": "application/json"}}
    elif case.json is not None:
        payload = dict(case.json)
        if case.method == "POST" and case.path.startswith("/v1/") and model is not None:
            payload.setdefault("model", model)
        kwargs = {"json": payload}
    with client.http.stream(case.method, case.path, **kwargs) as response:
        content = response.read()
        content_type = response.headers.get("content-type", "").split(";")[0]
        status = response.status_code
    transcript = {"status": status, "content_type": content_type,
                  **_body(content_type, content)}
    transcript[RAW] = content.decode("utf-8", errors="replace") if not is_binary(
        content_type) else ""
    return transcript


# The un-normalized answer, kept beside a replayed transcript for the contract-view schema check
# of shape mode; never recorded.
RAW = "_raw"


def _body(content_type: str, content: bytes) -> dict[str, Any]:
    if is_binary(content_type):
        return {"body_binary": binary_summary(content)}
    text = content.decode("utf-8", errors="replace")
    if content_type == "text/event-stream":
        return {"events": [_event(e.event, e.data) for e in parse_sse(text).events]}
    if _is_text(content_type):
        return {"body_text": text}
    try:
        return {"body": normalize(json.loads(text))}
    except ValueError:
        return {"body_text": text}


def _is_text(content_type: str) -> bool:
    """A body the server serves as text (a transcript, subtitles), never parsed as JSON."""
    return content_type.startswith("text/") or content_type == "application/x-subrip"


def _event(name: str | None, data: str) -> Any:
    try:
        payload = normalize(json.loads(data))
    except ValueError:
        payload = data
    return {"event": name, "data": payload} if name else payload


def document(case: GoldenCase, transcript: dict[str, Any]) -> dict[str, Any]:
    transcript = {k: v for k, v in transcript.items() if k != RAW}
    request: dict[str, Any] = {"method": case.method, "path": case.path}
    if case.json is not None:
        request["json"] = case.json
    if case.raw is not None:
        request["raw"] = case.raw
    if case.multipart is not None:
        request["multipart"] = recorded_multipart(case.multipart)
    doc: dict[str, Any] = {"case": case.name, "family": case.family, "feature": case.feature}
    if case.fixture is not None:
        doc["fixture"] = case.fixture  # recorded on this fixture, not the default one
    return {**doc, "request": request, "response": transcript}


def case_from_document(doc: dict[str, Any]) -> GoldenCase:
    req = doc["request"]
    return GoldenCase(doc["case"], doc["family"], req["method"], req["path"], req.get("json"),
                      req.get("raw"), stream="events" in doc["response"],
                      fixture=doc.get("fixture"), multipart=req.get("multipart"))


def load_documents() -> list[tuple[Path, dict[str, Any]]]:
    root = goldens_dir()
    return [(p, json.loads(p.read_text())) for p in sorted(root.glob("*/*.json"))]


# Families whose goldens, recorded on the family's own fixture, need a capability the server may
# lack (image input, an audio model, an image model): that family's tests replay them behind its
# probe.
PROBED_FAMILIES = ("vision", "audio", "images")


def replayed_by_family(doc: dict[str, Any]) -> bool:
    return doc["family"] in PROBED_FAMILIES and doc.get("fixture") is not None


def family_goldens(family: str, fixture: str | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """The goldens ``family`` replays behind its own probe (those of ``fixture`` only, if
    given: one family's capabilities may come from different models)."""
    return [(path, doc) for path, doc in load_documents()
            if doc["family"] == family and replayed_by_family(doc)
            and fixture in (None, doc["fixture"])]


def family_golden_params(family: str, fixture: str | None = None) -> list[Any]:
    """``family_goldens`` as pytest parameters, each marked as its own feature."""
    import pytest

    return [pytest.param(doc, id=path.stem, marks=pytest.mark.conformance(
                family=family, feature=doc["feature"]))
            for path, doc in family_goldens(family, fixture)]


def replay_golden(client: SuiteClient, doc: dict[str, Any], model: str | None,
                  mode: str) -> None:
    """Send a golden's request and check the answer against its transcript in ``mode``."""
    got = send(client, case_from_document(doc), model)
    request = (doc["request"]["method"], doc["request"]["path"])
    _judge_contract_edges(doc, got)
    check_golden(doc["response"], got, mode, f"{doc['family']}/{doc['case']}", request)


def _judge_contract_edges(doc: dict[str, Any], got: dict[str, Any]) -> None:
    """A golden answered where the contract ends (checks/contract_edges.py): a clean refusal
    of an optional field is UNSUPPORTED, an invalid request accepted is LENIENT."""
    expected, status = doc["response"]["status"], got.get("status")
    if not isinstance(status, int):
        return
    if expected == 200:
        judge_refusal(doc["request"]["path"], doc["request"].get("json"), status,
                      str(got.get(RAW) or ""))
    elif expected in BAD_INPUT:
        judge_leniency(status, expected, doc["case"])


def write_document(root: Path, doc: dict[str, Any]) -> Path:
    path = root / doc["family"] / f"{doc['case']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False) + "\n")
    return path


# -- comparison ----------------------------------------------------------------------------

def compare_exact(expected: Any, got: Any, path: str = "$") -> list[str]:
    if type(expected) is not type(got) and not (is_number(expected) and is_number(got)):
        return [f"{path}: expected {_short(expected)}, got {_short(got)}"]
    if isinstance(expected, dict):
        diffs = [f"{path}.{k}: missing (expected {_short(expected[k])})"
                 for k in expected if k not in got]
        diffs += [f"{path}.{k}: unexpected (got {_short(got[k])})" for k in got
                  if k not in expected]
        for k in expected:
            if k in got:
                diffs += compare_exact(expected[k], got[k], f"{path}.{k}")
        return diffs
    if isinstance(expected, list):
        if len(expected) != len(got):
            return [f"{path}: expected {len(expected)} items, got {len(got)}"] + (
                compare_exact(expected[: len(got)], got[: len(expected)], path)
            )
        return [d for i, (e, g) in enumerate(zip(expected, got, strict=True))
                for d in compare_exact(e, g, f"{path}[{i}]")]
    if isinstance(expected, float) and isinstance(got, float) and (
            _is_fraction(expected) or _is_fraction(got)):
        close = math.isclose(expected, got, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL)
        return [] if close else [f"{path}: expected {_short(expected)}, got {_short(got)}"]
    return [] if expected == got else [f"{path}: expected {_short(expected)}, got {_short(got)}"]


def _is_fraction(value: Any) -> bool:
    return isinstance(value, float) and not value.is_integer()


def compare_shape(expected: Any, got: Any, path: str = "$", root: Any = None,
                  at: tuple[Any, ...] = (), case: Case | None = None) -> list[str]:
    """Structure without the reference's own choices: the JSON kind of every key both sides
    carry. Which keys must be present is the public contract's business, checked on the raw
    answer against the contract view of the spec (``contract_diffs``): a key the reference
    happens to send (``system_fingerprint``, ``reasoning_content``, a tool argument the model
    chose) is no requirement of another server. With ``root`` (``got`` as a whole), a key of a
    base object (``golden_base``) is left to the body and parity features."""
    if expected is None or got is None:
        return []  # a null says nothing about the type the field may take
    if _kind(expected) != _kind(got):
        if root is not None and at and is_base(root, at, case):
            return []
        return [f"{path}: expected {_kind(expected)}, got {_kind(got)} ({_short(got)})"]
    if isinstance(expected, dict):
        return [d for k in expected if k in got
                for d in compare_shape(expected[k], got[k], f"{path}.{k}", root, (*at, k), case)]
    if isinstance(expected, list) and expected and got:
        return compare_shape(expected[0], got[0], f"{path}[0]", root, (*at, 0), case)
    return []


def _state_machine_diffs(path: str, events: Any) -> list[str]:
    machine = {"/v1/responses": check_responses_stream,
               "/v1/messages": check_anthropic_stream}.get(path)
    if machine is None:
        return []
    try:
        machine(events)
    except ConformanceFailure as failure:
        # a rule the machine names as one defect in several forms (a cut response reported
        # completed) is that defect here too, so the golden and the feature count once
        named = failure.evidence.get("defect")
        return [named if isinstance(named, str) and named.startswith(f"{failure.check}: ")
                else f"{failure.check}: {failure.message}"]
    return []


def _typed(events: list[Any]) -> bool:
    return bool(events) and isinstance(events[0], dict) and "event" in events[0]


def contract_diffs(method: str, path: str, got: dict[str, Any],
                   expected: dict[str, Any] | None = None) -> list[str]:
    """The raw answer against the contract view of the spec (required keys, types) and, for a
    named-event stream, against its family's event state machine; what the base features judge
    (and, given the ``expected`` transcript, what is foreign to its case) is left out."""
    ignore = left_to_base(None if expected is None else case_of(
        expected.get("events", expected.get("body"))))
    raw = got.get(RAW)
    if not raw or got.get("content_type") not in ("application/json", "text/event-stream"):
        return []
    if got["content_type"] == "text/event-stream":
        events = parse_sse(raw).events
        diffs = [f"event {i}: {error}" for i, event in enumerate(events)
                 for error in spec.validate_sse_event(method, path, event.data, event.event,
                                                      ignore=ignore)[:1]][:5]
        # the event order is judged whatever the schema found: one finding never hides another
        return diffs + _state_machine_diffs(path, events)
    try:
        body = json.loads(raw)
    except ValueError:
        return []
    errors = spec.validate_json(method, path, got["status"], body, ignore=ignore)
    return [f"body{error}" for error in errors if "is not documented" not in error][:5]


def event_kinds(events: list[Any]) -> list[str]:
    """A stream as a sequence of event kinds, consecutive content deltas collapsed. A role-only
    chunk is left out: the real API sometimes sends the role with the first delta instead, and
    `chat_first_chunk_role` checks the role on its own."""
    kinds: list[str] = []
    for event in events:
        kind = _event_kind(event)
        if kind in UNORDERED:
            continue
        repeated = kind == "content" or kind.endswith("delta")  # named delta events too
        if not (repeated and kinds and kinds[-1] == kind):
            kinds.append(kind)
    return kinds


# Events whose place the contract leaves open: the role-only chunk (the real API may send the role
# with the first delta; mlx-lm sends it in every delta) and Anthropic's ping (any number,
# anywhere after message_start). `chat_first_chunk_role` and the event-order checks judge them.
UNORDERED = frozenset({"role", "ping"})


# The usage chunk's own rule, when the stream's order differs only because the server sent the
# usage on a chunk that still has choices: that check's finding, which the order diff follows.
USAGE_FOLDED = USAGE_ON_CHOICES


def _usage_folded(want: list[Any], have: list[Any]) -> list[str]:
    kinds = event_kinds(have)
    folded = any(isinstance(e, dict) and e.get("usage") and e.get("choices") for e in have)
    return [USAGE_FOLDED] if "usage" in event_kinds(want) and "usage" not in kinds and folded \
        else []


def _event_kind(event: Any) -> str:
    if event == "[DONE]":
        return "done"
    if isinstance(event, dict) and "event" in event and "data" in event:
        return str(event["event"])
    if not isinstance(event, dict):
        return "other"
    if "error" in event:
        return "error"
    if isinstance(event.get("type"), str):  # unnamed typed events (speech.audio.delta, ...)
        return str(event["type"])
    if isinstance(event.get("stop"), bool) and "content" in event:  # llama-server native
        return "finish" if event["stop"] else "content"
    choices = event.get("choices")
    if choices == [] and event.get("usage"):
        return "usage"
    if not choices:
        return "other"
    choice = choices[0]
    if choice.get("finish_reason"):
        return "finish"
    delta = choice.get("delta") or {}
    if delta.get("role") and not (delta.get("content") or delta.get("tool_calls")):
        return "role"
    return "content"


def compare_transcripts(expected: dict[str, Any], got: dict[str, Any], mode: str) -> list[str]:
    diffs: list[str] = []
    if expected["status"] != got["status"]:
        diffs.append(f"status: expected {expected['status']}, got {got['status']}")
    if expected.get("content_type") != got.get("content_type"):
        diffs.append(f"content-type: expected {expected.get('content_type')}, "
                     f"got {got.get('content_type')}")
    if diffs:
        return diffs
    if "events" in expected:
        want, have = expected["events"], got.get("events", [])
        if mode == "exact":
            return compare_exact(want, have, "events")
        if _typed(want):
            # Named-event streams (Responses, Messages): their public contract is a state
            # machine (checked on the raw stream by ``contract_diffs``), which allows more
            # than the reference's one order (items with or without content-part events);
            # here only how the stream ended must agree.
            ends = [event_kinds(events)[-1:] for events in (want, have)]
            if ends[0] != ends[1] and not cut_where_completed(ends[0], have):
                if (ends[0], ends[1]) == (["response.incomplete"], ["response.completed"]):
                    return [CUT_ENDS_COMPLETED]
                return [f"terminal event: expected {ends[0]}, got {ends[1]}"]
        elif event_kinds(want) != event_kinds(have):
            order = f"event order: expected {event_kinds(want)}, got {event_kinds(have)}"
            return [*_usage_folded(want, have), order]
        firsts = {k: e for e, k in reversed([(e, _event_kind(e)) for e in want])
                  if k not in UNORDERED}
        gots = {k: e for e, k in reversed([(e, _event_kind(e)) for e in have])}
        case = case_of(want)
        return [d for k in firsts for d in compare_shape(
            firsts[k], gots.get(k), f"event:{k}", *_rooted(gots.get(k), mode), case)]
    if "body_binary" in expected:
        return compare_binary(expected["body_binary"], got, mode)
    if "body" in expected and "body" not in got:
        return [f"body: expected JSON, got text {_short(got.get('body_text', ''))}"]
    if "body_text" in expected:
        return _compare_text(expected["body_text"], got, mode)
    if mode == "exact":
        return compare_exact(expected.get("body"), got.get("body"), "body")
    return compare_shape(expected.get("body"), got.get("body"), "body", got.get("body"), (),
                         case_of(expected.get("body")))


def cut_where_completed(expected_end: list[str], events: list[Any]) -> bool:
    """Whether a Responses stream whose golden completed ended ``response.incomplete`` because
    it reached ``max_output_tokens``: a model that says more than the fixture did stops at the
    limit the request set, which Open Responses makes an ``incomplete`` response (status and
    ``incomplete_details.reason``, https://www.openresponses.org/specification, "Response
    object"). That answer is cut, not wrong: what a completed one must carry is inconclusive."""
    if expected_end != ["response.completed"] or not events:
        return False
    last = events[-1]
    data = last.get("data") if isinstance(last, dict) and "event" in last else last
    if not isinstance(data, dict) or data.get("type") != "response.incomplete":
        return False
    details = (data.get("response") or {}).get("incomplete_details") or {}
    return isinstance(details, dict) and details.get("reason") == "max_output_tokens"


def _rooted(event: Any, mode: str) -> tuple[Any, tuple[Any, ...]]:
    """Where ``compare_shape`` starts in a streamed event: at its data (named events keep it
    under ``data``), so base objects are found from the event's root."""
    if mode == "exact" or not isinstance(event, dict):
        return None, ()
    return (event, ("data",)) if "event" in event and "data" in event else (event, ())


def _compare_text(expected: str, got: dict[str, Any], mode: str) -> list[str]:
    if "body_text" not in got:
        return [f"body_text: expected text, got JSON {_short(got.get('body'))}"]
    if mode == "exact":
        return compare_exact(expected.splitlines(), got["body_text"].splitlines(), "body_text")
    if bool(expected.strip()) != bool(got["body_text"].strip()):
        return [f"body_text: expected {'a non-empty' if expected.strip() else 'an empty'} text"]
    return []


@check(
    "golden_transcript",
    severity=Severity.MEDIUM,
    description="The response matches its golden transcript (exact or shape mode)",
)
def check_golden(
    expected: dict[str, Any], got: dict[str, Any], mode: str, case: str = "case",
    request: tuple[str, str] | None = None,
) -> None:
    """``request`` (method, path): in shape mode, the raw answer is also held to the contract
    view of the spec, which says which keys are required."""
    diffs = compare_transcripts(expected, got, mode)
    if not diffs and mode == "shape" and request is not None:
        diffs = contract_diffs(*request, got, expected)
    if diffs:
        # The message carries the whole expected/got block so pytest's failure output reads
        # as a diff; the evidence keeps the raw lines and what the server sent.
        fail(
            "golden_transcript",
            format_case(case, mode, diffs[:40]),
            source=(f"goldens/{case}.json, {mode} mode: " + (
                "the reference's own transcript on its fixture" if mode == "exact" else
                "status, content type, event order and JSON kinds; required keys from the "
                "public contract (the contract view of openapi/)")),
            mode=mode,
            case=case,
            defect=_defect(case, diffs, expected["status"], got.get("status"),
                           str(got.get(RAW) or "")),
            diffs=diffs[:40],
            got_status=got.get("status"),
            got=next((got[k] for k in ("body", "events", "body_text", "body_binary")
                      if k in got), None),
        )


def _defect(case: str, diffs: list[str], expected: int, got: int | None,
            raw: str) -> str | list[str]:
    """What a failing golden is about, for the report's distinct defects: a diff another check
    found (the event state machine) is that check's defect, a client error answered with the
    wrong status is ``error_status``'s, and a valid request refused is the refusal (status and
    the server's message, as a behaviour feature's read reports it), so the golden and the
    feature made for it count once; a content type belongs to the case; a body or event diff
    is itself."""
    first = diffs[0]
    named = [d for d in diffs if d.split(":", 1)[0] in REGISTRY]
    if named:
        # each rule a named check judges is its defect; the diffs no check names are one more,
        # except a chat stream's order diff, which follows the named rule that broke it
        rest = [d for d in diffs if d not in named and not d.startswith("event order:")]
        causes = [*named, *(["golden: " + "; ".join(rest[:3])] if rest else [])]
        return causes[0] if len(causes) == 1 else causes
    if first.startswith("status") and expected >= 400 and got is not None:
        return f"error_status: {status_problem(got, {expected})}"
    if first.startswith("status") and got is not None:
        return refusal(got, raw)
    if first.startswith(("status", "content-type")):
        return f"golden {case.rsplit('/', 1)[-1]}: " + "; ".join(diffs[:3])
    return "golden: " + "; ".join(diffs[:3])


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    return {dict: "object", list: "array", str: "string", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."
