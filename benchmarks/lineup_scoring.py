"""Whole-document scoring against every company vs against the text's line-up (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/lineup_scoring.py [--sizes 10000 30000] [--lineup 50]

On synthetic corpora of real dev-corpus sentences (``text.synthetic``, companies growing with
the corpus as in the protecting-scale benchmark), fits the panel's retrieval family with
line-ups and scores every passage (by blocks of ``SCORE_BLOCK``) and every document (its summed
counts), first against every company and masked (``mask_rows``: what the scorers did before
b93e0db), then against each row's own line-up only (``doc_scores(lineups=...)``). Prints the
seconds of each, their ratio, and whether the two give the same numbers bit for bit. The
product against every company grows as passages × companies; the line-up's as passages.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 30000])
    ap.add_argument("--lineup", type=int, default=50)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from fit_processes import passages
    from scipy import sparse

    from neswap_core.measure.lineups import SCORE_BLOCK, mask_rows, row_lineups
    from neswap_core.measure.panel import AttackerPanel
    from neswap_core.models import fit_processes

    fit_processes.MIN_TEXTS = 10**12  # the fit in this process
    for n in args.sizes:
        texts, labels, ids = passages(n)
        panel = AttackerPanel(["retrieval"], lineup=args.lineup).fit(texts, labels, ids)
        fam = panel.families_["retrieval"]
        y = np.searchsorted(panel.classes_, labels)
        counts = sparse.csr_matrix(fam.counts(texts))
        docs, doc_index = np.unique(ids, return_inverse=True)
        member = sparse.csr_matrix((np.ones(len(ids)), (doc_index, np.arange(len(ids)))), shape=(len(docs), len(ids)))
        doc_counts = (member @ counts).tocsr()
        doc_y = np.zeros(len(docs), dtype=np.int64)
        doc_y[doc_index] = y
        figures = {}
        for what, rows, ys in (("passages", counts, y), ("documents", doc_counts, doc_y)):
            blocks = np.array_split(np.arange(rows.shape[0]), -(-rows.shape[0] // SCORE_BLOCK))
            every, t_every = _timed(lambda rows=rows, ys=ys, blocks=blocks, fam=fam: [
                mask_rows(fam.doc_scores(rows[b]), ys[b], fam.lineup_) for b in blocks])
            own, t_own = _timed(lambda rows=rows, ys=ys, blocks=blocks, fam=fam: [
                fam.doc_scores(rows[b], lineups=row_lineups(ys[b], fam.lineup_)) for b in blocks])
            same = all(np.array_equal(a, b) for a, b in zip(every, own, strict=True))
            figures[what] = (t_every, t_own, same)
        print(f"{len(texts):>7,} passages, {len(docs):,} documents, {len(panel.classes_):,} companies in "
              f"{int(fam.lineup_.max()) + 1} line-ups of at most {args.lineup} (load {os.getloadavg()[0]:.2f}):")
        for what, (t_every, t_own, same) in figures.items():
            print(f"  {what:<9} every company {t_every:7.2f} s, own line-up {t_own:6.2f} s: "
                  f"{t_every / t_own:5.1f} x faster, same numbers bit for bit: {same}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
