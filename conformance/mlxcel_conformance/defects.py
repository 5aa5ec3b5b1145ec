"""Distinct defects: a run's FAILs grouped by check and cause.

A FAIL is a feature's verdict; a defect is what the server does wrong. Several features may
fail for one defect (two shape features judging one missing key; three goldens whose streams
break the same event rule), and one feature may fail for several (its parameter cases). Each
failing test's failure becomes one defect entry: its ``key`` is the check and the cause, where
the cause is what the check names (``evidence["defect"]``, set where a check speaks for another:
a golden whose diff came from an event state machine counts under that machine's check) or the
failure's message with positions and measured figures left out (``chunk 3`` and ``chunk 5``
are one cause, and so are ``p99 259 ms`` and ``p99 149 ms`` from two passes; a wrong status is
its status, whatever bad input showed it).

One defect, one FAIL: the key is the root cause, not where it showed. The family (a route, or a
client like the OpenAI SDK) is left out of it, so llama-server's 500 on malformed JSON is one
defect whether chat, Responses or Messages met it, and each defect lists every (family,
feature) that saw it (`Defect.also_seen`). Checks that judge one property in several forms
share a root-cause key (`ROOT_CAUSES`: chat and completion bodies; the contract view of a
golden and the schema check of a feature), and ids and positions are left out of causes. A
transport failure's cause still names the request it happened on.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

KEY_LIMIT = 300

# Checks that judge one property in different forms: their causes share the key on the right.
ROOT_CAUSES: dict[str, str] = {
    "chat_completion_body": "openai_body",
    "completion_body": "openai_body",
    "chat_chunk_object": "openai_chunk",
    "completion_chunk_order": "openai_chunk",
    "schema_conformance": "schema",
    "field_parity": "keys",
    "field_parity_current": "keys",
}
# A golden's contract-view diff is the schema check's finding on the same event or body.
_FORMS = (
    (re.compile(r"^golden: event N: "), "schema: "),
    (re.compile(r"^golden: body"), "schema: body"),
    (re.compile(r"^schema: (?:GET|POST|DELETE) \S+ (?:\d{3}: )?(?:event N: )?"), "schema: "),
)
_REQUIRED_IN_UNION = re.compile(
    r"^(schema: /[\w/]*): .* is not valid under any of the given schemas \(('[^']+') is a "
    r"required property\)$")
# A body that is not JSON, whichever form found it (the check, a golden, the SDK's decoder): one
# cause per family, since a route that answers no JSON at all says nothing of the others.
_NOT_JSON = re.compile(r"^(?:json_body: response body is not JSON|JSONDecodeError: |"
                       r"schema: body: expected JSON, got text)")
# Server-made ids (tool call ids, message ids) say nothing about the cause.
_IDS = re.compile(r"(['\"])[A-Za-z0-9_-]{16,}\1")
_POSITIONS = (
    (re.compile(r"\b(chunk|chunks|event|events|choice|item|block|index|line|column|char)"
                r" \d+\b"), r"\1 N"),
    (re.compile(r"\[\d+\]"), "[N]"),
    (re.compile(r"/\d+(?=/|:|\s|$)"), "/N"),
    # a measurement (a time, a size, a share), whichever run measured it
    (re.compile(r"(?<![\w.])-?\d+(?:\.\d+)? ?(s|ms|µs|us|MiB|KiB|GiB|MB|kB|KB|%)(?![\w%])"),
     r"N \1"),
    (re.compile(r"\b([a-z_]+)=\d+\b"), r"\1=N"),  # the value a case sent: logprobs=1, =5
)


# One defect in two families: a stream that reports reasoning (a Responses `reasoning` item, a
# Messages `thinking` block) that the same request's non-streamed answer does not have (vllm-mlx
# 0.6.0 parses reasoning only while streaming).
STREAM_ADDS_REASONING = ("stream_vs_body: the stream reports a reasoning block that the "
                         "non-streamed answer to the same request does not have")
REASONING_KINDS = frozenset({"reasoning", "thinking", "redacted_thinking"})


def stream_adds_reasoning(streamed: list[Any], non_streamed: list[Any]) -> str | None:
    """``STREAM_ADDS_REASONING`` when the streamed item kinds are the non-streamed ones plus
    reasoning, else None (the kinds differ some other way)."""
    added = [k for k in streamed if k in REASONING_KINDS]
    rest = [k for k in streamed if k not in REASONING_KINDS]
    if added and rest == non_streamed and not REASONING_KINDS & set(non_streamed):
        return STREAM_ADDS_REASONING
    return None


# A body or chunk whose `object` is another route's (mlx-lm's usage chunk says
# "chat.completion" on /v1/chat/completions and on /v1/completions alike): the wrong value is the
# cause, whichever object the route expected and whichever form (schema check, SDK) found it.
_OBJECT_EXPECTED = re.compile(r"^/object: '[^']*' was expected$")


def wrong_object(finding: str, got: Any) -> str | None:
    """The defect of a schema ``finding`` that is only the wrong ``object`` value ``got``."""
    if not (_OBJECT_EXPECTED.match(finding) and isinstance(got, str)):
        return None
    return f"schema: /object is {got!r}, another route's object"


def normalize(text: str) -> str:
    """``text`` with positions and measurements (times, sizes, shares) replaced by N: the
    cause, not the instance."""
    for pattern, replacement in _POSITIONS:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())[:KEY_LIMIT]


def refusal(status: int, text: str) -> str:
    """The cause of an unexpected status: the status and what the server said (its error
    message), so one refusal shown by two features is one defect and two are two."""
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    error = body.get("error", body.get("detail")) if isinstance(body, dict) else body
    if isinstance(error, dict):
        error = error.get("message", error)
    said = " ".join(str(error).split())[:160]
    return f"http_status: HTTP {status}: {said}" if said else f"http_status: HTTP {status}"


def root_cause(cause: str) -> str:
    """``cause`` ("check: what") under its check's root-cause key, in one form whichever
    feature showed it, positions and ids left out."""
    name, sep, rest = cause.partition(": ")
    if sep and name in ROOT_CAUSES:
        cause = f"{ROOT_CAUSES[name]}: {rest}"
    cause = normalize(_IDS.sub(r"\1<id>\1", cause))
    for pattern, replacement in _FORMS:
        cause = pattern.sub(replacement, cause)
    # a union member that lacks a required key: the key, not the object's text (which an SDK's
    # validation error, the other form of the finding, does not repeat)
    return _REQUIRED_IN_UNION.sub(r"\1: \2 is a required property", cause)


# A 500 for bad input is the server answering its own exception for a request it should have
# refused. Every body that breaks the request's schema (malformed JSON, a wrong type, a missing
# field) on any route is one cause: the server reads the body without validating it first
# (llama-server's ex_wrapper answers 500 for every JSON exception, tools/server/server.cpp). An
# image a text-only model cannot read is another: a valid request of a capability the model
# lacks, answered 500 on whichever route (chat's error check, the other families'
# ``no_server_error``).
_CRASH = "error_status: HTTP 500 for a client error"
_CASE = re.compile(r"\(([^()]+)\)\s*$")
IMAGE_CRASH = f"{_CRASH}: an image the model cannot read [input: image]"
_IMAGE_500 = re.compile(r"^no_server_error: a valid PNG image answered HTTP 5\d\d")


def _crash_input(message: str, evidence: Mapping[str, Any]) -> str:
    found = _CASE.search(message)
    case = evidence.get("case")
    said = found.group(1) if found is not None else case if isinstance(case, str) else ""
    return " [input: image]" if "image" in said.lower() else " [input: an invalid body]"


# An SDK's status error (openai's and anthropic's ``_make_status_error_from_response``:
# ``BadRequestError: Error code: 400 - {...}``, the body the repr of the JSON it parsed) is the
# refusal it met, keyed as the HTTP checks key it (``refusal``): one 422 handler met by a route's
# check, its golden and an SDK round trip is one defect.
_SDK_STATUS = re.compile(r"^[A-Za-z]+Error: Error code: (\d{3})(?: - (.*))?$", re.DOTALL)


def _sdk_refusal(message: str) -> str | None:
    found = _SDK_STATUS.match(message)
    if found is None:
        return None
    said = found.group(2) or ""
    try:
        said = json.dumps(ast.literal_eval(said))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass  # not the repr of a parsed body: its text, as the server sent it
    return refusal(int(found.group(1)), said)


def route_family(family: str, feature: str = "") -> str:
    """The route family a feature exercised: an SDK round trip's (``sdk-openai.models``:
    ``models``) is the route the SDK called, so its finding counts with that route's checks."""
    if family.startswith("sdk-") and feature.startswith(f"{family}."):
        return feature.removeprefix(f"{family}.").split(".", 1)[0]
    return family


