"""The opening of a tool call (``{"name": "f", "arguments":``, ``NAME[ARGS]``,
``<function=NAME>``) matched as it streams in, each character read once.

A format's whole-body ``stream_head`` matches an anchored regular expression against the whole
block on every token; while the block grows that re-reads it each time. A ``HeadPattern`` is
the same expression written as steps (``Ws``, ``Lit``, ``Opt``, ``Alt``, ``Run``,
``JsonName``), and a ``HeadMatcher`` walks them one character at a time, remembering where it
is, so it knows after each piece whether the opening has matched, can still match, or never
will (h11's ``_receivebuffer.py`` keeps how far it searched the same way). Every step ends at a
character the next step must start with, so no backtracking is needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True)
class Ws:
    """Any run of whitespace (``\\s*``: ``str.isspace``)."""


@dataclass(frozen=True)
class Lit:
    """This exact text."""

    text: str


@dataclass(frozen=True)
class Opt:
    """This exact text, or nothing (``str.removeprefix``)."""

    text: str


@dataclass(frozen=True)
class Alt:
    """One of these texts (none a prefix of another)."""

    texts: tuple[str, ...]


@dataclass(frozen=True)
class Run:
    """One or more characters that ``allowed`` accepts, captured."""

    allowed: Callable[[str], bool]


@dataclass(frozen=True)
class JsonName:
    """A JSON string of one or more characters (``"((?:[^"\\\\]|\\\\.)+)"``), captured decoded."""


Step = Ws | Lit | Opt | Alt | Run | JsonName
HeadPattern = Sequence[Step]


class Progress(Enum):
    MORE = "more"
    MATCHED = "matched"
    FAILED = "failed"


class HeadMatcher:
    """One block's walk through a ``HeadPattern``."""

    def __init__(self, pattern: HeadPattern) -> None:
        self._steps = pattern
        self._step = 0
        self._done = 0  # characters of the current step matched so far
        self._escaped = False
        self._capture: list[str] = []
        self.captures: list[str] = []
        self.progress = Progress.MORE if pattern else Progress.MATCHED

    def feed(self, text: str) -> int | None:
        """Read ``text``; once the opening has matched, the index in ``text`` just after it."""
        for i, ch in enumerate(text):
            if self.progress is not Progress.MORE:
                break
            self._push(ch)
            if self.progress is Progress.MATCHED:
                return i + 1
        return None

    def _push(self, ch: str) -> None:
        while self.progress is Progress.MORE:
            step = self._steps[self._step]
            consumed = self._read(step, ch)
            if consumed is None:
                self.progress = Progress.FAILED
                return
            if consumed:
                return
            self._next()  # the step ended just before ``ch``: the next one reads it

    def _next(self) -> None:
        step = self._steps[self._step]
        if isinstance(step, Run):
            self.captures.append("".join(self._capture))
        elif isinstance(step, JsonName):
            try:
                self.captures.append(json.loads('"' + "".join(self._capture) + '"'))
            except ValueError:  # an escape JSON does not know: no name to announce
                self.progress = Progress.FAILED
                return
        self._step += 1
        self._done = 0
        self._capture = []
        if self._step == len(self._steps):
            self.progress = Progress.MATCHED

    def _read(self, step: Step, ch: str) -> bool | None:
        """True: ``ch`` belongs to the step; False: the step ended before it; None: no match."""
        if isinstance(step, Ws):
            return ch.isspace()
        if isinstance(step, Lit | Opt):
            return self._read_text(step, ch)
        if isinstance(step, Alt):
            if not any(t.startswith("".join(self._capture) + ch) for t in step.texts):
                return None
            self._capture.append(ch)
            if "".join(self._capture) in step.texts:
                self._next()
            return True
        if isinstance(step, Run):
            if step.allowed(ch):
                self._capture.append(ch)
                return True
            return False if self._capture else None
        return self._read_name(ch)

    def _read_text(self, step: Lit | Opt, ch: str) -> bool | None:
        if step.text[self._done] == ch:
            self._done += 1
            if self._done == len(step.text):
                self._next()
            return True
        if isinstance(step, Lit):
            return None
        # An optional text that stops matching: what it had read, and ``ch``, go to the next
        # steps (read here, so ``ch`` counts as taken).
        replay = step.text[: self._done] + ch
        self._next()
        for earlier in replay:
            self._push(earlier)
        return True

    def _read_name(self, ch: str) -> bool | None:
        if self._done == 0:
            if ch != '"':
                return None
            self._done = 1
            return True
        if self._escaped:
            if ch == "\n":
                return None
            self._escaped = False
        elif ch == "\\":
            self._escaped = True
        elif ch == '"':
            if not self._capture:
                return None
            self._next()
            return True
        self._capture.append(ch)
        return True
