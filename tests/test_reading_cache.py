"""The reading attacker is kept on disk (measure/reading.py): a warm re-run of a release reads it
back instead of cleaning the reading again and refitting (47 s of the dev corpus's warm re-run)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from neswap_core.corpus import Chunk
from neswap_core.measure import reading as reading_module
from neswap_core.measure.reading import reading_attacker
from neswap_core.text.loading import load_corpus, load_uploaded

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"
pytestmark = pytest.mark.slow  # the reading's executive detection loads spaCy


def sample_reading(n_docs: int = 4):
    """The second half of the first sample calls, under other ids (another "quarter")."""
    manifest = pd.read_csv(SAMPLE / "manifest.csv", keep_default_na=False).head(n_docs)
    files = []
    for row in manifest.itertuples():
        lines = (SAMPLE / "docs" / f"{row.doc_id}.txt").read_text().splitlines()
        files.append((f"{row.doc_id}_other.txt", "\n".join(lines[len(lines) // 2:]).encode()))
    files.append(("manifest.csv", manifest.assign(doc_id=manifest["doc_id"] + "_other")
                  .to_csv(index=False).encode()))
    return load_uploaded(files, protect="company")


def _mapped(x: np.ndarray) -> bool:
    """Whether ``x`` is a view of a memory-mapped file (``mapped_pickle``)."""
    import mmap

    while isinstance(x, np.ndarray) and x.base is not None:
        x = x.base
    return isinstance(x, memoryview) and isinstance(x.obj, mmap.mmap)


def test_a_fitted_reading_is_read_back_and_a_changed_one_refitted(tmp_path, monkeypatch):
    reading, corpus = sample_reading(), load_corpus(SAMPLE, protect="company")
    chunks = [Chunk("a#0", "a", 0, "Sales rose. Margins held. We thank you.", "Acme")]
    first = reading_attacker(reading, chunks, corpus, cache_dir=tmp_path)
    assert list((tmp_path / "reading").glob("attacker_*.pkl"))

    def refit(*args, **kwargs):
        raise RuntimeError("the reading was cleaned again")

    monkeypatch.setattr(reading_module, "reading_units", refit)
    again = reading_attacker(reading, chunks, corpus, cache_dir=tmp_path)
    assert again.units_ == first.units_ and again.n_units_ == first.n_units_
    np.testing.assert_array_equal(again.model_.coef_, first.model_.coef_)
    # anything the attacker reads changes the key: a text, the unit size, the seed
    doc = reading.documents[0]
    edited = reading.with_documents([replace(doc, text=doc.text + "\nOne more sentence."),
                                     *reading.documents[1:]])
    longer = [replace(chunks[0], text="One. Two. Three. Four. Five. Six.")]
    for args, kwargs in (((edited, chunks, corpus), {}), ((reading, longer, corpus), {}),
                         ((reading, chunks, corpus), {"random_state": 1})):
        with pytest.raises(RuntimeError, match="cleaned again"):
            reading_attacker(*args, cache_dir=tmp_path, **kwargs)
    # a damaged cache file is refitted, not trusted
    for path in (tmp_path / "reading").glob("attacker_*.pkl"):
        path.write_bytes(b"not a pickle")
    with pytest.raises(RuntimeError, match="cleaned again"):
        reading_attacker(reading, chunks, corpus, cache_dir=tmp_path)


def test_a_reading_read_back_from_a_memo_finds_the_same_kept_attacker(tmp_path):
    """The kept attacker's key hashed the reading's pickle, which differs between equal readings
    whose strings are shared differently: once ``fit_reading`` kept the parsed reading itself
    (issue 21), the first run on the read-back reading refitted the attacker (26 s of a warm dev
    re-run instead of 4). The key is the reading's content now."""
    import pickle

    reading = sample_reading()
    copy = pickle.loads(pickle.dumps(reading, protocol=5))
    shared = replace(reading, documents=tuple(replace(d, layout=sys.intern(str(d.layout)))
                                             for d in reading.documents))  # fmt: skip
    assert copy == reading == shared
    path = reading_module._cache_path(tmp_path, reading, 3, 1.0, 0, 50)
    assert reading_module._cache_path(tmp_path, copy, 3, 1.0, 0, 50) == path
    assert reading_module._cache_path(tmp_path, shared, 3, 1.0, 0, 50) == path
    other = replace(reading, documents=reading.documents[1:])
    assert reading_module._cache_path(tmp_path, other, 3, 1.0, 0, 50) != path


