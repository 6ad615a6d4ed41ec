"""Candidates of a plan grid (SPEC §10): DR of one round = the paper's, measures, the goal."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from neswap_core.choose.candidates import (
    build_candidates,
    candidate_table,
    describe_candidate,
    plan_sources,
)
from neswap_core.choose.goals import Constraint, Goal, choose_goal
from neswap_core.choose.plan_grid import PlanGrid, plan_candidates, plan_risk, total_words
from neswap_core.config import MASK_PLACEHOLDER, RunConfig
from neswap_core.corpus import Chunk
from neswap_core.errors import ConfigError
from neswap_core.generate.plans import Plan, Redact, SwapRound, apply_plan
from neswap_core.generate.redaction import masked_count
from neswap_core.generate.releases import ReleaseContext, sweep_releases
from neswap_core.measure import risk as risk_mod
from neswap_core.measure.release_measures import word_counts
from neswap_core.models.mixture import SphericalMixture
from tests.test_plans import make_chunk

WORDS = {"C0": "broadband fiber", "C1": "cloud software", "C2": "retail stores", "C3": "games studio"}


def embed(texts):
    """Deterministic unit vectors from the text's hash (a stand-in for MiniLM)."""
    out = []
    for text in texts:
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        v = np.random.default_rng(seed).normal(size=8) + np.array([3.0, 0, 0, 0, 0, 0, 0, 0])
        out.append(v / np.linalg.norm(v))
    return np.array(out, dtype=np.float32)


@pytest.fixture(scope="module")
def ctx():
    chunks = []
    for c in range(4):
        for k in range(8):
            ents = [("Organization", f"Org{c}x{k % 3}"), ("Location", f"Loc{c}x{k}"),
                    ("Date", f"Day{k}")]  # fmt: skip
            chunks.append(make_chunk(f"d{c}#{k:04d}", f"C{c}", ents,
                                     filler=f"Our {WORDS[f'C{c}']} grew"))  # fmt: skip
    x = embed([c.text for c in chunks])
    mix = SphericalMixture(n_components=2, n_init=1, random_state=0).fit(x)
    return ReleaseContext(chunks, x, mix, embed)


def test_one_round_plan_gives_the_papers_dr(ctx):
    plan = Plan((SwapRound(("Organization", "Location"), rounds=1, require="all"),))
    result = apply_plan(ctx, plan, np.random.default_rng(0))
    stage = result.stages[0]
    profile = risk_mod.fit_risk(ctx.z, ["Organization", "Location"], 1e20)
    swapped = {cid for c in result.changes for cid in c.chunk_ids}
    hits = len(swapped & profile.sample_unique_ids)
    expected = 1 - hits / profile.s1 * min(profile.p_hat, 1.0) if hits else 1.0
    assert plan_risk(ctx, plan, result.changes[: stage.n_changes], 1e20, {}) == pytest.approx(
        expected, abs=1e-15
    )
    assert hits > 0 and expected < 1


def test_plan_rows_carry_exact_measures(ctx):
    grid = PlanGrid(categories=(("Organization", "Location"),), rounds=2, terms=(False,),
                    similarity_floor=-1.0, one_vs_many=False)  # fmt: skip
    cands = plan_candidates(ctx, grid, 1e20)
    table = cands.table
    assert list(table["rounds"]) == list(range(1, len(table) + 1))
    last = table.iloc[-1]
    result, stage = cands.stage(last["release_id"])
    changed = {p: c for p, c in stage.changed.items() if c.text != ctx.chunks[p].text}
    assert last["chunks_changed"] == pytest.approx(len(changed) / len(ctx.chunks))
    new_x = embed([c.text for c in changed.values()])
    cos = (ctx.embeddings[list(changed)] * new_x).sum(axis=1)
    expected = (len(ctx.chunks) - len(changed) + cos.sum()) / len(ctx.chunks)
    assert last["mean_cosine"] == pytest.approx(expected, rel=1e-6)
    kept = sum(word_counts(ctx.chunks[p].text, c.text)[0] for p, c in changed.items())
    total = sum(word_counts(c.text, c.text)[1] for c in ctx.chunks)
    lost = sum(word_counts(ctx.chunks[p].text, c.text)[1] for p, c in changed.items()) - kept
    assert last["words_unchanged"] == pytest.approx(1 - lost / total)
    assert table["dr"].is_monotonic_decreasing  # later rounds only swap more uniques


