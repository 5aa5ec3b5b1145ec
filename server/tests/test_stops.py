"""``engine/stops.py``: stop strings split across chunks, checked against a whole-text oracle."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mlxcel.engine.stops import StopMatcher

# A small alphabet makes overlapping and repeated stop strings common.
texts = st.text(alphabet="abc\n", max_size=24)
stop_lists = st.lists(st.text(alphabet="abc\n", max_size=4), max_size=4)


def first_stop(text: str, stops: list[str]) -> tuple[int, str] | None:
    """Where the text is cut and which stop cuts it.

    Generation halts as soon as any stop string is complete, so "first" is the occurrence that
    *ends* first; of those ending together, the longest (it starts first).
    """
    best: tuple[int, int, str] | None = None
    for stop in filter(None, stops):
        pos = text.find(stop)
        if pos != -1 and (best is None or (pos + len(stop), pos) < best[:2]):
            best = (pos + len(stop), pos, stop)
    return None if best is None else (best[1], best[2])


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False)]


def held_suffix(text: str, stops: list[str]) -> int:
    """Length of the longest suffix that is a proper prefix of some stop string."""
    return max(
        (n for s in stops for n in range(1, len(s)) if text.endswith(s[:n])), default=0
    )


def run(chunks: list[str], stops: list[str]) -> tuple[str, StopMatcher]:
    matcher = StopMatcher(tuple(stops))
    out = "".join(matcher.feed(chunk) for chunk in chunks)
    return out + matcher.flush(), matcher


@settings(max_examples=250, deadline=None)
@given(texts, stop_lists, st.lists(st.integers(min_value=0), max_size=8))
def test_released_text_matches_whole_text_oracle(
    text: str, stops: list[str], cuts: list[int]
) -> None:
    out, matcher = run(split(text, cuts), stops)
    hit = first_stop(text, stops)
    if hit is None:
        assert out == text
        assert matcher.matched is None
    else:
        pos, stop = hit
        assert out == text[:pos]
        assert matcher.matched == stop


@settings(max_examples=200, deadline=None)
@given(texts, stop_lists, st.lists(st.integers(min_value=0), max_size=8))
def test_result_does_not_depend_on_chunking(text: str, stops: list[str], cuts: list[int]) -> None:
    chunked, chunked_matcher = run(split(text, cuts), stops)
    whole, whole_matcher = run([text], stops)
    assert chunked == whole
    assert chunked_matcher.matched == whole_matcher.matched


@settings(max_examples=200, deadline=None)
@given(texts, stop_lists, st.lists(st.integers(min_value=0), max_size=8))
def test_holds_back_only_what_could_still_start_a_stop(
    text: str, stops: list[str], cuts: list[int]
) -> None:
    matcher = StopMatcher(tuple(stops))
    fed = released = ""
    for chunk in split(text, cuts):
        released += matcher.feed(chunk)
        fed += chunk
        if matcher.matched is not None:
            break
        assert released == fed[: len(fed) - held_suffix(fed, [s for s in stops if s])]


def test_stop_split_across_chunks_never_leaks() -> None:
    matcher = StopMatcher(("</end>",))
    assert matcher.feed("hello </") == "hello "
    assert matcher.feed("en") == ""
    assert matcher.feed("d> tail") == ""
    assert matcher.matched == "</end>"
    assert matcher.flush() == ""


def test_false_start_is_released_once_it_diverges() -> None:
    matcher = StopMatcher(("STOP",))
    assert matcher.feed("ST") == ""
    assert matcher.feed("x") == "STx"
    assert matcher.matched is None


def test_unfinished_prefix_is_released_by_flush() -> None:
    matcher = StopMatcher(("STOP",))
    assert matcher.feed("abc ST") == "abc "
    assert matcher.flush() == "ST"
    assert matcher.matched is None


def test_stop_that_completes_first_wins_over_one_that_started_first() -> None:
    # "b" is complete after "ab"; generation stops there, before "abc" could ever be seen.
    for chunks in (["abc"], ["ab", "c"], ["a", "b", "c"]):
        out, matcher = run(chunks, ["abc", "b"])
        assert (out, matcher.matched) == ("a", "b"), chunks


def test_of_stops_ending_together_the_longest_wins() -> None:
    out, matcher = run(["xabc"], ["bc", "abc"])
    assert (out, matcher.matched) == ("x", "abc")


def test_nothing_is_released_after_a_match() -> None:
    matcher = StopMatcher(("x",))
    assert matcher.feed("ax") == "a"
    assert matcher.feed("more") == ""
    assert matcher.flush() == ""


def test_no_stops_and_empty_stops_pass_text_through() -> None:
    for stops in ((), ("",)):
        matcher = StopMatcher(stops)
        assert matcher.feed("abc") == "abc"
        assert matcher.flush() == ""
        assert matcher.matched is None