def entry(check: str, message: str, evidence: Mapping[str, Any],
          family: str = "", feature: str = "") -> dict[str, str]:
    """The defect of one failing test of ``family``; the family (a route or a client) is not
    part of the key: one cause on two routes is one defect, seen twice."""
    return entries(check, message, evidence, family, feature)[0]


def entries(check: str, message: str, evidence: Mapping[str, Any],
            family: str = "", feature: str = "") -> list[dict[str, str]]:
    """The defects of one failing test: one, or one per cause where the check names several
    (``evidence["defect"]`` a list: a golden whose stream breaks two rules)."""
    named = evidence.get("defect")
    causes = [c for c in named if isinstance(c, str) and c] if isinstance(named, list) else \
        [named] if isinstance(named, str) and named else []
    if not causes:
        cause = _sdk_refusal(message) or f"{check}: {message}"
        request = evidence.get("request")
        if evidence.get("transport_error") and isinstance(request, str):
            cause = f"{check} on {request.split('?')[0]}: {message}"
        causes = [cause]
    found = []
    for cause in causes:
        key = root_cause(cause)
        if _NOT_JSON.match(key):
            key = f"not_json: [{route_family(family, feature)}] the body is not JSON"
        if _IMAGE_500.match(key):
            key = IMAGE_CRASH
        elif key.startswith(_CRASH) and key != IMAGE_CRASH:
            key = key.split(" [input: ", 1)[0] + _crash_input(message, evidence)
            if key.endswith("[input: image]"):
                key = IMAGE_CRASH
        # one test, several causes: each defect reads as its own cause, not the whole message
        said = message if len(causes) == 1 else cause.removeprefix("golden: ")
        found.append({"key": key, "check": check, "message": said[:KEY_LIMIT],
                      "source": str(evidence.get("source") or ""), "family": family})
    return found