def test_word_counts_count_a_swapped_name_and_a_mask():
    assert word_counts("Acme Corp sold widgets", "Globex sold widgets") == (2, 4)
    assert word_counts("we sold widgets", f"we sold {MASK_PLACEHOLDER}") == (2, 3)


def test_word_counts_diff_each_pair_once_and_tell_pairs_apart(monkeypatch):
    """The candidates share changed passages, so a pair is diffed once per process; the memo
    is keyed by both texts, so pairs that concatenate alike are still told apart."""
    from neswap_core.measure import release_measures

    pairs = [("Acme Corp sold widgets", "Globex sold widgets"), ("we sold", "widgets now"),
             ("we sold widgets", "now"), ("we sold\0widgets", "now"), ("we sold", "\0widgets now")]
    expected = [word_counts(a, b) for a, b in pairs]
    release_measures._WORD_COUNTS.clear()
    diffs: list[int] = []
    real = release_measures.matching_blocks
    monkeypatch.setattr(release_measures, "matching_blocks", lambda a, b: diffs.append(1) or real(a, b))
    assert [word_counts(a, b) for a, b in pairs * 2] == expected * 2
    assert len(diffs) == len(pairs)  # the second pass diffed nothing
    monkeypatch.setattr(release_measures, "WORD_COUNT_MEMO", 2)
    release_measures._WORD_COUNTS.clear()
    assert [word_counts(a, b) for a, b in pairs] == expected  # a full memo starts over
    assert len(release_measures._WORD_COUNTS) <= 2


def test_paper_rows_keep_the_sweeps_du_and_dr(ctx):
    """One table, one meaning per column: du/dr are the written draw's, du_mean/dr_mean the
    means over the draws (the paper's reported figures, the line's axes)."""
    sweep = sweep_releases(ctx, ["Organization", "Location"], combination_size=2, max_swaps=5,
                           draws=3)
    table = sweep.table(1e20)
    config = RunConfig.of(roles={"Organization": "S", "Location": "S", "Person": "F",
                              "Product": "F", "Event": "F", "Date": "F"}, draws=3,
                          document_levels=[])  # fmt: skip
    rows = build_candidates(sweep, config).table
    assert list(rows.index) == list(table.index) and set(rows["sampler"]) == {"paper"}
    assert (rows["du_mean"].to_numpy() == table["du"].to_numpy()).all()
    assert (rows["dr_mean"].to_numpy() == table["dr"].to_numpy()).all()
    assert (rows["du"].to_numpy() == table["du_released"].to_numpy()).all()
    assert (rows["dr"].to_numpy() == table["dr_released"].to_numpy()).all()
    assert (rows["chunks_changed"] <= 2 * rows["swaps"] / len(ctx.chunks) + 1e-12).all()


def test_redaction_step_masks_the_stated_share_and_a_rejected_word_stays(ctx):
    plan = Plan((Redact(0.25),))
    result = apply_plan(ctx, plan, np.random.default_rng(0))
    from neswap_core.generate.redaction import word_spans

    for before, after in zip(ctx.chunks, result.chunks, strict=True):
        assert after.text.count(MASK_PLACEHOLDER) == masked_count(len(word_spans(before.text)), 0.25)
    first = result.changes[0]
    again = apply_plan(ctx, plan, np.random.default_rng(0), rejected=frozenset({first.key}))
    chunk = next(c for c in again.chunks if c.chunk_id == first.chunk_id)
    assert first.before in chunk.text and first.key not in {c.key for c in again.changes}


