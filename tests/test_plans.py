"""Plans (SPEC §10): multi-round constraints, floors, one-vs-many, term statistics, changes."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from neswap_core.config import TERM_CATEGORY
from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.errors import ConfigError
from neswap_core.generate.plans import (
    OneVsMany,
    Plan,
    Redact,
    SwapRound,
    TermSwap,
    apply_plan,
    default_plan,
)
from neswap_core.generate.terms import tag_terms
from neswap_core.models.log_odds import DistinctiveTerms, fit_terms, log_odds_z


def make_chunk(cid: str, company: str, entities: list[tuple[str, str]], filler: str = "") -> Chunk:
    """A chunk whose text lists its entities; spans point at them."""
    text, spans = filler, []
    for category, value in entities:
        text += " and " if text else ""
        spans.append(EntitySpan(len(text), len(text) + len(value), "X", category, value))
        text += value
    return Chunk(cid, cid.split("#")[0], int(cid.split("#")[1]), text + ".", company, tuple(spans))


def context(chunks, labels, x=None, rho=(0.9, 0.9)):
    x = np.ones((len(chunks), 2)) / np.sqrt(2) if x is None else x
    return SimpleNamespace(chunks=list(chunks), labels=np.asarray(labels), embeddings=np.asarray(x),
                           mixture=SimpleNamespace(concentrations_=np.asarray(rho)))  # fmt: skip


def grid_corpus(n_companies: int = 4, per_company: int = 10):
    """Every chunk has a distinct Organization, Location and Date; two clusters."""
    chunks, labels = [], []
    for c in range(n_companies):
        for k in range(per_company):
            cid = f"d{c}#{k:04d}"
            chunks.append(make_chunk(cid, f"C{c}", [("Organization", f"Org{c}x{k}"),
                                                    ("Location", f"Loc{c}x{k}"),
                                                    ("Date", f"Day{c}x{k}")]))  # fmt: skip
            labels.append(k % 2)
    return chunks, labels


def test_rounds_swap_each_chunk_once_per_round_never_repeat_a_pair_and_reach_coverage():
    chunks, labels = grid_corpus()
    ctx = context(chunks, labels)
    plan = Plan((SwapRound(("Organization", "Location"), rounds=12, budget=6, coverage=0.95),))
    result = apply_plan(ctx, plan, np.random.default_rng(0))
    by_round = Counter()
    for change in result.changes:
        for cid in change.chunk_ids:
            by_round[(change.round, cid)] += 1
    assert max(by_round.values()) == 1  # a chunk is swapped at most once per round
    pairs = [frozenset(c.chunk_ids) for c in result.changes]
    assert len(pairs) == len(set(pairs))  # no pair twice across rounds
    assert len({c.round for c in result.changes}) >= 2
    assert result.stages[-1].coverage >= 0.95  # the target is reached over several rounds
    changed = {cid for c in result.changes for cid in c.chunk_ids}
    assert len(changed) / len(chunks) == pytest.approx(result.stages[-1].coverage)
    position = {c.chunk_id: i for i, c in enumerate(chunks)}
    for change in result.changes:  # constraints 1 and 2 hold for every pair of every round
        a, b = (position[cid] for cid in change.chunk_ids)
        assert chunks[a].protected != chunks[b].protected and labels[a] == labels[b]
    assert [s.round for s in result.stages] == list(range(1, len(result.stages) + 1))


def test_rounds_use_the_current_text_and_every_exchange_moves_strings():
    chunks, labels = grid_corpus(3, 6)
    ctx = context(chunks, labels)
    result = apply_plan(ctx, Plan((SwapRound(("Organization",), rounds=3),)), np.random.default_rng(1))
    final = {c.chunk_id: c for c in result.chunks}
    for change in result.changes:
        assert change.kind == "swap" and change.before and change.after
    # Every organisation string still exists exactly once in the corpus (a permutation).
    before = sorted(v for c in chunks for v in c.values("Organization"))
    after = sorted(v for c in final.values() for v in c.values("Organization"))
    assert before == after
    for c in final.values():
        assert all(c.text[s.start : s.end] == s.text for s in c.entities)


def test_similarity_and_concentration_floors_are_respected():
    chunks, labels = grid_corpus()
    rng = np.random.default_rng(3)
    x = rng.normal(size=(len(chunks), 8))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ctx = context(chunks, labels, x, rho=(0.9, 0.2))
    step = SwapRound(("Organization",), rounds=4, similarity_floor=0.2, concentration_floor=0.5)
    result = apply_plan(ctx, Plan((step,)), np.random.default_rng(0))
    assert result.changes
    position = {c.chunk_id: i for i, c in enumerate(chunks)}
    for change in result.changes:
        a, b = (position[cid] for cid in change.chunk_ids)
        assert x[a] @ x[b] >= 0.2
        assert labels[a] == 0  # cluster 1 has ρ = 0.2 < 0.5: it gives no pair


def test_one_vs_many_moves_every_leftover_entity():
    a = make_chunk("a#0000", "A", [("Organization", "Alpha"), ("Organization", "Beta"),
                                   ("Organization", "Gamma"), ("Location", "Paris"),
                                   ("Date", "May")])  # fmt: skip
    b = make_chunk("b#0000", "B", [("Organization", "Delta"), ("Location", "Rome"), ("Date", "June")])
    others = [make_chunk(f"o{k}#0000", f"O{k}", [("Organization", f"Other{k}")]) for k in range(3)]
    chunks = [a, b, *others]
    ctx = context(chunks, [0] * len(chunks))
    plan = Plan((SwapRound(("Organization", "Location"), require="all"), OneVsMany()))
    result = apply_plan(ctx, plan, np.random.default_rng(0))
    kinds = Counter(c.kind for c in result.changes)
    assert kinds == {"swap": 1, "one-vs-many": 2}
    final_a = result.chunks[0]
    assert not {"Alpha", "Beta", "Gamma"} & set(final_a.values("Organization"))
    assert "Paris" not in final_a.text
    moved_to = {c.partner_chunk_id for c in result.changes if c.kind == "one-vs-many"}
    assert len(moved_to) == 2 and "b#0000" not in moved_to  # two further partners


def test_rejected_change_is_never_released_and_keys_depend_on_content_only():
    chunks, labels = grid_corpus(2, 4)
    ctx = context(chunks, labels)
    plan = Plan((SwapRound(("Organization",), rounds=1),))
    first = apply_plan(ctx, plan, np.random.default_rng(5))
    target = first.changes[0]
    again = apply_plan(ctx, plan, np.random.default_rng(5), rejected=frozenset({target.key}))
    assert target.key not in {c.key for c in again.changes}
    released = {c.chunk_id: c for c in again.chunks}
    assert target.after not in released[target.chunk_id].text
    # Same content, another step number: the same key.
    from dataclasses import replace

    assert replace(target, step=7, round=3).key == target.key
    assert replace(target, after=target.after + "x").key != target.key


def test_plan_round_trips_through_dict_and_json_and_bad_steps_are_clear():
    plan = default_plan(["Organization", "Product"], rounds=3, terms=True, redaction=0.08)
    data = json.loads(json.dumps(plan.to_dict()))
    assert Plan.from_dict(data) == plan
    assert [s["kind"] for s in data["steps"]] == ["term", "swap", "one-vs-many", "redact"]
    assert "distinctive terms" in plan.describe() and "8 % of words masked" in plan.describe()
    with pytest.raises(ConfigError, match="Unknown plan step"):
        Plan.from_dict({"steps": [{"kind": "shuffle"}]})
    with pytest.raises(ConfigError, match="coverage"):
        SwapRound(coverage=1.5)
    with pytest.raises(ConfigError, match="TermSwap"):
        Plan((SwapRound(("Organization", TERM_CATEGORY)),))
    with pytest.raises(ConfigError, match="level"):
        Redact(level=2)


# --- distinctive terms -----------------------------------------------------------------------------
def test_log_odds_z_matches_the_formula_for_two_classes():
    counts = np.array([[10.0, 0.0, 90.0], [0.0, 10.0, 90.0]])
    z = log_odds_z(counts, prior_strength=10.0)
    a = 10.0 * counts.sum(axis=0) / counts.sum()
    n = counts.sum(axis=1)
    y0, y1 = counts[0], counts[1]
    delta = np.log((y0 + a) / (n[0] + 10 - y0 - a)) - np.log((y1 + a) / (n[1] + 10 - y1 - a))
    assert np.allclose(z[0], delta / np.sqrt(1 / (y0 + a) + 1 / (y1 + a)))
    assert z[0, 0] > 2 and z[1, 1] > 2 and abs(z[0, 2]) < 1e-9  # shared word: z = 0 by symmetry


def test_a_word_only_one_company_uses_gets_a_high_z_score():
    texts, labels = [], []
    for k in range(12):
        texts += [f"our broadband subscribers grew in the quarter {k}", f"revenue in the quarter rose {k}"]
        labels += ["A", "A"]
        texts += [f"advertising revenue in the quarter rose {k}", f"cloud revenue in the quarter {k}"]
        labels += ["B", "B"]
    model = DistinctiveTerms(min_z=2.0, min_count=3).fit(texts, labels)
    assert model.z_score("A", "broadband") > 2.0
    assert model.z_score("A", "quarter") < 1.0
    assert "broadband" in model.terms_["A"] and "broadband" not in model.terms_["B"]
    assert "quarter" not in model.terms_["A"]


def test_terms_are_tagged_outside_entities_and_swapped_between_companies():
    chunks, labels = [], []
    for k in range(8):
        a = make_chunk(f"a#{k:04d}", "A", [("Organization", f"Acme{k}")],
                       filler="Broadband subscribers rose")  # fmt: skip
        b = make_chunk(f"b#{k:04d}", "B", [("Organization", f"Bolt{k}")],
                       filler="Advertising impressions rose")  # fmt: skip
        chunks += [a, b]
        labels += [0, 0]
    model = fit_terms(chunks, min_z=1.0, min_count=2)
    assert "broadband" in model.terms_["A"]
    tagged = tag_terms(chunks, model.terms_)
    spans = [s for s in tagged[0].entities if s.category == TERM_CATEGORY]
    assert spans and all(tagged[0].text[s.start : s.end] == s.text for s in spans)
    assert not any(s.text.startswith("Acme") for s in spans)
    ctx = context(chunks, labels)
    plan = Plan((TermSwap(min_z=1.0), SwapRound((TERM_CATEGORY,), rounds=2)))
    result = apply_plan(ctx, plan, np.random.default_rng(0))
    assert result.changes and all(c.kind == "term" for c in result.changes)
    moved_into_a = [c for c in result.chunks if c.protected == "A" and "Advertising" in c.text]
    assert moved_into_a  # company B's vocabulary now reads in company A's chunks


def test_later_rounds_never_hand_a_company_its_own_distinctive_term_back():
    chunks, labels = [], []
    for k in range(6):
        for company, words in (("A", "Broadband subscribers"), ("B", "Advertising impressions"),
                               ("C", "Cloud workloads"), ("D", "Retail stores")):  # fmt: skip
            chunks.append(make_chunk(f"{company.lower()}#{k:04d}", company,
                                     [("Organization", f"{company}org{k}")], filler=f"{words} rose"))  # fmt: skip
            labels.append(0)
    ctx = context(chunks, labels)
    plan = Plan((TermSwap(min_z=1.0), SwapRound((TERM_CATEGORY,), rounds=4)))
    result = apply_plan(ctx, plan, np.random.default_rng(0))
    assert len({c.round for c in result.changes}) >= 2
    own = {"A": ("broadband", "subscribers"), "B": ("advertising", "impressions"),
           "C": ("cloud", "workloads"), "D": ("retail", "stores")}  # fmt: skip
    for before, after in zip(chunks, result.chunks, strict=True):
        if after.text != before.text:
            assert not any(w in after.text.lower() for w in own[after.protected])