@dataclass
class Defect:
    """One distinct defect of a run and the features it fails."""

    key: str
    message: str
    source: str
    checks: list[str] = field(default_factory=list)
    features: list[tuple[str, str]] = field(default_factory=list)  # (family, feature)

    @property
    def families(self) -> list[str]:
        """The routes and clients that met the defect, in the order first seen."""
        return list(dict.fromkeys(family for family, _ in self.features))

    def also_seen(self, family: str, feature: str) -> list[tuple[str, str]]:
        """Where else the defect was seen than (family, feature): the FAIL row of the defect
        lists these instead of repeating it."""
        return [where for where in self.features if where != (family, feature)]


def fail_rows(records: Iterable[Mapping[str, Any]]) -> list[tuple[Defect, tuple[str, str]]]:
    """One FAIL row per defect: the defect and the (family, feature) that first showed it;
    the rest are ``defect.also_seen(*where)``. The records themselves keep every observation."""
    return [(defect, defect.features[0]) for defect in distinct(records) if defect.features]


@dataclass
class RowRole:
    """What a failing feature's row shows in a matrix of one FAIL per defect.

    ``shown``: the defects (numbered as in the run's list) whose FAIL row this feature is, the
    first that showed them; ``counted_at``: for each other defect it saw, its number and the
    (family, feature) whose row counts it. A row with nothing ``shown`` is a repeat: it names
    where its defects are counted instead of failing again."""

    shown: list[tuple[int, Defect]] = field(default_factory=list)
    counted_at: list[tuple[int, tuple[str, str]]] = field(default_factory=list)

    @property
    def repeat(self) -> bool:
        return not self.shown

    def also_seen(self, family: str, feature: str) -> list[tuple[str, str]]:
        """Every other (family, feature) that saw the defects this row shows."""
        return list(dict.fromkeys(where for _, defect in self.shown
                                  for where in defect.also_seen(family, feature)))


def row_roles(found: list[Defect]) -> dict[tuple[str, str], RowRole]:
    """Each failing (family, feature)'s role, given the run's ``distinct`` defects."""
    roles: dict[tuple[str, str], RowRole] = {}
    for number, defect in enumerate(found, 1):
        if not defect.features:
            continue
        first, *others = defect.features
        roles.setdefault(first, RowRole()).shown.append((number, defect))
        for where in others:
            roles.setdefault(where, RowRole()).counted_at.append((number, first))
    return roles


def distinct(records: Iterable[Mapping[str, Any]]) -> list[Defect]:
    """The distinct defects of a run's FAIL records (dicts as in ``conformance.json``), in the
    order first seen; a record written before defects were kept counts as one defect."""
    found: dict[str, Defect] = {}
    for record in records:
        if record.get("verdict") != "FAIL":
            continue
        seen = record.get("defects") or entries(
            (record.get("checks") or ["?"])[-1], str(record.get("message", "")),
            record.get("evidence") or {}, str(record.get("family", "")),
            str(record.get("feature", "")))
        for item in seen:
            defect = found.setdefault(item["key"], Defect(item["key"], item["message"],
                                                          item["source"]))
            if item["check"] not in defect.checks:
                defect.checks.append(item["check"])
            where = (str(record.get("family")), str(record.get("feature")))
            if where not in defect.features:
                defect.features.append(where)
    return list(found.values())
