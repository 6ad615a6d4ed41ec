"""The reading attacker's training passages (SPEC §8): the reading cleaned as the corpus, cut
into windows of the corpus's chunk size. Apart from ``measure/reading.py`` (which fits the
attacker, with scikit-learn) so that the app's candidates, whose disk key names these units, can
make them on a restarted server without importing scikit-learn (issue 21's 3 s first draw).
The decisions (executives, training units) are ``measure/reading.py``'s docstring."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..config import DEFAULT_SPACY_MODEL
from ..corpus import Chunk, Corpus
from ..errors import CorpusError
from ..text.lazy_ner import LazyNer
from ..text.sentences import split_sentences

#: The spaCy pipeline that finds the people in the reading (``text.people``), whatever the
#: corpus's own preparation uses: the reading attacker stays the same across settings.
READING_NER_MODEL = DEFAULT_SPACY_MODEL


def sentences_per_chunk(chunks: Sequence[Chunk]) -> int:
    """Mean number of sentences per chunk, rounded (at least 1): the size of a training unit."""
    if not chunks:
        return 1
    counts = [len(split_sentences(c.text)) for c in chunks]
    return max(1, int(round(float(np.mean(counts)))))


def with_company_executives(reading: Corpus, corpus: Corpus | None) -> Corpus:
    """Add to each reading document the executives the corpus lists for the same ticker."""
    if corpus is None:
        return reading
    by_ticker: dict[str, list[str]] = {}
    for doc in corpus.documents:
        ticker = doc.metadata.get("ticker", "")
        if ticker:
            by_ticker.setdefault(ticker, []).extend(doc.executives)
    docs = []
    for doc in reading.documents:
        extra = by_ticker.get(doc.metadata.get("ticker", ""), [])
        names = dict.fromkeys([*doc.executives, *extra])
        docs.append(replace(doc, executives=tuple(names)))
    return reading.with_documents(docs)


def sentence_windows(text: str, size: int) -> list[str]:
    """Consecutive windows of ``size`` sentences (the last may be shorter), joined by spaces."""
    sentences = [s.text for s in split_sentences(text)]
    return [" ".join(sentences[i : i + size]) for i in range(0, len(sentences), size)]


def reading_units(
    reading: Corpus, size: int, corpus: Corpus | None = None, cache_dir: str | Path | None = None
) -> tuple[list[str], list[str], list[str]]:
    """(texts, labels, doc ids) of the reading's training passages, suppressed like the corpus
    (``cache_dir``: where the executive detection's NER results are cached)."""
    from ..prepare.pipeline import clean_corpus

    # spaCy is loaded only if a sentence is not in the NER cache (``prepare``'s ``tag_ahead``)
    clean = clean_corpus(with_company_executives(reading, corpus), nlp=LazyNer(READING_NER_MODEL),
                         cache_dir=cache_dir).corpus
    texts, labels, ids = [], [], []
    for doc in clean.documents:
        for window in sentence_windows(doc.text, size):
            texts.append(window)
            labels.append(clean.protected_value(doc))
            ids.append(doc.doc_id)
    if not texts:
        raise CorpusError("The attacker's reading holds no text after cleaning.")
    return texts, labels, ids
