"""Line-ups (measure/lineups.py): each text named among its own company's line-up.

Checked against second methods: a panel with line-ups must give, line-up by line-up, the figures
of panels fitted on each line-up's companies alone (the per-chunk families) or of the whole-corpus
scores sliced to the line-up's columns (whole-document families); one line-up must be the
whole-corpus attacker bit for bit; each model is fitted on its line-up's texts only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from neswap_core.choose.attack_columns import IN_CORPUS, READING
from neswap_core.choose.scorers import build_scorers
from neswap_core.config.settings import RunConfig
from neswap_core.corpus import Chunk
from neswap_core.errors import ConfigError
from neswap_core.generate.document_budget import DocJob, DocumentDefender, _member_fall
from neswap_core.measure.attack import CrossFittedAttacker, TextAttacker, text_attacker
from neswap_core.measure.attack_scores import ReleaseScorer, _ranks
from neswap_core.measure.lineups import (
    MASKED,
    LineupTextAttacker,
    assign_lineups,
    lineup_chance,
    lineup_rows,
    mask_rows,
)
from neswap_core.measure.panel import AttackerPanel, LineupFamily
from neswap_core.measure.panel_scorers import family_scorers

COMPANIES = [f"co{i:02d}" for i in range(9)]
SHARED = ("revenue margin quarter growth customers demand guidance pricing costs outlook "
          "segment volume market cash capital orders supply").split()  # fmt: skip


def _text(rng, company: int, n_words: int = 30) -> str:
    own = [f"w{company}x{j}" for j in range(6)]
    near = [f"w{(company + 1) % 9}x{j}" for j in range(6)]  # a neighbour's words blur it
    pool = SHARED * 2 + own + near[:2]
    return " ".join(rng.choice(pool, size=n_words))


def _corpus(seed: int, docs_per_company: int, chunks_per_doc: int):
    rng = np.random.default_rng(seed)
    texts, labels, docs = [], [], []
    for c, name in enumerate(COMPANIES):
        for d in range(docs_per_company):
            for _ in range(chunks_per_doc):
                texts.append(_text(rng, c))
                labels.append(name)
                docs.append(f"{name}_{seed}_{d}")
    return texts, labels, docs


@pytest.fixture(scope="module")
def data():
    reading = _corpus(1, 3, 6)
    corpus = _corpus(2, 2, 5)
    rng = np.random.default_rng(7)
    changed = {int(p): _text(rng, int(rng.integers(9)))
               for p in rng.choice(len(corpus[0]), 25, replace=False)}  # fmt: skip
    return reading, corpus, changed


def test_line_ups_are_balanced_seeded_and_hold_at_most_size_companies():
    classes = np.array([f"c{i:03d}" for i in range(103)], dtype=object)
    lineup = assign_lineups(classes, 50, random_state=3)
    sizes = np.bincount(lineup)
    assert len(sizes) == 3 and sizes.max() <= 50 and sizes.max() - sizes.min() <= 1
    assert np.array_equal(lineup, assign_lineups(classes, 50, random_state=3))
    assert not np.array_equal(lineup, assign_lineups(classes, 50, random_state=4))
    assert not assign_lineups(classes, 103).any() and not assign_lineups(classes, None).any()
    with pytest.raises(ValueError, match="at least 2"):
        assign_lineups(classes, 1)


def test_mask_keeps_the_row_s_line_up_only_and_is_idempotent():
    lineup = np.array([0, 1, 0, 1])
    scores = np.arange(12, dtype=float).reshape(3, 4)
    y = np.array([0, 3, -1])
    masked = mask_rows(scores, y, lineup)
    assert masked[0].tolist() == [0, MASKED, 2, MASKED]
    assert masked[1].tolist() == [MASKED, 5, MASKED, 7]
    assert masked[2].tolist() == scores[2].tolist()  # unknown company: nothing to restrict to
    assert np.array_equal(mask_rows(masked, y, lineup), masked)
    # the rank is the rank among the line-up's columns
    assert _ranks(masked, y).tolist() == [1, 0, 4]
    assert lineup_chance(np.array([0, 1, 2]), np.array([0, 0, 1]), 3) == pytest.approx((0.5 + 0.5 + 1) / 3)


def test_panel_with_line_ups_equals_a_panel_per_line_up(data):
    """Second method: the word family of each line-up fitted alone, scored on that line-up's
    chunks alone; the whole-corpus accuracy is the chunk- (document-) weighted mean."""
    (rt, rl, rd), (ct, cl, cd), changed = data
    panel = AttackerPanel(["word", "retrieval"], lineup=4).fit(rt, rl, rd)
    assert isinstance(panel.families_["word"], LineupFamily)
    assert len(panel.families_["word"].parts_) == 3
    whole = panel.scorer(ct, cl, cd).score(changed).families
    chunk_named = doc_named = 0.0
    for rows in lineup_rows(rl, panel.classes_, panel.lineup_):
        companies = {rl[i] for i in rows}
        alone = AttackerPanel(["word"]).fit([rt[i] for i in rows], [rl[i] for i in rows], [rd[i] for i in rows])
        mine = [i for i, v in enumerate(cl) if v in companies]
        local = {p: t for p, t in changed.items() if cl[p] in companies}
        at = {p: k for k, p in enumerate(mine)}
        s = alone.scorer([ct[i] for i in mine], [cl[i] for i in mine], [cd[i] for i in mine]).score(
            {at[p]: t for p, t in local.items()}).families["word"]
        chunk_named += s.chunk_accuracy * len(mine)
        doc_named += s.document_accuracy * len({cd[i] for i in mine})
    assert whole["word"].chunk_accuracy == pytest.approx(chunk_named / len(ct), abs=1e-12)
    assert whole["word"].document_accuracy == pytest.approx(doc_named / len(set(cd)), abs=1e-12)


def test_whole_document_family_is_sliced_to_the_line_up(data):
    """Retrieval is fitted once (linear already) and its scores sliced: the masked ranks are the
    ranks among the line-up's columns of the unmasked scores."""
    (rt, rl, rd), (ct, cl, cd), _ = data
    panel = AttackerPanel(["retrieval"], lineup=4).fit(rt, rl, rd)
    fam = panel.families_["retrieval"]
    assert fam.lineup_ is not None
    raw = fam.chunk_scores(ct)
    y = np.searchsorted(panel.classes_, cl)
    expected = [int((raw[i, fam.lineup_ == fam.lineup_[y[i]]] > raw[i, y[i]]).sum()) for i in range(len(ct))]
    scorer = family_scorers(panel, ct, cl, cd)["retrieval"]
    assert scorer.rank_.tolist() == expected
    assert scorer.pre_release().chance == pytest.approx(1 / 3)