def test_goal_picks_the_most_useful_release_under_the_accuracy_bound():
    table = pd.DataFrame({"chunk_accuracy": [0.7, 0.35, 0.25, 0.1], "words_unchanged": [0.99, 0.95, 0.9, 0.5],
                          "swaps": [1, 2, 3, 4]}, index=list("abcd"))  # fmt: skip
    def goal(maximum):
        return Goal((Constraint("chunk_accuracy", maximum, "passages named"),))

    met = choose_goal(table, goal(0.30))
    assert met.release_id == "c" and met.met and met.sentence == ""
    none = choose_goal(table, goal(0.05))
    assert none.release_id == "d" and not none.met and none.figures == {"chunk_accuracy": 0.1}
    assert none.sentence.startswith("No candidate meets the goal (passages named at most 0.05): "
                                    "the closest, d, has passages named 0.1.")
    assert "max_chunk_accuracy to 0.1" in none.sentence
    with pytest.raises(ConfigError, match="attacker"):
        choose_goal(table.drop(columns="chunk_accuracy"), goal(0.3))
    row = pd.Series({"description": "2 rounds", "chunks_changed": 0.71, "words_unchanged": 0.894,
                     "chunk_accuracy": 0.28, "document_accuracy": 0.4, "dr": 0.9, "du": 1.0})
    assert describe_candidate(row).startswith("2 rounds: 71 % of chunks changed, 89 % of words "
                                              "unchanged, DR 0.900, DU 1.0000")


def test_a_goal_is_a_list_of_constraints():
    """Two bounds (issue 22 adds max_document_accuracy): both must hold; when none meets both,
    the closest is the one whose worst excess is smallest."""
    table = pd.DataFrame({"chunk_accuracy": [0.2, 0.3, 0.25], "document_accuracy": [0.9, 0.4, 0.6],
                          "words_unchanged": [0.95, 0.9, 0.8], "swaps": [1, 2, 3]},
                         index=list("abc"))  # fmt: skip
    both = Goal((Constraint("chunk_accuracy", 0.3), Constraint("document_accuracy", 0.5)))
    assert choose_goal(table, both).release_id == "b"
    strict = Goal((Constraint("chunk_accuracy", 0.2), Constraint("document_accuracy", 0.5)))
    missed = choose_goal(table, strict)
    assert not missed.met and missed.release_id == "b"  # excesses: a 0.4, b 0.1, c 0.1 -> utility
    assert missed.figures == {"chunk_accuracy": 0.3, "document_accuracy": 0.4}


def test_grid_from_config_lists_every_combination():
    config = RunConfig.of(plan_rounds=3, plan_terms=[False, True], plan_redaction_levels=[0.0, 0.1])
    plans = PlanGrid.from_config(config).plans()
    assert len(plans) == 5  # 2 term settings × 2 levels, and 10 % redaction alone
    assert len(PlanGrid.from_config(config.replace(plan_redaction_alone=False)).plans()) == 4
    assert {p.describe() for p in plans} >= {
        "up to 3 rounds of swapping Organization + Person + Product + Location, leftovers moved one-vs-many"
    }


def test_scorer_accuracies_enter_the_rows(ctx):
    calls = []

    class Scorer:
        def score(self, changed):
            calls.append(dict(changed))
            return SimpleNamespace(chunk_top1=1 - len(changed) / 32, document_accuracy=0.5,
                                   chunk_top5=1.0, changed_pre_top1=1.0, changed_post_top1=0.0,
                                   mcnemar_p=0.5, chance=0.25)

    grid = PlanGrid(categories=(("Organization",),), rounds=1, terms=(False,), one_vs_many=False,
                    similarity_floor=-1.0)  # fmt: skip
    plans = plan_candidates(ctx, grid, 1e20)
    table = candidate_table(plan_sources(plans), ctx, {"words": Scorer(), "other": Scorer()})
    assert table["chunk_accuracy"].iloc[0] == pytest.approx(1 - table["chunks_changed"].iloc[0])
    assert (table["chunk_accuracy.other"] == table["chunk_accuracy"]).all()
    assert table["attacker"].iloc[0] == "words"  # the first attacker is the primary one
    assert (table["chunk_accuracy_mean.words"] == table["chunk_accuracy.words"]).all()
    assert (table["chunk_accuracy_sd.words"] == 0).all()  # a plan is one text: one draw
    assert all(isinstance(t, str) for call in calls for t in call.values())


