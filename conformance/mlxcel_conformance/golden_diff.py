"""Readable golden diffs: the lines of ``goldens.compare_transcripts`` as expected/got pairs.

``compare_transcripts`` returns one line per difference (``body.error: expected object, got
string ("...")``). A person reading a FAIL against a peer wants, per case, each path with what
the golden holds and what the server sent, aligned; this module turns the lines into that block
for the test's failure message, the report's evidence and the terminal summary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The shapes of compare_exact / compare_shape / compare_transcripts lines, most specific first.
_PATTERNS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"^(?P<path>.+?): missing \(expected (?P<exp>.*)\)$"), "{exp}", "(absent)"),
    (re.compile(r"^(?P<path>.+?): missing$"), "(present)", "(absent)"),
    (re.compile(r"^(?P<path>.+?): unexpected \(got (?P<got>.*)\)$"), "(absent)", "{got}"),
    (re.compile(r"^(?P<path>.+?): expected a non-empty list$"), "a non-empty list", "[]"),
    (re.compile(r"^(?P<path>.+?): expected an empty list$"), "[]", "a non-empty list"),
    (re.compile(r"^(?P<path>event order): expected (?P<exp>\[.*?\]), got (?P<got>\[.*\])$"),
     "{exp}", "{got}"),
    (re.compile(r"^(?P<path>.+?): expected (?P<exp>.*?), got (?P<got>.*)$"), "{exp}", "{got}"),
)


@dataclass(frozen=True)
class DiffLine:
    """One difference: where, what the golden holds, what the server sent."""

    path: str
    expected: str
    got: str


def parse_line(line: str) -> DiffLine:
    """Split one ``compare_transcripts`` line; a line of unknown shape keeps its text whole."""
    for pattern, expected, got in _PATTERNS:
        match = pattern.match(line)
        if match:
            groups = match.groupdict()
            return DiffLine(groups["path"], expected.format(**groups), got.format(**groups))
    return DiffLine(line, "", "")


def format_case(case: str, mode: str, diffs: list[str], *, indent: str = "  ") -> str:
    """The block printed for one failing golden case::

        golden chat/error_malformed_json (shape mode): 1 difference
          status
            - expected: 400
            + got:      500
    """
    plural = "" if len(diffs) == 1 else "s"
    lines = [f"golden {case} ({mode} mode): {len(diffs)} difference{plural}"]
    for diff in map(parse_line, diffs):
        lines.append(f"{indent}{diff.path}")
        if diff.expected or diff.got:
            lines.append(f"{indent}  - expected: {diff.expected}")
            lines.append(f"{indent}  + got:      {diff.got}")
    return "\n".join(lines)
