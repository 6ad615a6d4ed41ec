"""The synthetic corpus generator (issue 14): deterministic, fresh labels, real sentences."""

from __future__ import annotations

from pathlib import Path

import pytest

from neswap_core.errors import CorpusError
from neswap_core.text.loading import load_corpus
from neswap_core.text.sentences import split_sentences
from neswap_core.text.synthetic import (
    SyntheticSpec,
    documents_for_chunks,
    sentence_pool,
    synthetic_corpus,
    write_corpus_folder,
)

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


@pytest.fixture(scope="module")
def pool():
    return sentence_pool(load_corpus(SAMPLE))


def test_same_seed_same_corpus_other_seed_other_corpus(pool):
    spec = SyntheticSpec(n_documents=12, n_companies=4, sentences_per_document=(5, 9))
    a, b = synthetic_corpus(pool, spec, 7), synthetic_corpus(pool, spec, 7)
    assert [(d.doc_id, d.text, d.metadata) for d in a.documents] == [
        (d.doc_id, d.text, d.metadata) for d in b.documents
    ]
    c = synthetic_corpus(pool, spec, 8)
    assert [d.text for d in c.documents] != [d.text for d in a.documents]


def test_documents_are_real_sentences_under_fresh_company_labels(pool):
    spec = SyntheticSpec(n_documents=10, n_companies=3, sentences_per_document=(4, 6))
    corpus = synthetic_corpus(pool, spec, 0)
    known = set(pool)
    real_companies = {d.metadata["company"] for d in load_corpus(SAMPLE).documents}
    for doc in corpus.documents:
        sentences = [s.text for s in split_sentences(doc.text)]
        assert 4 <= len(doc.text.splitlines()) <= 6
        assert all(line in known for line in doc.text.splitlines())
        assert len(sentences) >= len(doc.text.splitlines())  # lines never merge
        assert doc.metadata["company"].startswith("Synthetic Company")
    companies = [corpus.protected_value(d) for d in corpus.documents]
    assert len(set(companies)) == 3 and not set(companies) & real_companies


def test_written_folder_loads_back_identically(pool, tmp_path):
    corpus = synthetic_corpus(pool, SyntheticSpec(6, 2, (3, 4)), 1)
    loaded = load_corpus(write_corpus_folder(corpus, tmp_path / "syn"))
    assert {d.doc_id: d.text for d in loaded.documents} == {
        d.doc_id: d.text for d in corpus.documents
    }
    assert {d.doc_id: loaded.protected_value(d) for d in loaded.documents} == {
        d.doc_id: corpus.protected_value(d) for d in corpus.documents
    }


def test_documents_for_chunks_scales_linearly():
    small, big = documents_for_chunks(1_000), documents_for_chunks(100_000)
    assert 90 <= big.n_documents / small.n_documents <= 110
    assert big.n_companies >= 2


def test_too_few_sentences_is_a_clear_error():
    with pytest.raises(CorpusError, match="at least two"):
        synthetic_corpus(["only one"], SyntheticSpec(2, 2))


def test_company_words_belong_to_their_company_and_name_it(pool):
    """Issue 21: with ``company_words`` each company has invented words of its own, the same in
    a reading drawn with another seed, carried by about ``company_word_rate`` of its sentences;
    the log-odds term model finds them as the company's most distinctive types."""
    import re

    import numpy as np

    from neswap_core.corpus import Chunk
    from neswap_core.generate.document_terms import TermModel
    from neswap_core.text.synthetic import company_vocabularies

    spec = SyntheticSpec(n_documents=24, n_companies=6, sentences_per_document=(20, 30), company_words=10)
    corpus, reading = synthetic_corpus(pool, spec, 3), synthetic_corpus(pool, spec, 4)
    vocab = company_vocabularies(6, 10)
    assert vocab == company_vocabularies(6, 10) and len({w for v in vocab for w in v}) == 60
    assert all(w[0].isupper() == (k % 2 == 1) for v in vocab for k, w in enumerate(v))
    owner = {w: k for k, v in enumerate(vocab) for w in v}
    carried = total = 0
    for doc in (*corpus.documents, *reading.documents):
        lines = doc.text.splitlines()
        found = [w for w in re.findall(r"[A-Za-z]+", doc.text) if w in owner]
        assert found and {owner[w] for w in found} == {int(doc.metadata["company"].split()[-1])}
        carried += sum(any(w in owner for w in re.findall(r"[A-Za-z]+", line)) for line in lines)
        total += len(lines)
    assert 0.15 < carried / total < 0.35  # rate 0.25 (a line with no long lower-case word keeps none)
    chunks = [Chunk(f"{d.doc_id}#0", d.doc_id, 0, d.text, d.metadata["company"]) for d in corpus.documents]
    model = TermModel().fit(chunks)
    for k, company in enumerate(model.classes_):
        keys = sorted(model.vocabulary_)
        z = model.score(company, keys)
        own = {w.lower() for w in vocab[int(company.split()[-1])]}
        mine = np.array([k in own for k in keys])
        assert keys[int(np.argmax(z))] in own, company
        # its words used at least 3 times stand above 99 % of the rest (the small pool repeats)
        text = " ".join(c.text for c in chunks if c.protected == company).lower()
        used = np.array([k in own and len(re.findall(rf"\b{k}\b", text)) >= 3 for k in keys])
        assert used.sum() >= 2 and (z[used] > np.quantile(z[~mine], 0.99)).all(), company
    plain = synthetic_corpus(pool, SyntheticSpec(24, 6, (20, 30)), 3)
    assert not any(w in owner for d in plain.documents for w in re.findall(r"[A-Za-z]+", d.text))