def test_review_replays_without_rejected_changes_and_updates_the_measures(ctx):
    grid = PlanGrid(categories=(("Organization", "Location"),), rounds=2, terms=(False,),
                    similarity_floor=-1.0)  # fmt: skip
    cands = plan_candidates(ctx, grid, 1e20)
    release_id = cands.table.index[-1]
    result, stage = cands.stage(release_id)
    assert cands.replay(release_id, frozenset()) == (result, stage)  # nothing rejected: same
    target = result.changes[0]
    again, again_stage = cands.replay(release_id, frozenset({target.key}))
    assert target.key not in {c.key for c in again.changes[: again_stage.n_changes]}
    after = cands.measures(again, again_stage)
    before = cands.measures(result, stage)
    assert before["dr"] == pytest.approx(cands.table.loc[release_id, "dr"])
    assert before["words_unchanged"] == pytest.approx(cands.table.loc[release_id, "words_unchanged"])
    assert after != before


def test_the_grid_adds_redaction_alone_at_each_level_after_the_swap_plans(ctx):
    """Redaction without swapping is a candidate (it was missing: every grid plan swapped first)."""
    grid = PlanGrid(categories=(("Organization", "Location"),), rounds=1, terms=(False,),
                    redaction_levels=(0.0, 0.25, 0.25), redaction_method="smarter",
                    similarity_floor=-1.0)  # fmt: skip
    plans = grid.plans()
    swap_first = PlanGrid(**{**grid.__dict__, "redaction_alone": False}).plans()
    n = len(swap_first)
    assert plans[:n] == swap_first  # the swap plans keep their numbers
    assert plans[n:] == [Plan((Redact(0.25, "smarter"),))]  # one per distinct level > 0
    table = plan_candidates(ctx, grid, 1e20).table
    alone = table[table["plan_index"] == n]
    assert len(alone) == 1
    row = alone.iloc[0]
    assert row["swaps"] == 0 and row["dr"] == 1.0 and row["combination"] == ""
    words = [len(c.text.split()) for c in ctx.chunks]  # fillers and entity values: plain words
    kept = 1 - sum(masked_count(n, 0.25) for n in words) / sum(words)
    assert row["words_unchanged"] == pytest.approx(kept)
    assert row["description"] == "25 % of words masked (smarter)"


def test_plan_grid_from_config_takes_every_plan_setting_and_the_sweep_seed():
    config = RunConfig.of(plan_rounds=2, plan_categories=["Organization"], plan_terms=[True],
                          plan_redaction_levels=[0, 0.25], plan_redaction_method="targeted",
                          plan_redaction_fill="decoy", plan_redaction_alone=False,
                          plan_require="all", plan_coverage=0.5, plan_similarity_floor=0.1,
                          plan_concentration_floor=0.2, plan_one_vs_many=False, seed=9)
    assert PlanGrid.from_config(config) == PlanGrid(
        categories=(("Organization",),), rounds=2, terms=(True,), redaction_levels=(0.0, 0.25),
        redaction_method="targeted", redaction_fill="decoy", redaction_alone=False, require="all",
        coverage=0.5, similarity_floor=0.1, concentration_floor=0.2, one_vs_many=False, seed=9)
    roles = {"Organization": "U", "Person": "S", "Product": "U", "Location": "F"}
    no_categories = RunConfig.of(plan_categories=[], roles=roles)  # [] = the S categories
    assert PlanGrid.from_config(no_categories).categories == (("Person",),)