@pytest.mark.parametrize("block", [3, 4096])
def test_release_scorers_agree_with_the_panel_scorer_under_line_ups(data, monkeypatch, block):
    """The release scorers (measured by blocks of documents: ``block`` changed passages) give
    the panel's own figures, and the same per-document frame whatever the block."""
    import neswap_core.measure.attack_scores as attack_scores
    import neswap_core.measure.panel_scorers as panel_scorers

    (rt, rl, rd), (ct, cl, cd), changed = data
    panel = AttackerPanel(["word", "char", "retrieval", "bm25"], lineup=4).fit(rt, rl, rd)
    own = panel.scorer(ct, cl, cd).score(changed).families
    whole = {name: scorer.score(changed) for name, scorer in family_scorers(panel, ct, cl, cd).items()}
    monkeypatch.setattr(attack_scores, "SCORE_BLOCK", block)
    monkeypatch.setattr(panel_scorers, "SCORE_BLOCK", block)
    for name, scorer in family_scorers(panel, ct, cl, cd).items():
        m = scorer.score(changed)
        assert m.chunk_top1 == pytest.approx(own[name].chunk_accuracy, abs=1e-12), name
        assert m.document_accuracy == pytest.approx(own[name].document_accuracy, abs=1e-12), name
        pd.testing.assert_frame_equal(m.documents, whole[name].documents, check_exact=True)
        assert (m.chunk_top5, m.mcnemar_p) == (whole[name].chunk_top5, whole[name].mcnemar_p)
        np.testing.assert_array_equal(m.table, whole[name].table)


