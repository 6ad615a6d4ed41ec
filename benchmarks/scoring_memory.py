"""What a defender scoring worker holds as it scores document after document (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/scoring_memory.py DIR/100000 [--documents 400] [--unbounded]

``DIR`` is a folder ``benchmarks/protecting_scale.py --keep DIR`` left, after a run that got
past the prefetch's walk (its preparation and fitted defender are in its cache). Scores the
documents' candidate types in this process exactly as a worker of
``document_budget._all_fractions`` does (the mapped defender, one job per document, biggest
first) and prints its anonymous memory and the row memos' bytes every 50 documents.
``--unbounded``: without the per-process bound of the row memos (``row_memo.MAX_TOTAL_BYTES``),
as before bb3e8df, to see what the bound saves.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _anon_gb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024**2
    return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--documents", type=int, default=400)
    ap.add_argument("--unbounded", action="store_true")
    args = ap.parse_args()
    from neswap_core import mapped_pickle
    from neswap_core.config import RunConfig
    from neswap_core.generate import document_budget
    from neswap_core.generate.document_terms import ranked_candidates
    from neswap_core.measure import row_memo
    from neswap_core.run_release import prepare_release

    if args.unbounded:
        row_memo.MAX_TOTAL_BYTES = float("inf")
    work = Path(args.folder)
    cache = work / "cache"
    config = RunConfig.of(corpus=str(work / "corpus"), cache_dir=str(cache), out=str(work / "out"))
    chunks = prepare_release(config).chunks
    prep_file = max((cache / "memo" / "document_preps").glob("*.pkl"), key=lambda p: p.stat().st_mtime)
    prep = pickle.loads(prep_file.read_bytes())
    defender_file = max((cache / "document_defence").glob("defender_*.map"), key=lambda p: p.stat().st_mtime)
    members = mapped_pickle.load(defender_file).members_
    docs, min_z = prep.docs, config.document.document_min_z
    ids = list(docs)
    cands = {i: [t for t in ranked_candidates(docs[i], min_z)[:config.document.document_candidates]
                 if t in prep.fills.get(i, {})] for i in ids}  # fmt: skip
    sizes = {i: sum(docs[i].count(t) for t in cands[i]) for i in ids}
    order = sorted(ids, key=lambda i: -sizes[i])[: args.documents]
    rival = {i: docs[prep.partner[i]].company for i in docs if i in prep.partner}
    start, base = time.perf_counter(), _anon_gb()
    print(f"{len(chunks):,} chunks, {len(docs):,} documents; {len(members)} defender members; "
          f"row memos {'unbounded' if args.unbounded else f'<= {row_memo.MAX_TOTAL_BYTES / 1e6:.0f} MB'}; "
          f"anonymous before scoring {base:.2f} GB", flush=True)
    for k, i in enumerate(order, 1):
        job = document_budget._doc_job(chunks, docs[i], cands[i], prep.fills.get(i, {}), rival.get(i))
        document_budget._fractions(members, job)
        if k % 50 == 0 or k == len(order):
            print(f"{k:5d} documents, {time.perf_counter() - start:6.0f} s: anonymous {_anon_gb():.2f} GB "
                  f"(+{_anon_gb() - base:.2f}), row memos {row_memo.held_bytes() / 1e6:.0f} MB", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
