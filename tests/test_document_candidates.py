"""The document defence as candidates of the one table (choose/document_candidates.py).

On the constructed corpus of ``test_document_defence`` (each company's own words, shared words,
tone words), with a deterministic stand-in for MiniLM: one candidate per level, measured like
any other, reviewable by document and type, pinned by name, and fitted on the reading's halves
when there is a reading.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from neswap_core.choose.candidates import Candidates, candidate_table, document_sources
from neswap_core.choose.chosen import pinned_release
from neswap_core.choose.document_candidates import DOCUMENT, document_candidates
from neswap_core.choose.scorers import build_scorers
from neswap_core.config import RunConfig
from neswap_core.errors import ConfigError
from neswap_core.generate.document_terms import occurrences
from neswap_core.generate.releases import ReleaseContext
from neswap_core.models.mixture import SphericalMixture
from tests.test_candidates import embed
from tests.test_document_defence import TONE, corpus


@pytest.fixture(scope="module")
def ctx():
    chunks = corpus({"Acme": 2, "Bolt": 2, "Cres": 2, "Dyna": 2}, chunks_per_doc=6, seed=3)
    x = embed([c.text for c in chunks])
    mix = SphericalMixture(n_components=2, n_init=1, random_state=0).fit(x)
    return ReleaseContext(chunks, x, mix, embed)


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    return RunConfig.of(document_levels=[0.05, 0.15, 0.3], document_min_z=0.0,
                        cache_dir=str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def documents(ctx, config):
    return document_candidates(ctx, config)


def test_one_candidate_per_level_with_exact_word_counts(ctx, documents):
    table = documents.table
    assert list(table.index) == ["document 5 %", "document 15 %", "document 30 %"]
    words = sum(len(re.findall(r"\w+", c.text)) for c in ctx.chunks)
    for rid, row in table.iterrows():
        result = documents.results[rid]
        changed_words = sum(len(c.before.split()) for c in result.changes)
        # every change replaces whole words by as many words (pairs), so words unchanged is exact
        assert row["words_unchanged"] == pytest.approx(1 - changed_words / words, abs=0.01)
        assert 1 - row["level"] - 0.01 <= row["words_unchanged"] <= 1 - row["level"] / 2
        assert row["dr"] == 1.0
    assert table["words_unchanged"].is_monotonic_decreasing
    assert "corpus's own log-odds" in documents.ranked_by  # no reading: the fallback


def test_the_candidates_are_measured_and_the_attack_falls(ctx, documents):
    scorers = build_scorers(ctx.chunks, None, in_corpus=True)
    table = candidate_table(document_sources(documents), ctx, scorers)
    assert set(table["sampler"]) == {DOCUMENT}
    raw = scorers["in-corpus"].score({})
    assert raw.document_accuracy == 1.0 and raw.chunk_top1 > 0.9  # own words name every document
    strongest = table.iloc[-1]
    assert strongest["chunk_accuracy"] < 0.5 * raw.chunk_top1
    assert strongest["document_accuracy"] <= 0.5
    assert table["chunk_accuracy"].is_monotonic_decreasing


def test_review_rejects_a_type_at_every_occurrence(ctx, documents):
    source = document_sources(documents)["document 15 %"]
    generated = documents.results["document 15 %"].changes
    key = Counter(c.key for c in generated).most_common(1)[0][0]
    doc_id, term = key.split("|")
    chosen = source.review({key: ("reject", "keep this word")})
    assert chosen.rejected == sum(1 for c in generated if c.key == key) >= 2
    assert not [c for c in chosen.changes if c.key == key]
    left = sum(1 for c in chosen.chunks if c.doc_id == doc_id for o in occurrences(c.text) if o.key == term)
    assert left == sum(1 for c in ctx.chunks if c.doc_id == doc_id for o in occurrences(c.text) if o.key == term)
    row = chosen.review[chosen.review["key"] == key].iloc[0]
    assert (row["decision"], row["in release"], row["note"]) == ("reject", False, "keep this word")
    tone = re.compile(r"\b(" + "|".join(TONE) + r")\b")
    assert all(tone.findall(a.text) == tone.findall(b.text) for a, b in zip(ctx.chunks, chosen.chunks, strict=True))


def test_a_document_candidate_is_pinned_by_its_name(ctx, documents, config):
    table = candidate_table(document_sources(documents), ctx)
    cands = Candidates(table, None, document_sources(documents), None, documents)
    _, pinned = pinned_release(cands, config.replace(release="document 15 %"))
    assert pinned == "document 15 %"


def test_with_a_reading_the_defender_is_cross_fitted_on_its_halves(ctx, config):
    reading = corpus({"Acme": 4, "Bolt": 4, "Cres": 4, "Dyna": 4}, chunks_per_doc=4, seed=9, prefix="r")
    units = ([c.text for c in reading], [c.protected for c in reading], [c.doc_id for c in reading])
    docs = document_candidates(ctx, config, units)
    assert "cross-fitted" in docs.ranked_by
    assert docs.prep.plans is not None and len(docs.prep.plans) == 8
    assert list((__import__("pathlib").Path(config.prepare.cache_dir) / "document_defence").glob("defender_*.map"))


def test_document_settings_are_validated():
    for bad in ({"document_levels": [0.0]}, {"document_levels": [1.5]}, {"document_fill": "blank"},
                {"document_top_k": 0}, {"document_levels": ["0.1"]}):
        with pytest.raises(ConfigError, match="document"):
            RunConfig.of(**bad)
    config = RunConfig.of(document_levels=[0.1], document_fill="mask")
    again = RunConfig.from_toml_text(config.to_toml())
    assert again.document.document_levels == [0.1] and again.document.document_fill == "mask"
    assert "[document]" in config.to_toml()
    assert RunConfig.of(document_levels=[]).document.document_levels == []


def test_no_levels_builds_no_candidates(ctx):
    assert document_candidates(ctx, RunConfig.of(document_levels=[])) is None


def test_a_review_reads_the_preparation_back_only_when_it_rejects_a_change(ctx, config, tmp_path):
    """The levels are kept apart from the preparation a review needs (issue 21: most of the
    defence's memory): a build holds none of it, a rejection reads it back from the memo, or
    builds it again when that entry is gone, and each way gives the same release."""
    import shutil
    from pathlib import Path

    from neswap_core.choose.document_candidates import PREP_MEMO, PrepSource

    config = config.replace(cache_dir=str(tmp_path / "cache"))
    built = document_candidates(ctx, config)  # built here
    assert isinstance(built.prep_source, PrepSource)  # not held
    rid = "document 15 %"
    key = Counter(c.key for c in built.results[rid].changes).most_common(1)[0][0]
    assert built.result(rid, frozenset()) is built.results[rid]
    assert isinstance(built.prep_source, PrepSource)  # nothing rejected: nothing read
    first = built.result(rid, frozenset({key}))
    assert not isinstance(built.prep_source, PrepSource) and built.prep.plans is None
    shutil.rmtree(Path(config.prepare.cache_dir) / "memo" / PREP_MEMO)
    again = document_candidates(ctx, config)  # the levels from the memo, no preparation
    assert again.table.equals(built.table) and isinstance(again.prep_source, PrepSource)
    second = again.result(rid, frozenset({key}))  # its preparation built again
    for a, b in ((first, second), (first, built.result(rid, frozenset({key})))):
        assert [c.text for c in a.chunks] == [c.text for c in b.chunks]
        assert a.changes == b.changes and key not in {c.key for c in a.changes}


def test_a_kept_build_reads_each_level_only_when_it_is_asked_for(ctx, config, tmp_path):
    """A restarted server drawing the frontier needs the levels' rows, not their texts (issue
    21: the 10k corpus's six levels were 91 MB and 1.6 s of every fresh Frontier page): each
    level is kept apart, as its changed chunks only, read on first use; a level whose entry is
    gone is made again, the same."""
    import shutil
    from pathlib import Path

    from neswap_core.choose.document_candidates import LEVEL_MEMO, LevelResults

    class Named:  # an embedder with an identity, as the app's: the measures are kept too
        model_name, backend = "stand-in", "test"

        def encode(self, texts):
            return embed(texts)

    ctx = ReleaseContext(ctx.chunks, ctx.embeddings, ctx.mixture, Named().encode)
    config = config.replace(cache_dir=str(tmp_path / "cache"))
    built = document_candidates(ctx, config)
    again = document_candidates(ctx, config)  # read back
    assert isinstance(again.results, LevelResults) and again.table.equals(built.table)
    assert list(again.results) == list(built.results) and again.results.loaded() == {}
    rid = "document 15 %"
    level = again.results[rid]
    assert list(again.results.loaded()) == [rid]  # one level read, not the others
    assert [c.text for c in level.chunks] == [c.text for c in built.results[rid].chunks]
    assert level.changes == built.results[rid].changes and level.selected == built.results[rid].selected
    assert all(a is b for a, b in zip(level.chunks, ctx.chunks, strict=True) if a == b)  # the corpus's own
    assert again.measures(level) == built.measures(built.results[rid])  # measured once, not again
    shutil.rmtree(Path(config.prepare.cache_dir) / "memo" / LEVEL_MEMO)
    third = document_candidates(ctx, config)
    remade = third.results["document 30 %"]  # its entry gone: made again
    assert [c.text for c in remade.chunks] == [c.text for c in built.results["document 30 %"].chunks]
    with pytest.raises(KeyError):
        third.results["document 99 %"]


def test_a_build_holds_at_most_two_levels_whatever_is_read(ctx, config, tmp_path):
    """Issue 21: the candidate table reads every level, and each stayed in memory (161 MB of the
    10k corpus's candidate stage, ~1.6 GB at 100k); a kept build, cold or read back, holds the
    ``LEVELS_HELD`` read last, and a level read again is the same level, measured once."""
    from neswap_core.choose.document_candidates import LEVELS_HELD, LevelResults

    class Named:  # an embedder with an identity, as the app's: the measures are kept too
        model_name, backend = "stand-in", "test"

        def encode(self, texts):
            return embed(texts)

    ctx = ReleaseContext(ctx.chunks, ctx.embeddings, ctx.mixture, Named().encode)
    config = config.replace(cache_dir=str(tmp_path / "cache"))
    cold = document_candidates(ctx, config)
    assert isinstance(cold.results, LevelResults) and len(cold.results.loaded()) <= LEVELS_HELD  # measured
    ids = list(cold.results)
    assert len(ids) > LEVELS_HELD
    texts = {}
    for rid in ids + ids[:1]:
        texts[rid] = [c.text for c in cold.results[rid].chunks]
        assert len(cold.results.loaded()) <= LEVELS_HELD
    assert list(cold.results.loaded()) == [ids[-1], ids[0]]  # the ones read last
    again = document_candidates(ctx, config)
    for rid in ids:
        assert [c.text for c in again.results[rid].chunks] == texts[rid]
        assert again.measures(again.result(rid)) == dict(again.measured[rid])
    assert len(again.results.loaded()) == LEVELS_HELD


def test_a_cold_build_lets_each_level_go_once_it_is_kept(ctx, config, tmp_path, monkeypatch):
    """Issue 21: a cold build made all six levels before keeping them (the prefetch walk's peak
    held them together); each is now kept as it is made and let go, so no earlier level is
    alive when the next is made, and the levels read back are the ones made."""
    import weakref

    import neswap_core.choose.document_candidates as dc

    made, alive_before = [], []
    defend = dc.defend

    def watched(*args, **kwargs):
        alive_before.append(sum(ref() is not None for ref in made))
        result = defend(*args, **kwargs)
        made.append(weakref.ref(result))
        return result

    monkeypatch.setattr(dc, "defend", watched)
    config = config.replace(cache_dir=str(tmp_path / "cache"))
    built = document_candidates(ctx, config)
    assert len(made) == len(built.results) > 1 and alive_before == [0] * len(made)
    monkeypatch.setattr(dc, "defend", defend)
    held = dc._defence_levels(ctx.chunks, config, None, None, config.prepare.cache_dir)[2]  # made again, held
    assert list(held) == list(built.results)
    for rid, level in held.items():
        assert [c.text for c in built.results[rid].chunks] == [c.text for c in level.chunks]
        assert built.results[rid].changes == level.changes


def test_the_defender_fitted_beside_the_terms_gives_the_same_build(ctx, tmp_path, monkeypatch):
    """The defender's fits in worker processes while this process scores the documents' terms
    (``DefenderBeside``): the same plans, levels and rows as one after the other."""
    from neswap_core.choose import document_candidates as dc
    from neswap_core.models import fit_processes

    reading = corpus({"Acme": 4, "Bolt": 4, "Cres": 4, "Dyna": 4}, chunks_per_doc=4, seed=9, prefix="r")
    units = ([c.text for c in reading], [c.protected for c in reading], [c.doc_id for c in reading])
    started = []
    real_init = dc.DefenderBeside.__init__

    def recorded(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        started.append(self.beside)

    monkeypatch.setattr(dc.DefenderBeside, "__init__", recorded)
    built = {}
    for name, min_texts in (("serial", 10**9), ("beside", 0)):
        monkeypatch.setattr(fit_processes, "MIN_TEXTS", min_texts)
        config = RunConfig.of(document_levels=[0.05, 0.15, 0.3], document_min_z=0.0,
                              cache_dir=str(tmp_path / name))  # fmt: skip
        built[name] = document_candidates(ctx, config, units)
    assert started == [False, True]
    serial, beside = built["serial"], built["beside"]
    assert serial.table.equals(beside.table)
    a, b = serial.prep.plans, beside.prep.plans
    assert list(a) == list(b)
    for doc_id in a:
        assert a[doc_id].order == b[doc_id].order
        assert a[doc_id].fractions.tobytes() == b[doc_id].fractions.tobytes()
    for rid in serial.results:
        assert serial.results[rid].chunks == beside.results[rid].chunks
        assert [c.key for c in serial.results[rid].changes] == [c.key for c in beside.results[rid].changes]


def test_an_error_of_the_defender_s_fit_beside_the_terms_reaches_the_caller(ctx, tmp_path, monkeypatch):
    """A fit that fails in its thread is raised where the defence is built, not lost."""
    from neswap_core.choose import document_candidates as dc
    from neswap_core.models import fit_processes

    def broken(*args, **kwargs):
        raise MemoryError("the defender's fit ran out of memory")

    monkeypatch.setattr(fit_processes, "MIN_TEXTS", 0)
    monkeypatch.setattr(dc, "fitted_defender", broken)
    reading = corpus({"Acme": 2, "Bolt": 2}, chunks_per_doc=4, seed=9, prefix="r")
    units = ([c.text for c in reading], [c.protected for c in reading], [c.doc_id for c in reading])
    config = RunConfig.of(document_levels=[0.05], document_min_z=0.0, cache_dir=str(tmp_path))
    with pytest.raises(MemoryError, match="ran out of memory"):
        document_candidates(ctx, config, units)


def test_after_scoring_is_called_once_the_types_are_ranked_and_at_once_for_a_kept_build(ctx, tmp_path):
    """Issue 21: ``run_release`` starts the attackers' fits once the defence's scoring is done,
    beside the levels that follow in one process. ``after_scoring`` comes after the ranking and
    before the first level, once; a kept build calls it at once (nothing is scored)."""
    config = RunConfig.of(document_levels=[0.05, 0.15], document_min_z=0.0, cache_dir=str(tmp_path))
    said: list[str] = []
    cold = document_candidates(ctx, config, progress=lambda f, m: said.append(m),
                               after_scoring=lambda: said.append("after scoring"))
    assert said.count("after scoring") == 1
    at = said.index("after scoring")
    assert any("ranking each document's types" in m for m in said[:at])
    assert not any("% of words" in m for m in said[:at]) and any("% of words" in m for m in said[at:])
    kept: list[str] = []
    warm = document_candidates(ctx, config, progress=lambda f, m: kept.append(m),
                               after_scoring=lambda: kept.append("after scoring"))
    assert kept[:1] == ["after scoring"] and kept.count("after scoring") == 1
    assert list(warm.table.index) == list(cold.table.index)
