"""Candidates measured on a sample of documents against the same candidates measured whole (issue 21).

    OMP_NUM_THREADS=1 NESWAP_CACHE_DIR=.neswap-cache .venv/bin/python benchmarks/candidate_sample.py \
        [--corpus PATH] [--documents 12] [--seeds 5]

Past ``measure.candidate_sample.MAX_MEASURED_DOCUMENTS`` documents a corpus's candidates are
measured on a random sample of whole documents. Whether that sample tells the truth is checked
here on a real corpus measured both ways: the dev corpus's default release (its ``attacker/``
reading, the panel, the default grid and goal) is run whole through the one release path, then
every candidate's risk columns are measured again by the same scorers restricted to a sample of
``--documents`` documents (``ReleaseScorer.scoped``), for ``--seeds`` samples. Printed per
sample: for the primary document and chunk accuracy (the worst case over the panel) the mean
and largest |sampled − whole| over the candidates, the share of candidates whose sampled
document accuracy is within the stated 95 % margin of the whole one (the margin is for one
candidate; about 95 % are expected), and whether the default goal would pick the same
candidate. The utility columns' estimator is checked exactly in
``tests/test_candidate_sample.py``; embeddings come from the cache, so a warm run is minutes.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEV = next((p / "shared" / "corpus" / "dev" for p in ROOT.parents[:2]
            if (p / "shared" / "corpus" / "dev").is_dir()), ROOT.parent / "shared" / "corpus" / "dev")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--documents", type=int, default=12)
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    if not Path(args.corpus).exists():
        print(f"skip: {args.corpus} not found")
        return 0
    import numpy as np

    from neswap_core.choose.candidates import candidate_table
    from neswap_core.choose.goals import Goal, choose_goal
    from neswap_core.config import RunConfig
    from neswap_core.measure.candidate_sample import measurement_sample
    from neswap_core.models.embedding import Embedder
    from neswap_core.paths import resolve_cache_dir
    from neswap_core.publish.evaluate import fit_reading
    from neswap_core.run_release import prepare_release, run_release

    start = time.perf_counter()
    config = RunConfig.of(corpus=args.corpus)
    embedder = Embedder(config.prepare.embedding_model, config.prepare.cache_dir,
                        backend=config.prepare.embedding_backend)
    prepared = prepare_release(config, embedder=embedder, tag_reading=True)
    reading = fit_reading(config.corpus, prepared.chunks, prepared.raw, config.protect,
                          resolve_cache_dir(config.prepare.cache_dir))
    result = run_release(prepared, config, embedder.encode, reading=reading)
    cands = result.candidates
    whole = cands.table
    ctx = cands.ctx
    goal = Goal.from_config(config)
    chosen = choose_goal(whole, goal).release_id
    docs = [c.doc_id for c in ctx.chunks]
    print(f"{args.corpus}: {len(set(docs))} documents, {len(docs):,} passages, {len(whole)} "
          f"candidates measured whole; the goal picks {chosen}  ({time.perf_counter() - start:.0f} s)")
    print(f"{'seed':>4} {'passages':>8} {'margin':>7} {'doc |d| mean':>12} {'max':>6} "
          f"{'within':>7} {'chunk |d| mean':>14} {'max':>6}  goal picks")
    within_all = []
    for seed in range(args.seeds):
        sample = measurement_sample(docs, random_state=seed, max_documents=args.documents,
                                    max_passages=len(docs))  # fmt: skip
        sampled_ctx = copy.copy(ctx)
        sampled_ctx.sample = sample
        table = candidate_table(cands.sources, sampled_ctx, result.scorers, cands.sweep)
        d = np.abs(table["document_accuracy"].to_numpy(float) - whole["document_accuracy"].to_numpy(float))
        c = np.abs(table["chunk_accuracy"].to_numpy(float) - whole["chunk_accuracy"].to_numpy(float))
        within = d <= sample.document_margin + 1e-12
        within_all.append(within)
        pick = choose_goal(table, goal).release_id
        print(f"{seed:>4} {sample.passages:>8,} {sample.document_margin:>7.3f} {d.mean():>12.3f} "
              f"{d.max():>6.3f} {within.mean():>7.1%} {c.mean():>14.3f} {c.max():>6.3f}  {pick}"
              f"{'' if pick == chosen else '  (whole: ' + str(chosen) + ')'}")
    print(f"within the stated 95 % margin over all samples and candidates: "
          f"{np.concatenate(within_all).mean():.1%}; {time.perf_counter() - start:.0f} s, "
          f"load {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