@pytest.mark.parametrize("block", [4, 4096])
def test_release_views_measure_the_release_as_score_does_from_one_scoring(data, monkeypatch, block):
    """Issue 21: the attack report measured the release (``score``), then the per-document
    views measured it again and scored each block's changed passages a third time. One pass
    now does both: the same measures, bit for bit, whatever the blocks; each view's passages
    scored as ``released_log_proba`` scores them (a second method); each changed passage
    scored once."""
    import neswap_core.measure.explain as explain
    from neswap_core.measure.explain import document_views, release_views

    (rt, rl, rd), (ct, cl, cd), changed = data
    panel = AttackerPanel(["word", "char", "retrieval"], lineup=4).fit(rt, rl, rd)
    scorers = family_scorers(panel, ct, cl, cd)
    expected = {name: scorer.score(changed) for name, scorer in scorers.items()}
    monkeypatch.setattr(explain, "SCORE_BLOCK", block)
    import neswap_core.measure.attack_scores as attack_scores

    monkeypatch.setattr(attack_scores, "SCORE_BLOCK", max(block // 2, 1))
    for name, scorer in scorers.items():
        asked: list[list[int]] = []
        original = type(scorer).released_rows

        def counted(self, positions, texts, original=original, asked=asked):
            asked.append(np.asarray(positions).tolist())
            return original(self, positions, texts)

        monkeypatch.setattr(type(scorer), "released_rows", counted)
        scorer.score(changed)
        batches, asked[:] = list(asked), []
        m, views = release_views(scorer, changed)
        monkeypatch.setattr(type(scorer), "released_rows", original)
        flat = [p for batch in asked for p in batch]
        assert sorted(flat) == sorted(p for p, t in changed.items() if t != ct[p]), name  # once each
        # in score's own batches: a dense product (the embedding family) gives other last
        # digits in other batches (33 margins of the 100k attack.csv moved by 1e-14)
        assert asked == batches, name
        e = expected[name]
        assert m.to_dict() == e.to_dict(), name
        pd.testing.assert_frame_equal(m.documents, e.documents, check_exact=True)
        frame = e.documents.set_index("doc_id")
        assert [v.doc_id for v in views] == list(scorer.documents_)
        for v in views:
            assert (v.named, v.predicted) == (bool(frame.loc[v.doc_id, "named"]), frame.loc[v.doc_id, "predicted"])
            y = scorer.doc_y_[list(scorer.documents_).index(v.doc_id)]
            for p, lp in zip(v.chunks["position"], v.chunks["log_prob_true"], strict=True):
                row = (scorer.released_log_proba(np.array([p]), [changed[p]]) if p in changed
                       else scorer.log_proba_rows(np.array([p])))  # fmt: skip
                assert lp == row[0, y], (name, v.doc_id, p)
        # one document alone: its view, measured over the whole release all the same
        doc = views[3].doc_id
        (alone,) = document_views(scorer, changed, doc_ids=[doc])
        assert (alone.named, alone.predicted) == (views[3].named, views[3].predicted)
        pd.testing.assert_frame_equal(alone.chunks, views[3].chunks)


def test_one_line_up_is_the_whole_corpus_attacker_bit_for_bit(data):
    (rt, rl, rd), (ct, cl, cd), changed = data
    a = AttackerPanel(["word"], lineup=9).fit(rt, rl, rd)
    b = AttackerPanel(["word"]).fit(rt, rl, rd)
    assert not isinstance(a.families_["word"], LineupFamily)
    assert np.array_equal(a.families_["word"].clf_.coef_, b.families_["word"].clf_.coef_)
    assert type(text_attacker(rt, rl, lineup=50)) is TextAttacker
    one = CrossFittedAttacker(lineup=9).fit(ct, cl, cd).oof_log_proba_
    assert np.array_equal(one, CrossFittedAttacker().fit(ct, cl, cd).oof_log_proba_)


def test_each_line_up_model_reads_its_own_companies_only(data):
    (rt, rl, rd), _, _ = data
    attacker = text_attacker(rt, rl, lineup=4)
    assert isinstance(attacker, LineupTextAttacker)
    seen = [set(p.classes_) for p in attacker.parts_]
    assert sorted(c for s in seen for c in s) == sorted(COMPANIES)  # a partition
    for part, companies in zip(attacker.parts_, seen, strict=True):
        assert part.model_.coef_.shape[0] == len(companies) <= 4
        alone = TextAttacker().fit([t for t, v in zip(rt, rl, strict=True) if v in companies],
                                   [v for v in rl if v in companies])  # fmt: skip
        assert np.array_equal(part.model_.coef_, alone.model_.coef_)
    # the reading attacker's scorer ranks within the line-up
    scorer = ReleaseScorer(attacker, rt, rl, rd)
    assert scorer.rank_.max() < 4


def test_in_corpus_attacker_with_line_ups_scores_its_out_of_fold_rows(data):
    _, (ct, cl, cd), _ = data
    model = CrossFittedAttacker(lineup=4).fit(ct, cl, cd)
    scorer = ReleaseScorer(model, ct, cl, cd, name=IN_CORPUS)
    assert np.array_equal(scorer.log_proba_, mask_rows(model.oof_log_proba_, scorer.y_, model.lineup_))
    assert scorer.rank_.max() < 4


def test_build_scorers_passes_the_line_up_to_every_attacker(data, tmp_path):
    (rt, rl, rd), (ct, cl, cd), _ = data
    reading = text_attacker(rt, rl, lineup=4)
    reading.units_ = (rt, rl, rd)
    chunks = [Chunk(f"{d}#{i}", d, i, t, v) for i, (t, v, d) in enumerate(zip(ct, cl, cd, strict=True))]
    scorers = build_scorers(chunks, reading, families=["word", "char", "retrieval"], cache_dir=str(tmp_path),
                            lineup=4)  # fmt: skip
    for name, scorer in scorers.items():
        assert scorer.lineup_ is not None and scorer.rank_.max() < 4, name
    assert set(scorers) == {READING, "char", "retrieval", IN_CORPUS}
    # a warm run (pre-release scores from the disk memo) gives the same figures
    again = build_scorers(chunks, reading, families=["word", "char", "retrieval"], cache_dir=str(tmp_path),
                          lineup=4)  # fmt: skip
    for name in scorers:
        assert np.array_equal(again[name].log_proba_, scorers[name].log_proba_), name


def test_every_attacker_and_the_defender_deal_the_same_line_ups_whatever_their_seed(data):
    """The reading attacker is fitted with seed 0 (``fit_reading``), the panel, the in-corpus
    attacker and the defender with the sweep's seed: line-ups dealt by each one's own seed made
    the panel's worst case a maximum over different line-ups, and the defence defend against
    line-ups the judges did not use."""
    (rt, rl, rd), (ct, cl, cd), _ = data
    dealt = [text_attacker(rt, rl, lineup=4, random_state=0).lineup_,
             AttackerPanel(["word"], random_state=7, lineup=4).fit(rt, rl, rd).lineup_,
             CrossFittedAttacker(random_state=7, lineup=4).fit(ct, cl, cd).lineup_]  # fmt: skip
    defender = DocumentDefender(members=("word",), random_state=7, lineup=4).fit(rt, rl, rd)
    dealt += [f.lineup_ for _, _, f in defender.members_]
    assert len(set(COMPANIES)) == 9 and all(len(d) == 9 for d in dealt)
    assert all(np.array_equal(d, dealt[0]) for d in dealt), dealt


def test_defender_rival_stays_inside_the_line_up(data):
    (rt, rl, rd), (ct, cl, cd), _ = data
    defender = DocumentDefender(members=("word", "retrieval"), lineup=4).fit(rt, rl, rd)
    word = next(f for n, h, f in defender.members_ if n == "word")
    assert isinstance(word, LineupFamily)
    base = [t for t, d in zip(ct, cd, strict=True) if d == cd[0]]
    company = cl[0]
    y = list(word.classes_).index(company)
    outside = next(c for c, g in zip(word.classes_, word.lineup_, strict=True) if g != word.lineup_[y])
    edits = [(0, [(0, len(base[0].split()[0]), "[X]")])]
    job = DocJob(company=company, base=base, n_types=1, types=[0], edits=edits, rival=outside)
    fall = _member_fall(word, job)
    # the same as naming the best rival inside the line-up
    assert np.isfinite(fall).all()
    assert np.array_equal(fall, _member_fall(word, DocJob(company, base, 1, [0], edits, None)))


def test_lineup_setting_is_checked():
    with pytest.raises(ConfigError, match="line-up"):
        RunConfig.from_dict({"sweep": {"lineup": 1}})
    assert RunConfig().sweep.lineup == 50


def test_the_statement_names_the_line_ups_only_when_there_are_several():
    from neswap_core.measure.lineups import lineup_statement

    assert lineup_statement(35, 50) is None and lineup_statement(158, 0) is None
    text = lineup_statement(158, 50)
    assert "158 companies" in text and "4 line-ups of at most 50" in text


@pytest.mark.slow
def test_a_release_past_the_line_up_names_within_line_ups_and_says_so(monkeypatch):
    """``run_release`` on the bundled sample (10 companies) with line-ups of at most 4: the
    notes say so, the in-corpus attacker's chance is the line-ups' (about 1/3, not 1/10) and no
    passage ranks below its line-up's size; the written release's attack report agrees."""
    from pathlib import Path

    from neswap_core.prepare.pipeline import prepare_path
    from neswap_core.publish.protection import release_attack
    from neswap_core.run_release import run_release
    from tests.test_candidate_sample import _hashed

    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    config = RunConfig.of(corpus="data/sample", n_components=5, n_init=1, max_swaps=10,
                          document_levels=[0.3], lineup=4)  # fmt: skip
    prepared = prepare_path("data/sample", config)
    dim = prepared.embeddings.shape[1]
    result = run_release(prepared, config, lambda t: _hashed(t, dim), processes=1)
    assert any("3 line-ups of at most 4" in n for n in result.notes)
    scorer = result.scorers[IN_CORPUS]
    sizes = np.bincount(scorer.lineup_)
    assert sorted(sizes.tolist()) == [3, 3, 4]
    assert scorer.rank_.max() < 4
    chance = float(np.mean(1.0 / sizes[scorer.lineup_[scorer.y_]]))
    assert result.candidates.table["chance"].iloc[0] == pytest.approx(chance)
    summary, _ = release_attack(result)
    assert summary["attackers"][IN_CORPUS]["release"]["chance"] == pytest.approx(chance)


def test_every_path_that_fits_attackers_defaults_to_the_release_s_line_up():
    """The app fits the reading attacker and the panel through these functions: a default of
    None in one of them would judge one attacker on the whole corpus and the others in line-ups."""
    import inspect

    from neswap_core.choose.document_candidates import fitted_defender
    from neswap_core.config.defaults import LINEUP_COMPANIES
    from neswap_core.measure.reading import reading_attacker
    from neswap_core.publish.evaluate import fit_reading

    for fn in (reading_attacker, fit_reading, build_scorers, fitted_defender):
        assert inspect.signature(fn).parameters["lineup"].default == LINEUP_COMPANIES, fn.__name__


def test_each_text_is_scored_by_its_own_line_up_s_model_only(data):
    """Scoring with the texts' line-ups gives the masked scores of scoring by every model, and
    each model reads only its own line-up's texts (one model per text: linear in the corpus)."""
    (rt, rl, _), (ct, cl, cd), _ = data
    attacker = text_attacker(rt, rl, lineup=4)
    y = np.searchsorted(attacker.classes_, cl)
    rows = attacker.lineup_[y]
    every = mask_rows(attacker.predict_log_proba(ct), y, attacker.lineup_)
    read = []
    for part in attacker.parts_:
        original = part.predict_log_proba
        part.predict_log_proba = lambda texts, original=original: (read.append(len(texts)), original(texts))[1]
    own = attacker.predict_log_proba(ct, rows)
    assert sum(read) == len(ct)
    assert np.array_equal(mask_rows(own, y, attacker.lineup_), every)
    # the panel's line-up family and the in-corpus attacker likewise
    panel = AttackerPanel(["char"], lineup=4).fit(rt, rl, None)
    fam = panel.families_["char"]
    assert np.array_equal(mask_rows(fam.chunk_scores(ct, None, rows), y, fam.lineup_),
                          mask_rows(fam.chunk_scores(ct), y, fam.lineup_))  # fmt: skip
    model = CrossFittedAttacker(lineup=4).fit(ct, cl, cd)
    assert np.array_equal(mask_rows(model.log_proba_at(np.arange(len(ct)), ct), y, model.lineup_),
                          mask_rows(model.oof_log_proba_, y, model.lineup_))  # fmt: skip


def test_whole_document_scores_of_some_columns_are_those_columns_bit_for_bit(data):
    """The defender scores each document's candidate types on its company and rival only
    (``doc_scores(columns=...)``): scoring every company's profile made the document defence
    documents x types x companies, quadratic in the corpus (906 of the 30k walk's 1,319 CPU-s).
    The two columns must be the same numbers as those columns of the whole product."""
    from scipy import sparse

    from neswap_core.measure.panel import BM25Family, RetrievalFamily

    (rt, rl, rd), (ct, cl, cd), _ = data
    rng = np.random.default_rng(5)
    for family in (RetrievalFamily().fit(rt, rl), BM25Family().fit(rt, rl)):
        counts = family.counts(ct)
        rows = sparse.vstack([sparse.csr_matrix(counts[list(rng.choice(len(ct), 6))].sum(axis=0))
                              for _ in range(40)])  # fmt: skip
        every = family.doc_scores(sparse.csr_matrix(rows))
        for cols in ([3, 1], [0, 8], [5, 5]):
            assert np.array_equal(family.doc_scores(sparse.csr_matrix(rows), columns=cols), every[:, cols])


def test_what_scoring_finds_once_per_process_scores_as_found_each_time_and_is_never_pickled(data):
    """The line-up models' columns and the retrieval family's idf diagonal are made once per
    process (issue 21: each of the document defence's ~6,000 documents is scored alone): the
    scores are those of finding them on every call, bit for bit, and a pickled model carries
    neither (a model read back finds them again)."""
    import pickle

    from scipy import sparse

    from neswap_core.measure.panel import RetrievalFamily, _l2

    (rt, rl, _), (ct, cl, _), _ = data
    attacker = text_attacker(rt, rl, lineup=4)
    first = attacker.predict_log_proba(ct)
    assert "_columns" in attacker.__dict__
    cols = [np.searchsorted(attacker.classes_, p.classes_) for p in attacker.parts_]
    assert all(np.array_equal(a, b) for a, b in zip(attacker._part_columns(), cols, strict=True))
    back = pickle.loads(pickle.dumps(attacker))
    assert "_columns" not in back.__dict__
    assert np.array_equal(back.predict_log_proba(ct), first)
    family = RetrievalFamily().fit(rt, rl)
    counts = sparse.csr_matrix(family.counts(ct), dtype=np.float64)
    tf = counts.copy()
    tf.data = 1.0 + np.log(tf.data)
    by_hand = _l2(tf @ sparse.diags(family.idf_))  # what _weigh made on every call
    for _ in range(2):
        weighed = family._weigh(counts)
        assert (weighed != by_hand).nnz == 0 and np.array_equal(weighed.indices, by_hand.indices)
        assert np.array_equal(weighed.data, by_hand.data)
    assert "_idf_diagonal" in family.__dict__
    assert "_idf_diagonal" not in pickle.loads(pickle.dumps(family)).__dict__


def test_whole_document_scores_of_a_line_up_are_those_columns_bit_for_bit(data, monkeypatch):
    """Passages and documents are scored against their own line-up's companies only
    (``doc_scores(lineups=...)``): against every company it was passages × companies, a third
    of the attackers' scoring at 100k passages. Kept entries are the whole product's, bit for
    bit; the rest are ``MASKED``, as ``mask_rows`` makes them; −1 (an unknown company) keeps
    the row whole; the scorers never score a line-up passage against every company."""
    from scipy import sparse

    from neswap_core.measure import panel as panel_module

    (rt, rl, rd), (ct, cl, cd), changed = data
    panel = AttackerPanel(["retrieval", "bm25"], lineup=4).fit(rt, rl, rd)
    rng = np.random.default_rng(11)
    for family in panel.families_.values():
        counts = sparse.csr_matrix(family.counts(ct))
        lineups = rng.integers(-1, 3, size=len(ct))
        every = family.doc_scores(counts)
        part = family.doc_scores(counts, lineups=lineups)
        inside = (family.lineup_[None, :] == lineups[:, None]) | (lineups[:, None] < 0)
        assert np.array_equal(part[inside], every[inside])
        assert (part[~inside] == MASKED).all() and (~inside).any()
        y = np.searchsorted(panel.classes_, cl)
        assert np.array_equal(mask_rows(every, y, family.lineup_),
                              family.chunk_scores(ct, None, family.lineup_[y]))  # fmt: skip
    before = {n: s.score(changed) for n, s in family_scorers(panel, ct, cl, cd).items()}
    whole = []
    real = panel_module.by_lineup
    monkeypatch.setattr(panel_module, "by_lineup", lambda f, r, n, lineups=None: whole.append(
        lineups is None or (np.asarray(lineups) < 0).all()) or real(f, r, n, lineups))  # fmt: skip
    for name, scorer in family_scorers(panel, ct, cl, cd).items():
        m = scorer.score(changed)
        pd.testing.assert_frame_equal(m.documents, before[name].documents, check_exact=True)
        np.testing.assert_array_equal(m.table, before[name].table)
    assert whole and not any(whole)


def test_defender_fall_of_the_retrieval_member_is_unchanged_by_scoring_two_columns(data):
    """``_member_fall``'s whole-document branch against the full product it replaced: every
    company's column of the summed edited counts. Equal up to rounding since the margins come
    from the changed terms only (``measure/edit_margins.py``, issue 21); bit for bit before."""
    from scipy import sparse

    (rt, rl, rd), (ct, cl, cd), _ = data
    defender = DocumentDefender(members=("retrieval",), lineup=4).fit(rt, rl, rd)
    fam = defender.members_[0][2]
    base = [t for t, d in zip(ct, cd, strict=True) if d == cd[0]]
    words = base[0].split()
    edits = [(i, [(0, len(base[i].split()[0]), "[X]")]) for i in range(len(base))]
    edits += [(0, [(len(" ".join(words[:3])) + 1, len(" ".join(words[:4])), "[Y]")])]
    job = DocJob(company=cl[0], base=base, n_types=3, types=[k % 3 for k in range(len(edits))],
                 edits=edits, rival=None)  # fmt: skip
    fall = _member_fall(fam, job)
    # the replaced computation: every company's column, then the two
    classes = list(fam.classes_)
    y = classes.index(job.company)
    inside = fam.lineup_ == fam.lineup_[y]
    others = inside & (np.arange(len(classes)) != y)
    base_counts = fam.counts(base)
    total = sparse.csr_matrix(base_counts.sum(axis=0))
    s0 = fam.doc_scores(total)[0]
    r = int(np.argmax(np.where(others, s0, -np.inf)))
    delta = fam.edited_counts(base, edits) - base_counts[[i for i, _ in edits]]
    agg = sparse.csr_matrix((np.ones(len(edits)), (job.types, np.arange(len(edits)))), shape=(3, len(edits))) @ delta
    s1 = fam.doc_scores(sparse.vstack([total] * 3) + agg)
    expected = ((s0[y] - s0[r]) - (s1[:, y] - s1[:, r])) / (s0[y] - s0[r])
    assert np.any(expected != 0)
    np.testing.assert_allclose(fall, expected, rtol=1e-9, atol=1e-12)


class _Scores:
    """A duck-typed attacker of fixed random log-probabilities (many companies, line-ups of
    ``size``): what ``ReleaseScorer`` asks of an attacker, without fitting one."""

    def __init__(self, n_companies: int, size: int, n: int, seed: int = 0):
        self.classes_ = np.array([f"c{i:03d}" for i in range(n_companies)], dtype=object)
        self.lineup_ = assign_lineups(self.classes_, size)
        rng = np.random.default_rng(seed)
        self.table = np.log(rng.dirichlet(np.ones(n_companies), size=n))

    def log_proba_at(self, positions, texts, lineups=None):
        return self.table[np.asarray(positions, dtype=np.int64)]


def _held_bytes(scorer) -> int:
    """Bytes of the arrays a scorer holds (arrays, and anything that counts its own)."""
    return sum(int(getattr(value, "nbytes", 0)) for value in vars(scorer).values())


@pytest.mark.parametrize("block", [7, 4096])
def test_release_scorer_keeps_each_row_s_line_up_and_gives_back_the_masked_rows(monkeypatch, block):
    """Issue 21: the pre-release scores are kept by line-up (a passages × companies matrix grew
    as the corpus squared), built in blocks; every figure and row is the one-pass dense one's."""
    import neswap_core.measure.attack_scores as attack_scores

    n, k = 200, 60
    attacker = _Scores(k, 5, n)
    rng = np.random.default_rng(1)
    labels = [str(attacker.classes_[i]) for i in rng.integers(k, size=n)]
    labels[3] = labels[150] = "a company the attacker never saw"
    docs = [f"d{i // 5}" for i in range(n)]
    texts = [f"text {i}" for i in range(n)]
    monkeypatch.setattr(attack_scores, "SCORE_BLOCK", block)
    scorer = ReleaseScorer(attacker, texts, labels, docs)
    dense = mask_rows(attacker.table, scorer.y_, attacker.lineup_)
    assert np.array_equal(scorer.log_proba_, dense)
    assert np.array_equal(scorer.log_proba_rows(np.array([150, 3, 7])), dense[[150, 3, 7]])
    sums = np.zeros((len(scorer.documents_), k))
    np.add.at(sums, scorer.doc_index_, dense)
    assert np.array_equal(scorer.doc_log_proba_rows(np.arange(len(sums))), sums)
    assert np.array_equal(scorer.rank_, _ranks(dense, scorer.y_))
    changed = {p: f"new {p}" for p in (3, 10, 11, 150, 199)}
    m = scorer.score(changed)
    pos = np.array(sorted(changed))
    after = sums.copy()
    np.add.at(after, scorer.doc_index_[pos], mask_rows(attacker.table[pos], scorer.y_[pos], attacker.lineup_) - dense[pos])
    named = (after.argmax(axis=1) == scorer.doc_y_) & (scorer.doc_y_ >= 0)
    assert m.documents_named == int(named.sum())
    # a warm run reads the kept scores back
    again = ReleaseScorer(attacker, texts, labels, docs, pre_log_proba=scorer.pre_log_proba_)
    assert np.array_equal(again.log_proba_, dense)
    assert again.score(changed).documents.equals(m.documents)


def test_release_scorer_with_line_ups_holds_no_passages_by_companies_matrix():
    """60 companies in line-ups of 5: the scorer holds its rows' line-up blocks, not a dense
    passages × companies matrix of pre-release scores, nor a documents × companies one of the
    documents' sums (a test that fails without either change)."""
    n, k = 2000, 60
    attacker = _Scores(k, 5, n)
    labels = [str(attacker.classes_[(i // 10) % k]) for i in range(n)]  # one company a document
    scorer = ReleaseScorer(attacker, [f"t{i}" for i in range(n)], labels, [f"d{i // 10}" for i in range(n)])
    dense_bytes = n * k * 8
    assert _held_bytes(scorer) < dense_bytes / 3
    assert scorer.doc_log_proba_.nbytes < len(scorer.documents_) * k * 8 / 3


def test_measuring_a_release_never_makes_its_rows_or_the_documents_whole(monkeypatch):
    """Issue 21: measuring a release that changes every passage made the changed passages ×
    companies scores whole (1 GB per attacker for the written release at 100,000 passages and
    1,587 companies), then two documents × companies copies; by blocks of whole documents the
    measurement's peak allocation stays far below those, and every figure and the per-document
    frame are the dense one-pass computation's (a second method, here by hand)."""
    import tracemalloc

    import neswap_core.measure.attack_scores as attack_scores

    n, k, per_doc = 6000, 400, 6
    attacker = _Scores(k, 5, 2 * n)  # rows n.. are the released texts' scores
    labels = [str(attacker.classes_[(i // per_doc) % k]) for i in range(n)]
    labels[7] = "a company the attacker never saw"
    docs = [f"d{i // per_doc:05d}" for i in range(n)]
    scorer = ReleaseScorer(attacker, [f"t{i}" for i in range(n)], labels, docs)

    class Released(_Scores):
        def log_proba_at(self, positions, texts, lineups=None):
            return attacker.table[n + np.asarray(positions, dtype=np.int64)]

    scorer.attacker = Released(k, 5, 1)
    changed = {p: f"new {p}" for p in range(n)}
    monkeypatch.setattr(attack_scores, "SCORE_BLOCK", 64)
    scorer.score({p: changed[p] for p in range(10)})  # imports and first-use costs
    tracemalloc.start()
    try:
        m = scorer.score(changed)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * k * 8 / 8, peak  # the dense release rows alone: 19 MB
    # the dense computation
    y, lineup = scorer.y_, attacker.lineup_
    post = mask_rows(attacker.table[n:], y, lineup)
    sums = np.zeros((len(scorer.documents_), k))
    np.add.at(sums, scorer.doc_index_, post)
    dy = scorer.doc_y_
    named = (sums.argmax(axis=1) == dy) & (dy >= 0)
    rows = np.arange(len(dy))
    true = np.where(dy >= 0, sums[rows, np.maximum(dy, 0)], -np.inf)
    others = sums.copy()
    others[rows[dy >= 0], dy[dy >= 0]] = -np.inf
    assert m.documents_named == int(named.sum()) and m.chunk_top1 == np.mean(_ranks(post, y) == 0)
    np.testing.assert_array_equal(m.documents["named"].to_numpy(), named)
    np.testing.assert_allclose(m.documents["margin"].to_numpy(), true - others.max(axis=1), rtol=0, atol=1e-9)
    assert list(m.documents["predicted"]) == list(attacker.classes_[sums.argmax(axis=1)])


def test_in_corpus_out_of_fold_scores_are_kept_by_line_up_and_given_back_whole(data):
    """The in-corpus attacker's out-of-fold scores (issue 21: passages × companies) are kept
    by line-up; made whole they are each fold model's scores of its held rows, bit for bit,
    LOG_FLOOR rows of a line-up with one company in a fold included."""
    from neswap_core.measure.attack import LOG_FLOOR, _aligned
    from neswap_core.measure.lineups import LineupRows

    _, (ct, cl, cd), _ = data
    texts, labels, docs = list(ct), list(cl), list(cd)
    texts += ["w8x1 w8x2 revenue"] * 3  # a tenth company with one document: a one-company line-up in some folds
    labels += ["solo"] * 3
    docs += ["solo_doc"] * 3
    model = CrossFittedAttacker(lineup=4).fit(texts, labels, docs)
    assert isinstance(model.oof_, LineupRows)
    dense = np.full((len(texts), len(model.classes_)), LOG_FLOOR)
    for f, fold_model in enumerate(model.models_):
        held = np.flatnonzero(model.folds_ == f)
        if fold_model is not None and len(held):
            dense[held] = _aligned(model._fold_scores(fold_model, held, [texts[i] for i in held]),
                                   fold_model.classes_, model.classes_)  # fmt: skip
    assert np.array_equal(model.oof_log_proba_, dense)
    assert model.oof_.nbytes < dense.nbytes


def test_in_corpus_fit_never_holds_a_passages_by_companies_matrix(monkeypatch):
    """Issue 21: the in-corpus attacker's out-of-fold scores were made whole (passages ×
    companies, 1.3 GB at 100,000 passages and 1,587 companies) before being kept by line-up;
    scored in blocks, the fit's peak allocation stays below that matrix, and its kept rows are
    the one-pass dense ones' (a test that fails without the blocks: 35 MB beyond the models)."""
    import tracemalloc

    import neswap_core.measure.attack as attack
    from neswap_core.measure.attack import LOG_FLOOR, _aligned

    rng = np.random.default_rng(3)
    k, docs_per, chunks_per = 600, 2, 4
    texts, labels, docs = [], [], []
    for c in range(k):
        own = [f"c{c}w{j}" for j in range(4)]
        for d in range(docs_per):
            for _ in range(chunks_per):
                texts.append(" ".join(rng.choice(SHARED + own, size=12)))
                labels.append(f"co{c:03d}")
                docs.append(f"co{c:03d}_{d}")
    monkeypatch.setattr(attack, "SCORE_BLOCK", 256)
    dense_bytes = len(texts) * k * 8
    CrossFittedAttacker(lineup=6).fit(texts[:400], labels[:400], docs[:400])  # imports, at first use
    tracemalloc.start()
    try:
        model = CrossFittedAttacker(lineup=6).fit(texts, labels, docs)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # beyond what it keeps (its models, ∝ companies): 3 MB here, 35 MB as one dense matrix
    assert peak - kept < dense_bytes / 4, (peak, kept, dense_bytes)
    dense = np.full((len(texts), k), LOG_FLOOR)
    for f, fold_model in enumerate(model.models_):
        held = np.flatnonzero(model.folds_ == f)
        dense[held] = _aligned(model._fold_scores(fold_model, held, [texts[i] for i in held]),
                               fold_model.classes_, model.classes_)  # fmt: skip
    assert np.array_equal(model.oof_log_proba_, dense)


def test_fold_assignment_deals_each_group_as_a_scan_per_group_did():
    """Issue 21: the folds are found without a scan of every item per group (groups × items);
    a second method, the scan itself, gives the same folds for the same seed."""
    from neswap_core.measure.attack import fold_assignment

    rng = np.random.default_rng(5)
    groups = [f"doc{int(g)}" for g in rng.integers(40, size=700)]

    def scanned(groups, n_folds, seed):
        rng = np.random.default_rng(seed)
        group = np.asarray(groups, dtype=object)
        folds = np.empty(len(group), dtype=np.int64)
        for g in dict.fromkeys(group):
            idx = np.flatnonzero(group == g)
            start = int(rng.integers(n_folds))
            folds[idx[rng.permutation(len(idx))]] = (start + np.arange(len(idx))) % n_folds
        return folds

    for n_folds, seed in ((5, 0), (3, 11)):
        assert np.array_equal(fold_assignment(groups, n_folds, seed), scanned(groups, n_folds, seed))
    assert len(fold_assignment([], 5, 0)) == 0


def test_the_in_corpus_folds_share_each_term_they_know(data, tmp_path):
    """Issue 21: the folds' vocabularies (fitted in separate processes) held one string per
    term and fold; each term is now one object across folds and line-ups, kept so through a
    mapped pickle, and every score is the same."""
    from neswap_core import mapped_pickle

    _, (ct, cl, cd), changed = data
    model = CrossFittedAttacker(lineup=4).fit(ct, cl, cd)
    vocabularies = [part.vectorizer_.vocabulary_ for m in model.models_ for part in m.parts_]
    assert len(vocabularies) > 5
    mapped_pickle.dump(model, tmp_path / "m.map")
    back = mapped_pickle.load(tmp_path / "m.map")
    for fitted in (model, back):
        first: dict = {}
        for m in fitted.models_:
            for part in m.parts_:
                for term in part.vectorizer_.vocabulary_:
                    assert first.setdefault(term, term) is term  # one object per term
        assert sum(len(v) for v in vocabularies) > len(first)  # shared by several
    positions = np.array(sorted(changed))
    texts = [changed[int(p)] for p in positions]
    assert np.array_equal(back.log_proba_at(positions, texts), model.log_proba_at(positions, texts))
    assert np.array_equal(back.oof_log_proba_, model.oof_log_proba_)


def test_scorers_of_an_empty_corpus_measure_nothing_without_error(data):
    """Measured by blocks of documents, a corpus with no passages has no block: every share
    is NaN (nothing to name), no error (a whole-document family split zero documents)."""
    (rt, rl, rd), _, _ = data
    panel = AttackerPanel(["word", "retrieval"], lineup=4).fit(rt, rl, rd)
    for name, scorer in family_scorers(panel, [], [], []).items():
        m = scorer.score({})
        assert np.isnan(m.chunk_top1) and np.isnan(m.document_accuracy) and m.n_documents == 0, name


@pytest.mark.parametrize("workers", [False, True])
def test_in_corpus_scorer_from_the_out_of_fold_scores_is_the_scorer_that_scores_again(data, monkeypatch, workers):
    """Issue 21: ``build_scorers`` gives the in-corpus scorer the attacker's out-of-fold scores
    instead of scoring the corpus again, and each fold's fit scores the passages it was blind
    to (in the fit workers at scale): the same rows, ranks and documents as the fold models
    scoring the corpus here after the fit, bit for bit, under line-ups and without."""
    from neswap_core.models import fit_processes

    if workers:
        monkeypatch.setattr(fit_processes, "MIN_TEXTS", 0)  # the folds fit and score in workers
    _, (ct, cl, cd), changed = data
    for lineup in (4, None):
        model = CrossFittedAttacker(lineup=lineup).fit(ct, cl, cd)
        again = ReleaseScorer(model, ct, cl, cd, name=IN_CORPUS)
        kept = ReleaseScorer(model, ct, cl, cd, name=IN_CORPUS, pre_log_proba=model.oof_)
        assert np.array_equal(kept.log_proba_, again.log_proba_) and np.array_equal(kept.rank_, again.rank_)
        every = np.arange(len(again.documents_))
        assert np.array_equal(kept.doc_log_proba_rows(every), again.doc_log_proba_rows(every))
        a, b = kept.score(changed), again.score(changed)
        assert (a.chunk_top1, a.document_accuracy) == (b.chunk_top1, b.document_accuracy)


@pytest.mark.parametrize("lineup", [4, None])
def test_pre_release_scores_shared_with_a_worker_are_each_scorer_s_own(data, monkeypatch, lineup):
    """Issue 21: at 100,000 passages the corpus's scores under the attackers that read words
    are shared with a spawned worker (the rows of three line-ups in five; of blocks with one
    line-up), which gets only its line-ups' models. Every row, and the whole-document
    family's word counts, must be what each scorer computes alone in one process."""
    from neswap_core.measure import pre_release_scores as shared_scores
    from neswap_core.measure.lineups import take_rows
    from neswap_core.measure.panel_scorers import FamilyAttacker

    (rt, rl, rd), (ct, cl, cd), _ = data
    cl = [*cl[:-3], "co99", "co99", "co99"]  # a company no attacker knows: scored here, masked nowhere
    reading = text_attacker(rt, rl, lineup=lineup)
    panel = AttackerPanel(["char", "retrieval"], lineup=lineup).fit(rt, rl, rd)
    models = {READING: reading, "char": FamilyAttacker(panel.families_["char"], []),
              "retrieval": panel.families_["retrieval"]}  # fmt: skip
    monkeypatch.setattr(shared_scores, "SCORE_BLOCK", 16)  # several blocks: three in five go to the worker
    sent = []

    def spied(fn, *args, **kwargs):
        sent.append(fn.args[0])
        worker = real(fn, *args, **kwargs)
        sent.append(worker.started)
        return worker

    real = shared_scores.InBackground
    monkeypatch.setattr(shared_scores, "InBackground", spied)
    got = shared_scores.text_pre_scores(models, ct, cl, min_texts=0)
    assert sent[1] is True  # the worker ran
    alone = {READING: ReleaseScorer(reading, ct, cl, cd, name=READING), **family_scorers(panel, ct, cl, cd)}
    for name, scorer in alone.items():
        every = np.arange(len(ct))
        np.testing.assert_array_equal(take_rows(got[name]["log_proba"], every), scorer.log_proba_)
        share = sent[0][name]
        assert 0 < len(share[1]) < len(ct)  # the worker scored some rows, this process the others
        if lineup is not None and name != "retrieval":  # the worker's copy holds its line-ups only
            held = share[0].family if name == "char" else share[0]
            assert 0 < len(held.parts_) < len(scorer.attacker.parts_ if name == READING
                                              else scorer.attacker.family.parts_)  # fmt: skip
    np.testing.assert_array_equal(got["retrieval"]["counts"].toarray(), alone["retrieval"].counts_.toarray())
    alone_again = shared_scores.text_pre_scores(models, ct, cl)  # below the size: all here
    for name in alone:
        np.testing.assert_array_equal(take_rows(alone_again[name]["log_proba"], every),
                                      take_rows(got[name]["log_proba"], every))  # fmt: skip
