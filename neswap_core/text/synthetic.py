"""Synthetic corpora for scale benchmarks (issue 14): real sentences, fresh documents and labels.

Documents are assembled from sentences of the available transcripts (after presentation
extraction and identifier suppression, so no real company name leaks in), drawn uniformly at
random, with fresh company labels ("Synthetic Company 0007") — so the sentence groups and chunks
are new texts that no embedding or NER cache has seen. Deterministic for a given seed.

With ``company_words`` (issue 21), each company also has words of its own — invented, half of
them capitalised like product names, half lower-case like its jargon — and a share of its
sentences carry one in place of a long lower-case word, drawn by a Zipf law. Without them every
company draws the same sentences: the vocabulary stops growing with the corpus and the attackers
see no signal, which hid the structures that grow with companies × vocabulary. The
vocabularies depend only on the number of companies, so a reading drawn with another seed
shares them.

A document of ``s`` sentences gives about ``1 + (s - 1) / 4`` chunks at the default threshold
(75: a quarter of the gaps are cuts), which ``documents_for_chunks`` inverts.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..corpus import Corpus, Document
from ..errors import CorpusError
from .sentences import split_sentences

#: Sentences per synthetic document: a prepared-remarks section is 80-200 lines in ECTSum.
SENTENCES_PER_DOCUMENT = (40, 80)


@dataclass(frozen=True)
class SyntheticSpec:
    """How big a synthetic corpus is: documents, companies, sentences per document (inclusive);
    ``company_words`` invented words of each company's own, carried by ``company_word_rate``
    of its sentences (module docstring)."""

    n_documents: int
    n_companies: int
    sentences_per_document: tuple[int, int] = SENTENCES_PER_DOCUMENT
    company_words: int = 0
    company_word_rate: float = 0.25


def documents_for_chunks(n_chunks: int, threshold: float = 75.0, company_words: int = 0) -> SyntheticSpec:
    """A spec expected to give about ``n_chunks`` chunks at percentile ``threshold``."""
    lo, hi = SENTENCES_PER_DOCUMENT
    mean_sentences = (lo + hi) / 2
    chunks_per_doc = 1 + (mean_sentences - 1) * (1 - threshold / 100)
    n_documents = max(2, int(round(n_chunks / chunks_per_doc)))
    return SyntheticSpec(n_documents, max(2, n_documents // 4), company_words=company_words)


_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
#: Lower-case words a company word may replace: long enough to be content words.
_REPLACEABLE = re.compile(r"\b[a-z]{6,}\b")


def company_vocabularies(n_companies: int, n_words: int) -> list[list[str]]:
    """``n_words`` invented words per company (three or four syllables; odd ranks capitalised
    like product names), distinct across companies; the same for the same arguments."""
    rng = np.random.default_rng([21, n_companies, n_words])
    seen: set[str] = set()
    out = []
    for _ in range(n_companies):
        words: list[str] = []
        while len(words) < n_words:
            w = "".join(_SYLLABLES[i] for i in rng.integers(0, len(_SYLLABLES), int(rng.integers(3, 5))))
            if w not in seen:
                seen.add(w)
                words.append(w.capitalize() if len(words) % 2 else w)
        out.append(words)
    return out


def _with_company_word(sentence: str, words: list[str], weights: np.ndarray, rng: np.random.Generator) -> str:
    spots = list(_REPLACEABLE.finditer(sentence))
    if not spots:
        return sentence
    m = spots[int(rng.integers(len(spots)))]
    return sentence[:m.start()] + words[int(rng.choice(len(words), p=weights))] + sentence[m.end():]


def sentence_pool(corpus: Corpus) -> list[str]:
    """Every distinct sentence of the corpus, in first-seen order."""
    seen: dict[str, None] = {}
    for doc in corpus.documents:
        for span in split_sentences(doc.text):
            seen.setdefault(" ".join(span.text.split()), None)
    return list(seen)


def synthetic_corpus(
    sentences: list[str], spec: SyntheticSpec, random_state: int | np.random.Generator = 0
) -> Corpus:
    """A corpus of ``spec.n_documents`` documents of random ``sentences``, one a line.

    Document i belongs to company ``i % n_companies`` so every company has documents; the
    same seed gives the same corpus.
    """
    if len(sentences) < 2:
        raise CorpusError("A synthetic corpus needs at least two source sentences.")
    lo, hi = spec.sentences_per_document
    if not 1 <= lo <= hi:
        raise CorpusError(f"sentences_per_document must satisfy 1 <= lo <= hi, got {lo, hi}.")
    rng = np.random.default_rng(random_state)
    lengths = rng.integers(lo, hi + 1, size=spec.n_documents)
    picks = rng.integers(0, len(sentences), size=int(lengths.sum()))
    width = len(str(max(spec.n_documents, spec.n_companies) - 1))
    vocab = company_vocabularies(spec.n_companies, spec.company_words) if spec.company_words else []
    zipf = 1.0 / np.arange(1, spec.company_words + 1)
    zipf /= zipf.sum() if len(zipf) else 1.0
    words_rng = np.random.default_rng([22, *np.atleast_1d(rng.integers(0, 2**32, 1))])
    documents = []
    start = 0
    for i, n in enumerate(lengths):
        company = f"Synthetic Company {i % spec.n_companies:0{width}d}"
        lines = [sentences[j] for j in picks[start : start + n]]
        if vocab:
            own = vocab[i % spec.n_companies]
            lines = [_with_company_word(line, own, zipf, words_rng)
                     if words_rng.random() < spec.company_word_rate else line for line in lines]  # fmt: skip
        text = "\n".join(lines) + "\n"
        start += n
        doc_id = f"SYN{i:0{width}d}"
        metadata = {"doc_id": doc_id, "company": company, "quarter": "synthetic"}
        documents.append(Document(doc_id, text, metadata, source=f"{doc_id}.txt"))
    return Corpus(tuple(documents), protect="company", name="synthetic")


def write_corpus_folder(corpus: Corpus, folder: str | Path) -> Path:
    """Write ``corpus`` as a folder of ``<doc_id>.txt`` files plus ``manifest.csv``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    columns = ["doc_id", "company", "quarter"]
    with open(folder / "manifest.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for doc in corpus.documents:
            writer.writerow({c: doc.metadata.get(c, "") for c in columns})
            (folder / f"{doc.doc_id}.txt").write_text(doc.text, encoding="utf-8")
    return folder
