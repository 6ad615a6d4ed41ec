"""The document defence's scoring handed to its workers by line-up against biggest first (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/defence_order.py FOLDER --chunks N [--repeat 1]

``FOLDER`` is one size's folder of ``protecting_scale.py --keep`` (its preparation and the
defender's fit are read from its cache; the defender is fitted when missing). The defence scores
every candidate type of every document under each member of the cross-fitted defender
(``generate/document_budget.document_plans``), one document per job, in worker processes. With
several line-ups each member is one model per line-up with its own vectorizer and row memos
(``measure/row_memo``: bounded per process), so the order of the jobs decides how often a
worker drops a line-up's memos to make room for another's. One run, the same inputs, both
orders (``job_order``): biggest first (the anchor, as before) and one line-up after another.
Prints wall and CPU seconds (workers included), the ratios, and whether the plans are the same
to the last bit.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="one size's folder of protecting_scale.py --keep")
    ap.add_argument("--chunks", type=int, required=True, help="the size it was run at (its reading's seed)")
    ap.add_argument("--repeat", type=int, default=1, help="times each order runs (alternating)")
    ap.add_argument("--only", choices=("anchor", "lineup"), help="run one order only (to profile it)")
    args = ap.parse_args()
    import numpy as np
    from kept_run import kept_inputs

    from neswap_core.choose.document_candidates import defence_base, fitted_defender
    from neswap_core.generate import document_budget
    from neswap_core.generate.context import release_context
    from neswap_core.generate.document_budget import document_plans, prepare_defence
    from neswap_core.generate.document_terms import TermModel

    work = Path(args.folder)
    start = time.perf_counter()
    config, embedder, prepared, attacker = kept_inputs(work, args.chunks)
    units = attacker.units_
    ctx, _ = release_context(prepared.chunks, prepared.embeddings, embedder.encode, config)
    seed, settings = config.sweep.seed, config.document
    defender = fitted_defender(units, seed, Path(config.prepare.cache_dir), config.sweep.lineup)
    model = TermModel(random_state=seed).fit(ctx.chunks, units)
    prep = prepare_defence(ctx.chunks, model, defence_base(config), np.random.default_rng([seed, 22]), None,
                           n_candidates=settings.document_candidates)  # fmt: skip
    rival = {i: prep.docs[prep.partner[i]].company for i in prep.docs if i in prep.partner}
    groups = document_budget._job_groups(defender, [d.company for d in prep.docs.values()])
    print(f"{work}: {len(prep.docs):,} documents, {len(ctx.chunks):,} passages, "
          f"{len(defender.members_)} defender members, {len(set(groups or [0]))} line-ups; "
          f"set-up {time.perf_counter() - start:.0f} s; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
          flush=True)  # fmt: skip

    real_groups = document_budget._job_groups

    def timed(by_lineup: bool) -> tuple[dict, float, float]:
        document_budget._job_groups = real_groups if by_lineup else (lambda defender, companies: None)
        try:
            wall, cpu = time.perf_counter(), _cpu()
            plans = document_plans(ctx.chunks, prep.docs, defender, rival, prep.fills,
                                   n_candidates=settings.document_candidates, min_z=settings.document_min_z)
            return plans, time.perf_counter() - wall, _cpu() - cpu
        finally:
            document_budget._job_groups = real_groups

    runs: dict[str, list] = {"biggest first (anchor)": [], "by line-up": []}
    for _ in range(args.repeat):
        for name, by_lineup in (("biggest first (anchor)", False), ("by line-up", True)):
            if args.only and args.only != ("lineup" if by_lineup else "anchor"):
                continue
            runs[name].append(timed(by_lineup))
            print(f"  {name}: {runs[name][-1][1]:.1f} s, {runs[name][-1][2]:.1f} CPU-s", flush=True)
    runs = {name: rs for name, rs in runs.items() if rs}
    if len(runs) < 2:
        return 0
    anchor = runs["biggest first (anchor)"][0][0]
    a_wall = min(r[1] for r in runs["biggest first (anchor)"])
    a_cpu = min(r[2] for r in runs["biggest first (anchor)"])
    print(f"{'order':<26} {'wall s':>8} {'CPU s':>8} {'wall ratio':>10} {'CPU ratio':>9}  same plans")
    for name, rs in runs.items():
        wall, cpu = min(r[1] for r in rs), min(r[2] for r in rs)
        same = all(p.keys() == anchor.keys() and all(
            p[i].order == anchor[i].order and p[i].fractions.tobytes() == anchor[i].fractions.tobytes()
            for i in anchor) for p, _, _ in rs)  # fmt: skip
        print(f"{name:<26} {wall:8.1f} {cpu:8.1f} {wall / a_wall:10.3f} {cpu / a_cpu:9.3f}  {same}")
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
