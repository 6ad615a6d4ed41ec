"""The document defence's term model counted from keys against from occurrences (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/term_model.py [--passages 20000] [--repeat 3]

``TermModel.fit`` counts every type of every passage of the corpus and of the attacker's reading
(``generate/document_terms``): at 100k, 200,000 passages in the walk's main process, beside the
defender's fit. The anchor counts them as the library did, from ``occurrences`` (an
``Occurrence`` with its offsets and surface for every word and phrase, of which only the key
was read); the library now reads the keys alone (``occurrence_keys``). Synthetic passages of
the dev corpus's sentences (``benchmarks/fit_processes.passages``, the 100k generator's layout)
as corpus and reading. Prints the best wall time of each, the ratio, and whether the fitted
vocabularies and counts are the same.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=20_000, help="passages of the corpus (and of the reading)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from fit_processes import passages

    from neswap_core.corpus import Chunk
    from neswap_core.generate import document_terms
    from neswap_core.generate.document_terms import TermModel

    texts, labels, ids = passages(args.passages)
    chunks = [Chunk(f"{d}#{i:06d}", d, i, t, y) for i, (t, y, d) in enumerate(zip(texts, labels, ids, strict=True))]
    reading = passages(args.passages + 1)  # another draw (its seed is its size)
    reading = (reading[0], reading[1], ["R" + d for d in reading[2]])
    keys = document_terms.occurrence_keys

    def from_occurrences(text: str) -> list[str]:
        return [o.key for o in document_terms.occurrences(text)]

    def fit(counter) -> tuple[TermModel, float]:
        document_terms.occurrence_keys = counter
        try:
            best, model = float("inf"), None
            for _ in range(args.repeat):
                start = time.perf_counter()
                model = TermModel().fit(chunks, reading)
                best = min(best, time.perf_counter() - start)
            return model, best
        finally:
            document_terms.occurrence_keys = keys

    anchor, a_best = fit(from_occurrences)
    model, best = fit(keys)
    same = anchor.vocabulary_ == model.vocabulary_ and all(
        (anchor.parts_[p].counts != model.parts_[p].counts).nnz == 0 for p in anchor.parts_)
    print(f"{len(chunks):,} corpus passages + {len(reading[0]):,} reading passages, "
          f"{len(model.vocabulary_):,} types; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"  from occurrences (anchor): {a_best:7.2f} s (best of {args.repeat})")
    print(f"  from keys (library):       {best:7.2f} s   ratio {best / a_best:.3f}   same counts: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
