"""The attacker panel on the dev corpus (SPEC §8, §12; issue 22): figures and cost.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/panel.py [--corpus PATH] [--dp 1,5,10,25,50]

Prepares the corpus through this checkout's cache, fits the mixture, the paper's candidates and
a small plan grid (3 rounds + terms + 8 % targeted decoys, as the runner's goal search would),
then prints, with wall time, CPU seconds and the load average:
* fitting the panel on the attacker/ reading (cold or from its disk cache) and scoring the
  pre-release corpus;
* the cost of the candidate table with the reading attacker only vs with the whole panel, as a
  ratio to the table target of issue 11 (10 s);
* chunk / document accuracy per family for the raw corpus and for the plan candidate with the
  fewest words changed that brings the worst panel chunk accuracy to ≤ 0.40 (else the lowest);
* with ``--dp``: the word-level DP baseline (generate/dp_words.py) at those ε, words unchanged
  and the worst panel chunk / document accuracy per ε.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

ROOT = Path(__file__).resolve().parents[1]
DEV = Path("/work/shared/corpus/dev") if Path("/work/shared/corpus/dev").exists() else ROOT.parent / "shared" / "corpus" / "dev"
TABLE_TARGET_S = 10.0


class _Timer:
    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu

    def __str__(self) -> str:
        return f"{self.wall:.1f} s wall, {self.cpu:.1f} CPU-s, load {os.getloadavg()[0]:.1f}"


def _families_line(row, members) -> str:
    return "  ".join(f"{m} {row[f'chunk_accuracy.{m}']:.2f} / {row[f'document_accuracy.{m}']:.2f}"
                     for m in members)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--dp", default="", help="comma-separated ε of the DP baseline ('' = none)")
    ap.add_argument("--no-plans", action="store_true", help="the paper's candidates only")
    args = ap.parse_args()
    if not (Path(args.corpus) / "attacker").exists():
        print(f"skip: {args.corpus}/attacker not found")
        return 0
    sys.path.insert(0, str(ROOT))
    from neswap_core.choose.attack_columns import panel_members
    from neswap_core.choose.candidates import build_candidates
    from neswap_core.choose.scorers import build_scorers
    from neswap_core.config import RunConfig
    from neswap_core.generate.context import release_context
    from neswap_core.generate.releases import sweep_for_config
    from neswap_core.models.embedding import Embedder
    from neswap_core.prepare.pipeline import prepare_path
    from neswap_core.publish.evaluate import fit_reading

    plans = {} if args.no_plans else dict(plan_rounds=3, plan_terms=[True],
                                          plan_redaction_levels=[0.0, 0.08],
                                          plan_redaction_fill="decoy", plan_redaction_alone=False)
    config = RunConfig.of(corpus=args.corpus, cache_dir=str(ROOT / ".neswap-cache"), **plans)
    embedder = Embedder(config.prepare.embedding_model, config.prepare.cache_dir)
    with _Timer() as setup:
        prepared = prepare_path(args.corpus, config, embedder=embedder)
        ctx, _ = release_context(prepared.chunks, prepared.embeddings, embedder.encode, config)
        sweep = sweep_for_config(ctx, config)
        reading = fit_reading(args.corpus, prepared.chunks, prepared.raw, config.protect)
    print(f"corpus {args.corpus}: {len(prepared.raw)} documents, {len(ctx.chunks)} chunks; "
          f"reading {reading.n_units_} passages ({setup})")
    kw = dict(random_state=config.sweep.seed, embed=embedder.encode, vectors=ctx.embeddings,
              cache_dir=config.prepare.cache_dir)
    with _Timer() as fit:
        scorers = build_scorers(ctx.chunks, reading, families=config.sweep.panel_families, **kw)
    print(f"panel ({', '.join(config.sweep.panel_families)}) fitted or loaded and the corpus "
          f"scored: {fit}")
    one = {k: v for k, v in scorers.items() if k in ("reading", "in-corpus")}
    from neswap_core.choose.plan_grid import PlanGrid, plan_candidates

    with _Timer() as grid:
        applied = plan_candidates(ctx, PlanGrid.from_config(config), config.sweep.population) \
            if config.plans.plan_rounds else None
    print(f"plan grid applied: {grid}")
    with _Timer() as without:
        build_candidates(sweep, config, one, plans=applied)
    with _Timer() as with_panel:
        table = build_candidates(sweep, config, scorers, plans=applied).table
    n = len(table)
    print(f"candidate table, {n} candidates, reading + in-corpus attackers: {without}; ratio to "
          f"{TABLE_TARGET_S:.0f} s {without.wall / TABLE_TARGET_S:.2f}")
    print(f"candidate table, {n} candidates, whole panel + in-corpus: {with_panel}; ratio to "
          f"{TABLE_TARGET_S:.0f} s {with_panel.wall / TABLE_TARGET_S:.2f}; panel / without "
          f"{with_panel.wall / max(without.wall, 1e-9):.2f} (CPU "
          f"{with_panel.cpu / max(without.cpu, 1e-9):.2f})")
    members = panel_members(scorers)
    raw = {}
    for m in members:
        pre = scorers[m].pre_release()
        raw[f"chunk_accuracy.{m}"], raw[f"document_accuracy.{m}"] = pre.chunk_top1, pre.document_accuracy
    print(f"raw (100 % words): {_families_line(raw, members)}  (chunks / documents)")
    plans_only = table[table["sampler"] == "plan"] if "sampler" in table else table
    pool = plans_only if len(plans_only) else table
    ok = pool[pool["chunk_accuracy"] <= 0.40]
    pick = (ok.sort_values("words_unchanged", ascending=False) if len(ok)
            else pool.sort_values("chunk_accuracy")).iloc[0]
    print(f"{pick['release_id']} ({100 * pick['words_unchanged']:.1f} % words, tone r "
          f"{pick['tone_correlation']:.3f}, tone kept {pick['tone_kept']:.3f}): "
          f"{_families_line(pick, members)}; worst {pick['chunk_accuracy']:.2f} "
          f"({pick['worst_chunk_attacker']}) / {pick['document_accuracy']:.2f} "
          f"({pick['worst_document_attacker']})")
    if args.dp:
        from neswap_core.choose.candidates import candidate_table
        from neswap_core.choose.dp_sources import dp_words_sources

        eps = [float(e) for e in args.dp.split(",")]
        with _Timer() as dp:
            rows = candidate_table(dp_words_sources(ctx, eps, config.sweep.seed), ctx, scorers)
        print(f"DP baseline ({len(eps)} ε): {dp}")
        for _, r in rows.iterrows():
            print(f"  ε {r['epsilon']:>6g}: {100 * r['words_unchanged']:5.1f} % words unchanged; "
                  f"worst panel {r['chunk_accuracy']:.2f} ({r['worst_chunk_attacker']}) / "
                  f"{r['document_accuracy']:.2f} ({r['worst_document_attacker']}); "
                  f"{_families_line(r, members)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
