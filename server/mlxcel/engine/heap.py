"""The garbage collector's settings for a serving process: the heap after the model load
frozen, young collections rarer (``settle_heap``)."""

from __future__ import annotations

import gc

GC_YOUNG_THRESHOLD = 50_000


def settle_heap() -> None:
    """Move everything alive after the model load out of the garbage collector's sight.

    The libraries a model load imports leave millions of long-lived objects, and every
    full collection walked all of them: one took ~0.4 s here during an 8-stream run, with the
    GIL held, so every stream stalled. Frozen objects are never scanned again (they are still
    freed by reference counting); only what requests allocate is.

    With the heap frozen, the collector's rule for a full collection (a quarter more
    long-lived objects than the last one left) fires on nearly nothing, and a request that
    keeps a hundred thousand objects alive (``n_probs`` over a vocabulary) set off a full
    collection of them every few thousand allocations, 20-40 ms each with the GIL held. So
    the youngest generation is collected every ``GC_YOUNG_THRESHOLD`` allocations instead of
    700 (cycles still freed; a young collection over that many objects ~5 ms).
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)
