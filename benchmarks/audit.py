"""The divergence audit (SPEC §9) of every document of the dev corpus, timed against its target.

    .venv/bin/python benchmarks/audit.py [--corpus PATH] [--bootstrap 25] [--permutations 25]
    .venv/bin/python benchmarks/audit.py --scale 10000 [--whole]

Prepares the corpus through the shared embedding cache (nothing already embedded is embedded
again), then audits each of the 35 documents against all other chunks: the kNN Rényi curve
over the 9 orders α in both directions, 25 bootstrap resamples, 25 label permutations (the
estimator's floor) and the zCDP (ε, δ = 1/n) line. Target (issue 11, this 2-core machine):
the audit of all documents ≤ 60 s. Prints the corpus ε before any release.

``--scale N`` (issue 21): N passages made of the corpus's real vectors repeated with small noise
(re-normalised) under fresh documents of 16 passages (the synthetic corpora's layout), audited
as a release audits them (past 100 documents or 4,000 passages: on a sample, its statement
printed), with CPU-seconds and peak memory; ``--whole`` also audits them whole, as before the
sample (refused past 20,000 distinct passages).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "corpus" / "dev"
TARGET_S = 60.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--bootstrap", type=int, default=25)
    ap.add_argument("--permutations", type=int, default=25)
    ap.add_argument("--scale", type=int, help="N synthetic passages near the corpus's vectors")
    ap.add_argument("--whole", action="store_true", help="with --scale: the whole audit as well")
    args = ap.parse_args()
    if not Path(args.corpus).exists():
        print(f"skip: {args.corpus} not found (the dev corpus lives in ../shared/corpus/dev)")
        return 0
    sys.path.insert(0, str(ROOT))
    from neswap_core.config import RunConfig
    from neswap_core.measure.audit import ALPHAS, RenyiAudit
    from neswap_core.prepare.pipeline import prepare_path

    start = time.perf_counter()
    prepared = prepare_path(args.corpus, RunConfig.of(corpus=args.corpus, cache_dir=str(ROOT / ".neswap-cache")))
    prep_s = time.perf_counter() - start
    x, groups = prepared.embeddings, [c.doc_id for c in prepared.chunks]
    if args.scale:
        return scale(np.asarray(x, np.float64), args, RenyiAudit)

    start = time.perf_counter()
    audit = RenyiAudit(n_bootstrap=args.bootstrap, n_permutations=args.permutations,
                       random_state=0).fit(x, groups)
    audit_s = time.perf_counter() - start

    docs = audit.documents_.sort_values("epsilon", ascending=False)
    print(f"corpus: {args.corpus}\ndocuments: {docs.shape[0]}  chunks: {len(groups)}  "
          f"dimension: {x.shape[1]}  (prepared in {prep_s:.1f} s, cached embeddings)")
    print(f"audit: {len(ALPHAS)} orders α, k = {audit.k}, {args.bootstrap} bootstrap resamples, "
          f"{args.permutations} permutations per document")
    print(f"audit of all documents: {audit_s:.1f} s   target {TARGET_S:.0f} s   "
          f"ratio {audit_s / TARGET_S:.2f}  ({'OK' if audit_s <= TARGET_S else 'SLOWER THAN TARGET'})"
          f"   [load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores]")
    print(f"corpus epsilon before release: {audit.epsilon_:.3f} at delta = 1/{len(groups)} "
          f"(largest: {audit.worst_}); median document {docs['epsilon'].median():.3f}")
    print(f"permutation floor (no true divergence): epsilon {docs['epsilon_floor'].median():.3f}, "
          f"KL {docs['kl_floor'].median():.3f} (medians over documents)")
    print("\nmost distinguishable documents (epsilon, bootstrap mean ± s.d., floor, KL):")
    for _, r in docs.head(5).iterrows():
        print(f"  {r['document']:<28}{r['epsilon']:>8.3f}{r['epsilon_boot_mean']:>9.3f} ± "
              f"{r['epsilon_boot_sd']:<7.3f}{r['epsilon_floor']:>8.3f}{r['kl']:>8.3f}")
    return 0


def _peak_gb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024**2
    return float("nan")


def scale(x: np.ndarray, args, audit_class) -> int:
    """The audit of ``args.scale`` synthetic passages near ``x`` (module docstring)."""
    rng = np.random.default_rng(0)
    rows = x[rng.integers(0, len(x), args.scale)] + rng.normal(scale=0.01, size=(args.scale, x.shape[1]))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    groups = [f"doc{i // 16:06d}" for i in range(args.scale)]
    print(f"{args.scale:,} passages, {len(set(groups)):,} documents of 16, dimension {x.shape[1]}"
          f"   [load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores]")
    runs = [("as a release audits them", {})]
    if args.whole:
        runs.append(("whole (before the sample)", {"max_documents": None, "max_rows": None}))
    for name, params in runs:
        cpu = time.process_time()
        start = time.perf_counter()
        try:
            audit = audit_class(n_bootstrap=args.bootstrap, n_permutations=args.permutations,
                                random_state=0, **params).fit(rows, groups)  # fmt: skip
        except Exception as exc:  # the whole audit refuses past MAX_ATOMS: say so, go on
            print(f"  {name}: {type(exc).__name__}: {exc}")
            continue
        print(f"  {name}: {time.perf_counter() - start:.1f} s, {time.process_time() - cpu:.1f} "
              f"CPU-s, peak {_peak_gb():.2f} GB (process so far); corpus ε {audit.epsilon_:.3f}; "
              f"documents audited {len(audit.documents_):,}")
        if audit.sample_:
            print(f"    {audit.sample_['statement']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