def test_fitted_in_the_background_it_is_the_attacker_fitted_here(tmp_path, monkeypatch):
    """``release_from_config`` fits the reading attacker in a worker during the mixture and the
    walk (``background=True``): its units at once, then the same coefficients as fitted here,
    kept on disk as a fit here keeps it; the attackers built on it are those of a fit here."""
    from neswap_core.choose.scorers import build_scorers
    from neswap_core.measure.reading import ReadingInBackground, fitted_reading
    from neswap_core.models import fit_processes

    monkeypatch.setattr(reading_module, "MIN_TEXTS", 0)  # the sample is small: force the worker
    reading, corpus = sample_reading(), load_corpus(SAMPLE, protect="company")
    chunks = [Chunk("a#0", "a", 0, "Sales rose. Margins held. We thank you.", "Acme"),
              Chunk("b#0", "b", 0, "Loans grew. Deposits fell. Thank you all.", "Bolt")]
    here = reading_attacker(reading, chunks, corpus)
    pending = reading_attacker(reading, chunks, corpus, cache_dir=tmp_path, background=True)
    assert isinstance(pending, ReadingInBackground) and pending._pending.started
    assert pending.units_ == here.units_ and pending.n_units_ == here.n_units_
    fitted = fitted_reading(pending)
    assert fitted is pending.fitted()  # waited for once
    np.testing.assert_array_equal(fitted.model_.coef_, here.model_.coef_)
    assert list((tmp_path / "reading").glob("attacker_*.pkl"))  # kept by the worker
    # and read back from there, its arrays mapped (issue 21: not a copy through the pipe)
    assert _mapped(fitted.model_.coef_) and not _mapped(here.model_.coef_)
    pending_here = reading_attacker(reading, chunks, corpus, cache_dir=tmp_path / "here")
    assert _mapped(pending_here.model_.coef_)  # fitted here with a cache: mapped as well
    np.testing.assert_array_equal(pending_here.model_.coef_, here.model_.coef_)
    again = reading_attacker(reading, chunks, corpus, cache_dir=tmp_path, background=True)
    assert not isinstance(again, ReadingInBackground)  # read back, no worker
    monkeypatch.setattr(fit_processes, "MIN_TEXTS", 0)
    scored = build_scorers(chunks, reading_attacker(reading, chunks, corpus, background=True),
                           in_corpus=False, cache_dir=None)
    expected = build_scorers(chunks, here, in_corpus=False, cache_dir=None)
    np.testing.assert_array_equal(scored["reading"].log_proba_, expected["reading"].log_proba_)


def test_the_reading_tagged_ahead_in_prepare_is_then_cleaned_without_tagging(tmp_path):
    """``prepare(tag_ahead=...)`` runs the reading's people detection in its two processes
    (issue 21): the corpus's preparation is unchanged, the reading's cleaning afterwards tags
    nothing (no new NER shard) and gives the units a fresh cache gives, and neither a cleaned
    reading nor another NER model is tagged ahead again."""
    from neswap_core.config import RunConfig
    from neswap_core.measure.reading import reading_to_tag, reading_units
    from neswap_core.prepare.pipeline import prepare

    reading, corpus = sample_reading(), load_corpus(SAMPLE, protect="company")
    corpus = corpus.with_documents(corpus.documents[:4])
    model = RunConfig().prepare.spacy_model
    ahead = reading_to_tag(reading, corpus, tmp_path / "a", model)
    assert ahead is not None and len(ahead.documents) == len(reading.documents)
    tagged = prepare(corpus, RunConfig.of(corpus=str(SAMPLE), cache_dir=str(tmp_path / "a")),
                     processes=2, tag_ahead=ahead)
    assert tagged.timings["tag ahead"] > 0
    plain = prepare(corpus, RunConfig.of(corpus=str(SAMPLE), cache_dir=str(tmp_path / "p")),
                    processes=2)
    assert [c.text for c in tagged.chunks] == [c.text for c in plain.chunks]
    assert [c.entities for c in tagged.chunks] == [c.entities for c in plain.chunks]
    assert np.array_equal(tagged.embeddings, plain.embeddings)

    shards = sorted((tmp_path / "a" / "ner").rglob("*.jsonl"))
    assert shards
    units = reading_units(reading, 3, corpus, tmp_path / "a")
    assert sorted((tmp_path / "a" / "ner").rglob("*.jsonl")) == shards  # nothing tagged
    assert units == reading_units(reading, 3, corpus, tmp_path / "fresh")
    assert reading_to_tag(reading, corpus, tmp_path / "a", model) is None  # kept: not again
    assert reading_to_tag(reading, corpus, tmp_path / "b", "en_core_web_md") is None
    assert reading_to_tag(None, corpus, tmp_path / "b", model) is None
    assert reading_to_tag(reading, corpus, None, model) is None
