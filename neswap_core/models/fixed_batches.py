"""Batches of one fixed shape per width, so that a text's vector depends on the text alone (SPEC §2.2, issue 21).

A transformer's matrix products add their terms in an order set by the batch's shape, so the
vector of a text embedded beside other texts differs from its vector embedded alone: by up to
1e-3 in bfloat16, in the last float32 digit (3e-8 on the dev corpus's sentence groups) through
ONNX Runtime. Chunk boundaries, cached vectors and every figure then depended on how a corpus
was batched: which process or Ray actor embedded a text, what the cache already held, and
which of two processes that embedded the same text at once wrote it last.

Every batch of both MiniLM backends (``torch_minilm``, ``onnx_minilm``) therefore has exactly
``BATCH_ROWS`` rows (blank rows, one padding token long, fill the last one) and a width of its
texts' token counts rounded up to ``WIDTH_STEP``: the same text always meets the same shape.
On this 2-core machine the fixed shape costs nothing measurable against length-sorted batches
of 32 (ONNX: 13.1 against 13.2 s for 800 dev sentence groups on one thread) and ~5 % in bf16.

ONNX Runtime runs each text alone at its own length (``ONNX_ROWS``, ``ONNX_STEP``: one row, no
padding; the shape is still the text's own, so the vector still depends on the text alone):
on one thread of the Intel Xeon VM of 2026-12-03 (no bfloat16) that embeds 251 dev passages of
five sentences in 7.0 s against 10.0 s for batches of 8 rows in steps of 16 (2 rows: 7.4 s,
4 rows: 7.8 s) and 800 three-sentence groups in 12.6 against 13.9 s
(``benchmarks/embedding_backends.py --shapes``). bfloat16 keeps 8 rows (16, 32 and 64 were
slower on the bf16 machines, README).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

#: Rows of every batch, and the step its width (in tokens) is rounded up to (bfloat16).
BATCH_ROWS, WIDTH_STEP = 8, 16
#: The same for ONNX Runtime float32: each text alone, unpadded (module docstring).
ONNX_ROWS, ONNX_STEP = 1, 1


def fixed_shape_batches(token_ids: Sequence[Sequence[int]], rows: int = BATCH_ROWS,
                        step: int = WIDTH_STEP) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(idx, ids, lengths)`` of every batch, widest first: ``idx`` the positions of its texts
    (at most ``rows``), ``ids`` the (``rows``, width) token ids padded with 0, width the texts'
    token counts rounded up to ``step``, ``lengths`` each row's real tokens (1 for a blank row:
    one padding token)."""
    lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=len(token_ids))
    widths = -(-np.maximum(lengths, 1) // step) * step
    for width in np.unique(widths)[::-1]:
        same = np.flatnonzero(widths == width)
        for lo in range(0, len(same), rows):
            idx = same[lo : lo + rows]
            ids = np.zeros((rows, int(width)), dtype=np.int64)
            real = np.ones(rows, dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, : lengths[i]] = token_ids[i]
                real[row] = lengths[i]
            yield idx, ids, real
