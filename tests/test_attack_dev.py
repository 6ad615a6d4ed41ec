"""Done-when of issue 11 (SPEC §8): on the dev corpus with its attacker/ reading, the product's
pre-release chunk and document accuracy of its own chunks, recomputed by a separate plain
scikit-learn pipeline written here, agree to within 0.01 — for the reading attacker and for the
in-corpus (cross-fitted) attacker.

The training passages are the product's (``reading_units``: cleaning and suppression are tested
elsewhere); the classifier, the fold loop and the accuracy arithmetic below are independent.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.special import log_softmax
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "corpus" / "dev"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (DEV / "attacker").is_dir(), reason="dev corpus not available"),
]


def _pipeline():
    return make_pipeline(
        TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=3),
        LogisticRegression(C=10.0, max_iter=2000),
    )


def _accuracies(log_p: np.ndarray, classes, labels, docs) -> tuple[float, float]:
    """Chunk top-1 accuracy and document accuracy (sum of log-probabilities per document)."""
    classes = list(classes)
    chunk = float(np.mean([classes[k] == y for k, y in zip(log_p.argmax(1), labels, strict=True)]))
    names = sorted(set(docs))
    hits = []
    for d in names:
        rows = [i for i, x in enumerate(docs) if x == d]
        hits.append(classes[int(log_p[rows].sum(0).argmax())] == labels[rows[0]])
    return chunk, float(np.mean(hits))


@pytest.fixture(scope="module")
def dev():
    from neswap_core.config import RunConfig
    from neswap_core.prepare.pipeline import prepare_path

    config = RunConfig.of(corpus=str(DEV), cache_dir=str(ROOT / ".neswap-cache"))
    return prepare_path(DEV, config)


def test_reading_and_in_corpus_accuracy_match_a_plain_sklearn_pipeline(dev):
    from neswap_core.choose.attack_columns import IN_CORPUS, READING
    from neswap_core.choose.scorers import build_scorers
    from neswap_core.measure.reading import reading_units, sentences_per_chunk
    from neswap_core.text.loading import load_attacker

    chunks = dev.chunks
    texts = [c.text for c in chunks]
    labels = [c.protected for c in chunks]
    docs = [c.doc_id for c in chunks]
    reading = load_attacker(DEV)
    train_x, train_y, _ = reading_units(reading, sentences_per_chunk(chunks), dev.raw)

    # the product
    from neswap_core.measure.attack import TextAttacker

    attacker = TextAttacker().fit(train_x, train_y)
    scorers = build_scorers(chunks, attacker)
    product = {name: scorers[name].pre_release() for name in (READING, IN_CORPUS)}

    # the reading attacker, by hand
    pipe = _pipeline().fit(train_x, train_y)
    chunk, doc = _accuracies(log_softmax(pipe.decision_function(texts), axis=1), pipe.classes_,
                             labels, docs)  # fmt: skip
    assert product[READING].chunk_top1 == pytest.approx(chunk, abs=0.01)
    assert product[READING].document_accuracy == pytest.approx(doc, abs=0.01)
    assert product[READING].chunk_top1 > 0.6 and product[READING].documents_named >= 30

    # the in-corpus attacker: the same folds (each document's chunks dealt over 5 folds)
    folds = scorers[IN_CORPUS].attacker.folds_
    classes = sorted(set(labels))
    log_p = np.full((len(texts), len(classes)), np.log(1e-300))
    for f in range(5):
        train = [i for i in range(len(texts)) if folds[i] != f]
        held = [i for i in range(len(texts)) if folds[i] == f]
        model = _pipeline().fit([texts[i] for i in train], [labels[i] for i in train])
        cols = [classes.index(c) for c in model.classes_]
        held_x = [texts[i] for i in held]
        log_p[np.ix_(held, cols)] = log_softmax(model.decision_function(held_x), axis=1)
    chunk, doc = _accuracies(log_p, classes, labels, docs)
    assert product[IN_CORPUS].chunk_top1 == pytest.approx(chunk, abs=0.01)
    assert product[IN_CORPUS].document_accuracy == pytest.approx(doc, abs=0.01)
    for name in (READING, IN_CORPUS):
        print(f"{name}: chunk {product[name].chunk_top1:.3f}, documents "
              f"{product[name].documents_named}/{product[name].n_documents}")  # fmt: skip
