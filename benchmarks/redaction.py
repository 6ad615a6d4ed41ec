"""Redaction on the dev corpus (SPEC §9): training time and the attacker's accuracy after masking.

    .venv/bin/python benchmarks/redaction.py [--corpus PATH] [--levels 0.1 0.2 0.3 0.5]
                                             [--max-epochs 20] [--no-ranker]

Fits smarter redaction (paper 001) and the learned ranker (paper 002) on the dev chunks (after
the C roles, as a plan sees them), masks K % of each chunk's words and scores the redacted
chunks with check/'s reading attacker trained on ``attacker/`` (other quarters of the same
companies; TF-IDF 1-2-grams + multinomial logistic regression, SPEC §8) through its
``ReleaseScorer``: chunk top-1 accuracy and documents named.
Reference (issue 12, naive ranked redaction, 10/20/30/50 %): chunk accuracy 0.62/0.51/0.41/0.20.
"pooled KL" is the ranker's own objective measured with hard masks: the mean over documents of
the kNN KL estimate (document vs rest) between the chunks' mean MiniLM word vectors (biased at
d = 384: compare rows, not with 0).
Targets: smarter redaction fits in seconds, the ranker trains in minutes (ratios printed).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEV = ROOT.parent / "shared" / "corpus" / "dev"
NAIVE = {0.1: 0.62, 0.2: 0.51, 0.3: 0.41, 0.5: 0.20}
FIT_TARGET_S = {"smarter": 30.0, "ranker": 600.0}


def release_scorer(corpus: Path, prepared, chunks):
    """The reading attacker of check/ (trained on ``attacker/``) scoring releases of ``chunks``."""
    from neswap_core.measure.attack_scores import ReleaseScorer
    from neswap_core.publish.evaluate import fit_reading

    attacker = fit_reading(corpus, chunks, prepared.raw, "company")
    texts, labels = [c.text for c in chunks], [c.protected for c in chunks]
    return ReleaseScorer(attacker, texts, labels, [c.doc_id for c in chunks], name="reading")


def measured(scorer, chunks, redacted) -> tuple[float, int]:
    """(chunk accuracy, documents named) of the reading attacker on a release."""
    changed = {
        i: r.text for i, (c, r) in enumerate(zip(chunks, redacted, strict=True)) if c is not r
    }
    m = scorer.score(changed)
    return m.chunk_top1, m.documents_named


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--levels", type=float, nargs="+", default=[0.1, 0.2, 0.3, 0.5])
    ap.add_argument("--max-epochs", type=int, default=20)
    ap.add_argument("--no-ranker", action="store_true")
    ap.add_argument("--cache-dir", default=str(ROOT / ".neswap-cache"))
    args = ap.parse_args()
    corpus = Path(args.corpus)
    if not (corpus / "attacker").exists():
        print(f"skip: {corpus}/attacker not found (the dev corpus lives in ../shared/corpus/dev)")
        return 0
    from neswap_core.config import RunConfig
    from neswap_core.generate.redaction import SmarterRedactor
    from neswap_core.generate.rewrite import apply_roles
    from neswap_core.prepare.pipeline import prepare_path

    warnings.simplefilter("ignore")
    cfg = RunConfig.of(corpus=str(corpus), cache_dir=args.cache_dir)
    t0 = time.perf_counter()
    prepared = prepare_path(str(corpus), cfg)
    chunks = apply_roles(prepared.chunks, cfg.roles)
    print(
        f"dev corpus: {len({c.doc_id for c in chunks})} calls, {len(chunks)} chunks "
        f"(prepared in {time.perf_counter() - t0:.1f} s)"
    )
    t0 = time.perf_counter()
    attack = release_scorer(corpus, prepared, chunks)
    print(f"reading attacker (check/): trained in {time.perf_counter() - t0:.1f} s")

    texts, labels = [c.text for c in chunks], [c.protected for c in chunks]
    scorers = {}
    t0 = time.perf_counter()
    scorers["smarter"] = SmarterRedactor(random_state=0).fit(texts, labels)
    _report_fit("smarter", time.perf_counter() - t0)
    if not args.no_ranker:
        scorers["ranker"] = _fit_ranker(
            texts, [c.doc_id for c in chunks], args.max_epochs, args.cache_dir
        )

    vectors = scorers["ranker"].embedder.word_vectors(texts) if "ranker" in scorers else None
    _print_table(chunks, scorers, attack, args.levels, vectors)
    return 0


def _print_table(chunks, scorers, attack, levels, vectors) -> None:
    from neswap_core.generate.redaction import masked_share, redact_chunks

    n_docs = len({c.doc_id for c in chunks})
    acc, named = measured(attack, chunks, chunks)
    kl = f", pooled KL {pooled_divergence(vectors, chunks, []):.1f}" if vectors else ""
    print(f"\nbefore redaction: chunk accuracy {acc:.3f}, documents named {named}/{n_docs}{kl}")
    print(
        f"{'method':8} {'K':>5} {'words masked':>13} {'chunk acc':>10} {'naive ref':>10} "
        f"{'docs named':>11} {'pooled KL':>10} {'seconds':>8}"
    )
    for level in levels:
        for method, scorer in scorers.items():
            t0 = time.perf_counter()
            redacted, records = redact_chunks(chunks, scorer, level)
            seconds = time.perf_counter() - t0
            acc, named = measured(attack, chunks, redacted)
            ref = f"{NAIVE[level]:.2f}" if level in NAIVE else "-"
            kl = f"{pooled_divergence(vectors, chunks, records):.1f}" if vectors else "-"
            print(
                f"{method:8} {level:5.2f} {masked_share(redacted):13.3f} {acc:10.3f} "
                f"{ref:>10} {named:>6}/{n_docs:<4} {kl:>10} {seconds:8.1f}"
            )


def pooled_divergence(vectors, chunks, records, n_neighbors: int = 5) -> float:
    """The ranker's objective, measured: mean over documents of the kNN KL (document ‖ rest)
    between hard-masked, L2-normalised mean word vectors of the chunks."""
    import numpy as np
    import torch

    from neswap_core.generate.ranker import knn_kl_divergence
    from neswap_core.text.words import word_spans

    masked: dict[str, set[int]] = {}
    for r in records:
        masked.setdefault(r.chunk_id, set()).add(r.start)
    rows = []
    for chunk, v in zip(chunks, vectors, strict=True):
        gone = masked.get(chunk.chunk_id, set())
        keep = np.array([s not in gone for s, _, _ in word_spans(chunk.text)], bool)
        x = v[keep].sum(0) / max(len(v), 1) if len(v) else np.zeros(v.shape[1], np.float32)
        rows.append(x / max(float(np.linalg.norm(x)), 1e-8))
    x, docs = torch.from_numpy(np.stack(rows)), np.array([c.doc_id for c in chunks])
    with torch.no_grad():
        values = [float(knn_kl_divergence(x[docs == d], x[docs != d], n_neighbors))
                  for d in np.unique(docs)]  # fmt: skip
    return float(np.mean(values))


def _report_fit(method: str, seconds: float) -> None:
    target = FIT_TARGET_S[method]
    print(f"{method} fit: {seconds:.1f} s (target <= {target:.0f} s, ratio {seconds / target:.2f})")


def _fit_ranker(texts: list[str], groups: list[str], max_epochs: int, cache_dir: str):
    from neswap_core.generate.ranker import LearnedRanker
    from neswap_core.models.word_vectors import MiniLMWordEmbedder

    embedder = MiniLMWordEmbedder(cache_dir=cache_dir)
    t0 = time.perf_counter()
    embedder.word_vectors(texts)
    embed_s = time.perf_counter() - t0
    ranker = LearnedRanker(level=0.1, max_epochs=max_epochs, random_state=0, embedder=embedder)
    ranker.fit(texts, groups)
    print(
        f"ranker word vectors (MiniLM, {len(texts)} chunks, {embedder.n_embedded} embedded, the "
        f"rest from the cache): {embed_s:.1f} s; training "
        f"{ranker.n_steps_} steps: {ranker.fit_seconds_:.1f} s; loss per epoch "
        f"{ranker.loss_history_[0]:.1f} -> {ranker.loss_history_[-1]:.1f}"
    )
    _report_fit("ranker", embed_s + ranker.fit_seconds_)
    return ranker


if __name__ == "__main__":
    raise SystemExit(main())
