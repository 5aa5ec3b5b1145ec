"""Routing streamed text into reasoning and content as it arrives.

Splits exactly as ``chat.reasoning.split_reasoning`` does on the whole text (leading
whitespace before ``<think>`` dropped, newlines around the reasoning trimmed, newlines
opening the content trimmed), holding back only what could still be part of a tag.
"""

from __future__ import annotations

from typing import Literal

OPEN = "<think>"
CLOSE = "</think>"
Kind = Literal["reasoning", "content"]


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(text), len(tag) - 1), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class ReasoningRouter:
    """Feed text pieces; get ``(kind, text)`` segments. A segment with empty text marks the
    start of a section (so a reasoning block with no text still opens)."""

    def __init__(self, prompt_opens_reasoning: bool) -> None:
        self._mode: Literal["detect", "reasoning", "content"] = (
            "reasoning" if prompt_opens_reasoning else "detect"
        )
        self._buf = ""
        self._lead = True
        self._announced = False

    def feed(self, text: str) -> list[tuple[Kind, str]]:
        self._buf += text
        return self._drain(final=False)

    def finish(self) -> list[tuple[Kind, str]]:
        return self._drain(final=True)

    def _switch(self, mode: Literal["reasoning", "content"], lead: bool) -> None:
        self._mode, self._lead, self._announced = mode, lead, False

    def _emit(self, out: list[tuple[Kind, str]], kind: Kind, text: str) -> None:
        if text or not self._announced:
            out.append((kind, text))
            self._announced = True

    def _drain(self, final: bool) -> list[tuple[Kind, str]]:
        out: list[tuple[Kind, str]] = []
        while True:
            if self._mode == "detect":
                head = self._buf.lstrip()
                if head.startswith(OPEN):
                    self._buf = head[len(OPEN):]
                    self._switch("reasoning", True)
                    continue
                if OPEN.startswith(head) and not final:
                    return out
                self._switch("content", False)
                continue
            if self._lead:
                self._buf = self._buf.lstrip("\n")
                if not self._buf and not final:
                    return out
                self._lead = False
            if self._mode == "content":
                if self._buf or final:
                    self._emit(out, "content", self._buf)
                self._buf = ""
                return out
            if not self._reasoning_step(out, final):
                return out

    def _reasoning_step(self, out: list[tuple[Kind, str]], final: bool) -> bool:
        """Emit what is safe; True when the block closed and content follows."""
        index = self._buf.find(CLOSE)
        if index >= 0:
            self._emit(out, "reasoning", self._buf[:index].rstrip("\n"))
            self._buf = self._buf[index + len(CLOSE):]
            self._switch("content", True)
            return True
        if final:
            self._emit(out, "reasoning", self._buf.rstrip("\n"))
            self._buf = ""
            return False
        keep = _partial_suffix(self._buf, CLOSE)
        safe = self._buf[: len(self._buf) - keep]
        text = safe.rstrip("\n")
        self._emit(out, "reasoning", text)
        self._buf = safe[len(text):] + self._buf[len(safe):]
        return False
