"""The document defence's type scoring against re-scoring whole passages, on a real corpus (issue 21).

    OMP_NUM_THREADS=1 NESWAP_CACHE_DIR=.neswap-cache .venv/bin/python benchmarks/document_plans.py \
        [--corpus PATH] [--processes N]

The defence scores every candidate type of every document by the fall of the document's margin
under each member of the cross-fitted defender (``generate/document_budget.document_plans``, the
most expensive step of a cold release on the dev corpus and ~50 min of the 10k run). One run, the
same inputs (the corpus's pre-swap chunks, its ``attacker/`` reading, the default settings),
three ways:

1. the anchor: every changed passage re-vectorised whole (``Family.edited_scores``' fallback,
   which the library used before ``measure/count_delta``), one process;
2. changed words only (``measure.count_delta``), one process;
3. changed words only, documents shared between worker processes (the default; one process
   below ``PROCESS_MIN_DOCUMENTS`` documents, as on dev).

Each way starts with this process's row memos empty (``measure/row_memo.py``).

Prints wall and CPU seconds of each (children included), the ratios to the anchor, and checks
that the three give the same plans to the last bit. Embeddings and the reading come from the
cache when warm; the plans' own disk cache is not used.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEV = next((p / "shared" / "corpus" / "dev" for p in ROOT.parents[:2]
            if (p / "shared" / "corpus" / "dev").is_dir()), ROOT.parent / "shared" / "corpus" / "dev")


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--processes", type=int, default=None, help="workers of way 3 (default: CPUs)")
    args = ap.parse_args()
    if not Path(args.corpus).exists():
        print(f"skip: {args.corpus} not found")
        return 0
    import numpy as np

    from neswap_core.choose.document_candidates import fitted_defender
    from neswap_core.config import RunConfig
    from neswap_core.generate.context import release_context
    from neswap_core.generate.document import DefenceParams
    from neswap_core.generate.document_budget import document_plans, prepare_defence
    from neswap_core.generate.document_terms import TermModel
    from neswap_core.measure import count_delta
    from neswap_core.measure.panel import Family, LinearTextFamily, RetrievalFamily
    from neswap_core.models.embedding import Embedder
    from neswap_core.paths import resolve_cache_dir
    from neswap_core.publish.evaluate import fit_reading
    from neswap_core.run_release import prepare_release

    start = time.perf_counter()
    config = RunConfig.of(corpus=args.corpus)
    cache = resolve_cache_dir(config.prepare.cache_dir)
    embedder = Embedder(config.prepare.embedding_model, config.prepare.cache_dir,
                        backend=config.prepare.embedding_backend)
    prepared = prepare_release(config, embedder=embedder, tag_reading=True)
    reading = fit_reading(config.corpus, prepared.chunks, prepared.raw, config.protect, cache)
    if reading is None:
        print(f"skip: {args.corpus} has no attacker/ reading, so no defender")
        return 0
    units = reading.units_
    ctx, _ = release_context(prepared.chunks, prepared.embeddings, embedder.encode, config)
    seed, settings = config.sweep.seed, config.document
    model = TermModel(random_state=seed).fit(ctx.chunks, units)
    defender = fitted_defender(units, seed, cache)
    base = DefenceParams(level=0.0, min_z=settings.document_min_z, fill=settings.document_fill,
                         top_k=settings.document_top_k, round_figures=settings.document_round_figures)
    prep = prepare_defence(ctx.chunks, model, base, np.random.default_rng([seed, 22]), None,
                           n_candidates=settings.document_candidates)  # fmt: skip
    rival = {i: prep.docs[prep.partner[i]].company for i in prep.docs if i in prep.partner}
    n_docs = len(prep.docs)
    print(f"{args.corpus}: {n_docs} documents, {len(ctx.chunks):,} passages, "
          f"{len(defender.members_)} defender members; set-up {time.perf_counter() - start:.0f} s; "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    from neswap_core.measure import row_memo

    def timed(processes: int | None) -> tuple[dict, float, float]:
        with row_memo._LOCK:  # every way starts with cold row memos (counts and rows)
            row_memo._MEMOS.clear()
            row_memo._BYTES.clear()
        wall, cpu = time.perf_counter(), _cpu()
        plans = document_plans(ctx.chunks, prep.docs, defender, rival, prep.fills,
                               n_candidates=settings.document_candidates, min_z=settings.document_min_z,
                               processes=processes)  # fmt: skip
        return plans, time.perf_counter() - wall, _cpu() - cpu

    def whole_counts(self, texts, edits):
        return self.counts([count_delta.replaced_text(texts[i], s) for i, s in edits])

    fast_scores, fast_counts = LinearTextFamily.edited_scores, RetrievalFamily.edited_counts
    LinearTextFamily.edited_scores, RetrievalFamily.edited_counts = Family.edited_scores, whole_counts
    try:
        anchor, a_wall, a_cpu = timed(1)
    finally:
        LinearTextFamily.edited_scores, RetrievalFamily.edited_counts = fast_scores, fast_counts
    rows = [("whole passages, 1 process (anchor)", anchor, a_wall, a_cpu)]
    rows.append(("changed words, 1 process", *timed(1)))
    rows.append((f"changed words, {args.processes or os.cpu_count()} processes", *timed(args.processes)))
    print(f"{'way':<36} {'wall s':>8} {'CPU s':>8} {'wall ratio':>10} {'CPU ratio':>9}  same plans")
    for name, plans, wall, cpu in rows:
        same = plans.keys() == anchor.keys() and all(
            plans[i].order == anchor[i].order and plans[i].fractions.tobytes() == anchor[i].fractions.tobytes()
            for i in anchor)  # fmt: skip
        print(f"{name:<36} {wall:8.1f} {cpu:8.1f} {wall / a_wall:10.3f} {cpu / a_cpu:9.3f}  {same}")
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