def test_another_population_moves_only_the_risk_columns_and_measures_nothing_again(monkeypatch):
    """N enters only p̂ (SPEC §5). A change of N on the Frontier page built and measured every
    candidate again (22 s on the dev corpus, issue 21): the candidates at another N are now the
    kept ones with their DR re-read (``Candidates.at_population``; ``with_risk_columns`` for a
    table kept on disk, whose key leaves N out), and equal the candidates built at that N."""
    from neswap_core.choose import candidates as cm
    from neswap_core.choose import plan_grid as pg
    from neswap_core.choose.candidates import RISK_COLUMNS, with_risk_columns
    from neswap_core.choose.memo_keys import candidate_settings

    chunks = []  # locations repeated in part: a Pitman fit whose p̂ < 1 moves with N
    for c in range(4):
        for k in range(8):
            ents = [("Organization", f"Org{c}"), ("Location", f"Loc{c}x{k if k < 5 else 'r'}"),
                    ("Date", f"Day{k}")]  # fmt: skip
            chunks.append(make_chunk(f"d{c}#{k:04d}", f"C{c}", ents, filler=f"Our {WORDS[f'C{c}']} grew"))
    x = embed([c.text for c in chunks])
    ctx = ReleaseContext(chunks, x, SphericalMixture(n_components=2, n_init=1, random_state=0).fit(x), embed)
    sweep = sweep_releases(ctx, ["Organization", "Location"], combination_size=2, max_swaps=5,
                           draws=3)
    config = RunConfig.of(roles={"Organization": "S", "Location": "S", "Person": "F",
                                 "Product": "F", "Event": "F", "Date": "F"}, draws=3,
                          document_levels=[], plan_rounds=2, plan_terms=[False],
                          plan_redaction_levels=[0.0])  # fmt: skip
    low = config.replace(population=40.0)
    assert candidate_settings(config) == candidate_settings(low)  # one kept table for every N
    high_n = build_candidates(sweep, config)
    direct = build_candidates(sweep, low)
    assert set(high_n.table["sampler"]) == {"paper", "plan"}
    assert not high_n.table["dr"].equals(direct.table["dr"])  # N really moves DR here

    def never(*args, **kwargs):
        raise AssertionError("a change of N made or measured a candidate again")

    monkeypatch.setattr(cm, "candidate_table", never)
    monkeypatch.setattr(pg, "apply_plan", never)
    monkeypatch.setattr(pg, "measure_row", never)
    moved = high_n.at_population(40.0)
    pd.testing.assert_frame_equal(moved.table, direct.table)
    assert moved.plans is not None and moved.plans.population == 40.0
    assert all(getattr(s, "population", 40.0) == 40.0 for s in moved.sources.values())
    assert moved.at_population(40.0) is moved
    # a table read back from disk, measured at another N: only its risk columns are replaced
    kept = with_risk_columns(high_n.table, direct.sources)
    pd.testing.assert_frame_equal(kept, direct.table)
    others = [c for c in direct.table.columns if c not in RISK_COLUMNS]
    pd.testing.assert_frame_equal(high_n.table[others], direct.table[others])


def test_total_words_are_counted_once_per_context():
    """The denominator of words_unchanged: every \\w+ run of the pre-swap text, counted by hand,
    and read again from the context (the plan grid, the document levels and the table ask)."""
    class Counted(list):
        reads = 0

        def __iter__(self):
            Counted.reads += 1
            return super().__iter__()

    chunks = Counted([Chunk("D0#0000", "D0", 0, "Acme grew 4.2% in Q3.", "C0"),
                      Chunk("D1#0000", "D1", 0, "Beta's CEO — Jo Ng — spoke.", "C1")])
    ctx = SimpleNamespace(chunks=chunks)
    # Acme grew 4 2 in Q3 | Beta s CEO Jo Ng spoke
    assert total_words(ctx) == 6 + 6
    assert total_words(ctx) == 12 and Counted.reads == 1
    assert total_words(SimpleNamespace(chunks=[])) == 0
