"""The re-identification attack (SPEC §8) on the dev corpus, timed against its targets.

    .venv/bin/python benchmarks/attack.py [--corpus PATH] [--draws 1]

Prepares the corpus through the shared caches, fits the mixture and the paper's candidate set
R_cand (6 combinations × up to 30 swaps), then times, as ratios to the targets of issue 11 on
this 2-core machine:
* training the reading attacker on the corpus's attacker/ folder (loading, cleaning, cutting
  into passages, TF-IDF + logistic regression) ≤ 30 s;
* the whole candidate table as the runner builds it (utility and both attackers' figures,
  ``choose.candidates.build_candidates``) ≤ 10 s;
and prints the pre-release chunk and document accuracy of both attackers (reference from the
issue: a TF-IDF + LR attacker trained on attacker/ names 0.756 of the dev chunks, 35/35 calls).
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
DEV = ROOT.parent / "shared" / "corpus" / "dev"
TRAIN_TARGET_S, TABLE_TARGET_S, MIN_RELEASES = 30.0, 10.0, 180
REFERENCE_CHUNK, REFERENCE_DOCS = 0.756, 35


def _ratio(label: str, seconds: float, cpu: float, target: float) -> str:
    verdict = "OK" if seconds <= target else "SLOWER THAN TARGET"
    return (
        f"{label}: {seconds:.1f} s   target {target:.0f} s   ratio {seconds / target:.2f}  "
        f"({verdict}; CPU {cpu:.1f} s, ratio {cpu / target:.2f})"
    )


class _Timer:
    """Wall and CPU seconds of a block (CPU time is the fairer figure on a shared machine)."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--draws", type=int, default=1)
    ap.add_argument(
        "--require",
        default="any",
        help="'any' (default: 6 x 30 = 180 candidates "
        "on dev) or the paper's 'all' (valid pairs run out: ~106)",
    )
    args = ap.parse_args()
    if not (Path(args.corpus) / "attacker").exists():
        print(
            f"skip: {args.corpus}/attacker not found (the dev corpus lives in ../shared/corpus/dev)"
        )
        return 0
    sys.path.insert(0, str(ROOT))
    from neswap_core.choose.attack_columns import IN_CORPUS, READING
    from neswap_core.choose.candidates import build_candidates
    from neswap_core.choose.scorers import build_scorers
    from neswap_core.config import RunConfig
    from neswap_core.generate.context import release_context
    from neswap_core.generate.releases import sweep_for_config
    from neswap_core.models.embedding import Embedder
    from neswap_core.prepare.pipeline import prepare_path
    from neswap_core.publish.evaluate import fit_reading

    config = RunConfig.of(
        corpus=args.corpus,
        cache_dir=str(ROOT / ".neswap-cache"),
        draws=args.draws,
        require=args.require,
    )
    embedder = Embedder(config.prepare.embedding_model, config.prepare.cache_dir)
    start = time.perf_counter()
    prepared = prepare_path(args.corpus, config, embedder=embedder)
    ctx, _ = release_context(prepared.chunks, prepared.embeddings, embedder.encode, config)
    pre_chunks = ctx.chunks
    sweep = sweep_for_config(ctx, config)
    table = sweep.table(config.sweep.population)
    setup_s = time.perf_counter() - start

    with _Timer() as train:
        reading = fit_reading(args.corpus, prepared.chunks, prepared.raw, config.protect)
    with _Timer() as build:
        scorers = build_scorers(pre_chunks, reading, random_state=config.sweep.seed)
    with _Timer() as measure:  # the runner's candidate table (run_release.py, step 6)
        columns = build_candidates(sweep, config, scorers).table

    n_docs = len(prepared.raw)
    print(
        f"corpus: {args.corpus}\ndocuments: {n_docs}  chunks: {len(pre_chunks)}  candidate "
        f"releases: {len(table)} ({args.draws} draw(s), require={args.require!r})  (setup {setup_s:.1f} s, cached)"
    )
    print(
        f"reading: {len(prepared.raw)} docs -> {reading.n_units_} passages of "
        f"{reading.unit_sentences_} sentences, {reading.n_features_} terms"
    )
    print(f"load average (1 min) at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(_ratio("training the reading attacker", train.wall, train.cpu, TRAIN_TARGET_S))
    print(
        f"scoring the pre-release corpus: {build.wall:.1f} s, CPU {build.cpu:.1f} s "
        "(incl. fitting the 5 in-corpus fold models)"
    )
    print(
        _ratio(
            f"measured accuracies of all {len(columns)} candidates (2 attackers)",
            measure.wall,
            measure.cpu,
            TABLE_TARGET_S,
        )
    )
    if len(columns) < MIN_RELEASES:
        print(f"note: fewer than {MIN_RELEASES} candidates (valid pairs ran out)")
    for name in (READING, IN_CORPUS):
        pre = scorers[name].pre_release()
        print(
            f"{name:9s} attacker before release: chunk accuracy {pre.chunk_top1:.3f} "
            f"(top-5 {pre.chunk_top5:.3f}), documents named {pre.documents_named}/{n_docs} "
            f"({pre.document_accuracy:.3f}), chance {pre.chance:.3f}"
        )
    print(
        f"reference (issue 11): chunk accuracy {REFERENCE_CHUNK} -> ratio "
        f"{scorers[READING].pre_release().chunk_top1 / REFERENCE_CHUNK:.3f}; "
        f"{REFERENCE_DOCS}/{REFERENCE_DOCS} documents"
    )
    best = columns.sort_values(f"chunk_accuracy_mean.{READING}").iloc[0]
    print(
        f"lowest reading chunk accuracy over the candidates: "
        f"{best[f'chunk_accuracy_mean.{READING}']:.3f} ({best.name}); changed chunks "
        f"{best[f'changed_accuracy_pre.{READING}']:.3f} -> "
        f"{best[f'changed_accuracy_post.{READING}']:.3f}, McNemar p "
        f"{best[f'mcnemar_p.{READING}']:.3g}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
