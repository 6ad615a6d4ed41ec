"""The divergence audit (SPEC §9) of every document of the dev corpus, timed against its target.

    .venv/bin/python benchmarks/audit.py [--corpus PATH] [--bootstrap 25] [--permutations 25]

Prepares the corpus through the shared embedding cache (nothing already embedded is embedded
again), then audits each of the 35 documents against all other chunks: the kNN Rényi curve
over the 9 orders α in both directions, 25 bootstrap resamples, 25 label permutations (the
estimator's floor) and the zCDP (ε, δ = 1/n) line. Target (issue 11, this 2-core machine):
the audit of all documents ≤ 60 s. Prints the corpus ε before any release.
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
TARGET_S = 60.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--bootstrap", type=int, default=25)
    ap.add_argument("--permutations", type=int, default=25)
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


if __name__ == "__main__":
    raise SystemExit(main())
