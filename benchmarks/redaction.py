"""Redaction on the dev corpus (SPEC §9): training time and the attacker's accuracy after masking.

    .venv/bin/python benchmarks/redaction.py [--corpus PATH] [--levels 0.1 0.2 0.3 0.5]
                                             [--max-epochs 20] [--no-ranker]

Fits smarter redaction (paper 001) and the learned ranker (paper 002) on the dev chunks (after
the C roles, as a plan sees them), masks K % of each chunk's words and scores the redacted
chunks with the reading attacker trained on ``attacker/`` (other quarters of the same
companies): check/attack.py's ``TextAttacker`` when it is present, else the same recipe here
(TF-IDF word 1-2-grams, sublinear tf, multinomial logistic regression, SPEC §8) trained on
five-sentence pieces of the attacker's calls after identifier suppression. A document is named
when the mean of its chunks' probabilities points to its company.
Reference (issue 12, naive ranked redaction, 10/20/30/50 %): chunk accuracy 0.62/0.51/0.41/0.20.
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

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEV = ROOT.parent / "shared" / "corpus" / "dev"
NAIVE = {0.1: 0.62, 0.2: 0.51, 0.3: 0.41, 0.5: 0.20}
FIT_TARGET_S = {"smarter": 30.0, "ranker": 600.0}


def attacker_pieces(folder: Path, sentences_per_piece: int = 5) -> tuple[list[str], list[str]]:
    """Five-sentence pieces of the attacker's calls (identifiers suppressed) with companies."""
    from neswap_core.pipeline import clean_corpus
    from neswap_core.text.loading import load_corpus
    from neswap_core.text.sentences import split_sentences

    corpus = clean_corpus(load_corpus(folder, protect="company")).corpus
    texts, labels = [], []
    for doc in corpus.documents:
        spans = split_sentences(doc.text)
        for lo in range(0, len(spans), sentences_per_piece):
            part = spans[lo : lo + sentences_per_piece]
            texts.append(doc.text[part[0].start : part[-1].end])
            labels.append(corpus.protected_value(doc))
    return texts, labels


def reading_attacker(texts: list[str], labels: list[str]):
    """check/attack.py's TextAttacker if merged, else the same recipe (SPEC §8)."""
    try:
        from neswap_core.check.attack import TextAttacker

        return TextAttacker(random_state=0).fit(texts, labels), "check.attack.TextAttacker"
    except ImportError:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        model = make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True),
            LogisticRegression(C=10.0, max_iter=1000, random_state=0),
        ).fit(texts, labels)
        return model, "TF-IDF 1-2-gram + LR (in this script)"


def accuracies(attacker, chunks) -> tuple[float, int, int]:
    """(chunk top-1 accuracy, documents named, documents)."""
    proba = np.asarray(attacker.predict_proba([c.text for c in chunks]))
    classes = np.asarray(attacker.classes_)
    truth = np.array([c.protected for c in chunks])
    chunk_acc = float(np.mean(classes[proba.argmax(1)] == truth))
    docs = np.array([c.doc_id for c in chunks])
    named = 0
    for doc in np.unique(docs):
        rows = docs == doc
        named += int(classes[proba[rows].mean(0).argmax()] == truth[rows][0])
    return chunk_acc, named, len(np.unique(docs))


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
    from neswap_core.pipeline import prepare_path
    from neswap_core.release.redaction import SmarterRedactor, masked_share, redact_chunks
    from neswap_core.release.rewrite import apply_roles

    warnings.simplefilter("ignore")
    cfg = RunConfig(corpus=str(corpus), cache_dir=args.cache_dir)
    t0 = time.perf_counter()
    chunks = apply_roles(prepare_path(str(corpus), cfg).chunks, cfg.roles)
    print(
        f"dev corpus: {len({c.doc_id for c in chunks})} calls, {len(chunks)} chunks "
        f"(prepared in {time.perf_counter() - t0:.1f} s)"
    )
    t0 = time.perf_counter()
    attacker, name = reading_attacker(*attacker_pieces(corpus / "attacker"))
    print(f"reading attacker: {name}, trained in {time.perf_counter() - t0:.1f} s")

    texts, labels = [c.text for c in chunks], [c.protected for c in chunks]
    scorers = {}
    t0 = time.perf_counter()
    scorers["smarter"] = SmarterRedactor(random_state=0).fit(texts, labels)
    _report_fit("smarter", time.perf_counter() - t0)
    if not args.no_ranker:
        scorers["ranker"] = _fit_ranker(
            texts, [c.doc_id for c in chunks], args.max_epochs, args.cache_dir
        )

    acc, named, n_docs = accuracies(attacker, chunks)
    print(f"\nbefore redaction: chunk accuracy {acc:.3f}, documents named {named}/{n_docs}")
    print(
        f"{'method':8} {'K':>5} {'words masked':>13} {'chunk acc':>10} {'naive ref':>10} "
        f"{'docs named':>11} {'seconds':>8}"
    )
    for level in args.levels:
        for method, scorer in scorers.items():
            t0 = time.perf_counter()
            redacted, _ = redact_chunks(chunks, scorer, level)
            seconds = time.perf_counter() - t0
            acc, named, n_docs = accuracies(attacker, redacted)
            ref = f"{NAIVE[level]:.2f}" if level in NAIVE else "-"
            print(
                f"{method:8} {level:5.2f} {masked_share(redacted):13.3f} {acc:10.3f} "
                f"{ref:>10} {named:>6}/{n_docs:<4} {seconds:8.1f}"
            )
    return 0


def _report_fit(method: str, seconds: float) -> None:
    target = FIT_TARGET_S[method]
    print(f"{method} fit: {seconds:.1f} s (target <= {target:.0f} s, ratio {seconds / target:.2f})")


def _fit_ranker(texts: list[str], groups: list[str], max_epochs: int, cache_dir: str):
    from neswap_core.models.word_vectors import MiniLMWordEmbedder
    from neswap_core.release.ranker import LearnedRanker

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
