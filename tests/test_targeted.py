"""Budgeted, targeted redaction (generate/targeted.py): exact budget, cheapest flips first."""

from __future__ import annotations

import math

import numpy as np
import pytest

from neswap_core.config import MASK_PLACEHOLDER
from neswap_core.corpus import Chunk
from neswap_core.errors import ConfigError
from neswap_core.generate.plans import Plan, Redact
from neswap_core.generate.redaction import (
    SmarterRedactor,
    WordScore,
    apply_redactions,
    masked_count,
    redact_chunks,
    word_spans,
)
from neswap_core.generate.targeted import (
    TargetedRedactor,
    allocate,
    flip_cost,
    targeted_records,
)


def _chunk(text: str, label: str, cid: str) -> Chunk:
    return Chunk(chunk_id=cid, doc_id=cid.split("#")[0], index=0, text=text, protected=label)


def _redacted(chunks: list[Chunk], records) -> list[Chunk]:
    return [apply_redactions(c, [r for r in records if r.chunk_id == c.chunk_id]) for c in chunks]


class CountDefender:
    """A defender we can follow by hand: each "a" is one unit of own-class evidence and the margin
    is (own words left) − 1.5, so a chunk is flipped (margin 0) once at most one "a" is left.
    Words are masked "a" first (score 1), then the rest in text order."""

    def prefix_margins(self, text, label, position):
        scores = [WordScore(s, e, w, 1.0 if w == "a" else 0.0) for s, e, w in word_spans(text)]
        order = sorted(scores, key=lambda s: (-s.score, s.start))
        own = np.array([s.word == "a" for s in order], dtype=float)
        left = own.sum() - np.concatenate([[0.0], np.cumsum(own)])
        return order, left - 1.5


HAND = ["a a a x x", "a x x x x", "a a a a a a x", "a a x"]  # costs 2, 0, 5, 1; 20 words


@pytest.mark.parametrize(
    ("level", "masks", "flipped"),
    [
        (0.0, [0, 0, 0, 0], [False, True, False, False]),
        # budget 2: chunk 1 costs 0, chunk 3 costs 1; chunk 0 (2) does not fit: it gets the last 1
        (0.1, [1, 0, 0, 1], [False, True, False, True]),
        # budget 5: 0 + 1 + 2 flip three chunks; the last 2 go to chunk 2 (cost 5)
        (0.25, [2, 0, 2, 1], [True, True, False, True]),
        # budget 10: every chunk flipped for 0 + 1 + 2 + 5 = 8 masks (fewer than the budget)
        (0.5, [2, 0, 5, 1], [True, True, True, True]),
    ],
)
def test_hand_computed_budget_flips_cheapest_chunks_first(level, masks, flipped) -> None:
    chunks = [_chunk(t, "A", f"d{i}#0000") for i, t in enumerate(HAND)]
    records = targeted_records(chunks, CountDefender(), level, margin=0.0)
    assert [sum(r.chunk_id == c.chunk_id for r in records) for c in chunks] == masks
    after = _redacted(chunks, records)
    margins = [CountDefender().prefix_margins(c.text, "A", None)[1][0] for c in after]
    assert [m < 0 for m in margins] == flipped
    assert all(MASK_PLACEHOLDER in a.text for a, m in zip(after, masks, strict=True) if m)


def test_a_targeted_mask_takes_the_legal_suffix_that_follows_it() -> None:
    """"a Group" masked as "[…] Group" would tell what kind of firm it was (and block the
    release's leak scan as residue): the mask takes the suffix, and only once."""
    from neswap_core.publish.leak_context import shape_hits

    chunks = [_chunk("a Group Holdings x a, Inc x a", "A", "d0#0000")]  # flipped by two masks
    records = targeted_records(chunks, CountDefender(), 0.5, margin=0.0)
    assert [r.word for r in records] == ["a Group Holdings", "a, Inc"]
    after = _redacted(chunks, records)
    assert after[0].text == "[…] x […] x a" and not shape_hits(after[0].text)


def test_allocate_spends_exactly_the_budget_unless_everything_is_flipped() -> None:
    costs, sizes = [0, 3, 1, 5, math.inf], [10, 10, 10, 10, 10]
    assert allocate(costs, sizes, 5).tolist() == [0, 3, 1, 1, 0]  # 0, 1, 3 fit; 1 left for cost 5
    assert allocate(costs, sizes, 9).tolist() == [0, 3, 1, 5, 0]
    assert allocate(costs, sizes, 12).tolist() == [0, 3, 1, 5, 3]  # rest to the unflippable chunk
    assert allocate(costs, sizes, 100).tolist() == [0, 3, 1, 5, 10]  # every word of it: 19 < 100
    assert allocate([0, 3, 1], [10, 10, 10], 100).sum() == 4  # every chunk flipped: 4 < 100
    assert allocate([2, 2], [5, 5], 3).tolist() == [2, 1]  # ties: earlier position first
    with pytest.raises(ConfigError, match="costs"):
        allocate([1, 2], [3], 1)


def test_flip_cost_is_the_first_prefix_below_minus_margin() -> None:
    margins = np.array([3.0, 1.0, -0.5, -2.0, -1.0])
    assert flip_cost(margins, 0.0) == 2
    assert flip_cost(margins, 1.0) == 3
    assert flip_cost(margins, 5.0) == math.inf
    assert flip_cost(np.array([-1.0, 2.0]), 0.0) == 0


def _corpus(n_per: int = 6, seed: int = 0) -> list[Chunk]:
    """Three companies; each chunk mixes shared words with a varying number of its company's
    words, so some chunks are cheap to flip and others dear."""
    rng = np.random.default_rng(seed)
    shared = [f"shared{chr(97 + i)}" for i in range(25)]
    own = {c: [f"{c.lower()}own{chr(97 + i)}" for i in range(6)] for c in "ABC"}
    chunks = []
    for c in "ABC":
        for k in range(n_per):
            words = list(rng.choice(shared, 20)) + list(rng.choice(own[c], 1 + k))
            rng.shuffle(words)
            chunks.append(_chunk(" ".join(words) + ".", c, f"{c}{k // 3}#{k:04d}"))
    return chunks


def _defender_flips(defender: TargetedRedactor, chunks: list[Chunk], margin: float = 0.0) -> int:
    return sum(defender.prefix_margins(c.text, c.protected, p)[1][0] < -margin
               for p, c in enumerate(chunks))  # fmt: skip


def test_prefix_margins_match_the_fitted_model_on_the_masked_text() -> None:
    chunks = _corpus()
    defender = TargetedRedactor(n_folds=1).fit([c.text for c in chunks], [c.protected for c in chunks])
    chunk = chunks[4]
    order, margins = defender.prefix_margins(chunk.text, chunk.protected, 4)
    assert len(margins) == len(word_spans(chunk.text)) + 1
    scores = [s.score for s in order]
    assert scores == sorted(scores, reverse=True)
    for m in (0, 3, 10, len(order)):  # second method: vectorise the masked text, log-softmax
        masked = _redacted([chunk], [_record(chunk, s) for s in order[:m]])[0].text
        x = defender.vectorizer_.transform([masked]).toarray()[0]
        s = defender.coef_[0] @ x + defender.intercept_[0]
        log_p = s - np.log(np.exp(s - s.max()).sum()) - s.max()
        own = list(defender.classes_).index(chunk.protected)
        assert margins[m] == pytest.approx(log_p[own] - np.delete(log_p, own).max(), abs=1e-9)


def _record(chunk, s):
    from neswap_core.generate.redaction import RedactionRecord

    return RedactionRecord(chunk.chunk_id, s.start, s.end, s.word, s.score)


def test_more_budget_flips_more_and_beats_per_chunk_redaction_for_the_defender() -> None:
    chunks = _corpus()
    texts, labels = [c.text for c in chunks], [c.protected for c in chunks]
    defender = TargetedRedactor(n_folds=1, margin=0.0).fit(texts, labels)
    smarter = SmarterRedactor().fit(texts, labels)
    n_words = sum(len(word_spans(t)) for t in texts)
    flips = []
    for level in (0.0, 0.05, 0.1, 0.2, 0.3, 0.5):
        records = defender.select(chunks, level)
        assert len(records) == masked_count(n_words, level) or _defender_flips(
            defender, _redacted(chunks, records)) == len(chunks)  # fmt: skip
        flips.append(_defender_flips(defender, _redacted(chunks, records)))
        if 0 < level <= 0.3:
            per_chunk, _ = redact_chunks(chunks, smarter, level)
            assert flips[-1] >= _defender_flips(defender, per_chunk)
    assert flips == sorted(flips) and flips[-1] > flips[0]


def test_cross_fitted_defender_scores_a_chunk_with_the_fold_that_did_not_read_it() -> None:
    chunks = _corpus()
    texts, labels = [c.text for c in chunks], [c.protected for c in chunks]
    groups = [c.doc_id for c in chunks]
    defender = TargetedRedactor(n_folds=3).fit(texts, labels, groups)
    assert sorted(set(defender.folds_.tolist())) == [0, 1, 2]
    p = 5
    fold = int(defender.folds_[p])
    from neswap_core.models.logistic import logistic_regression

    train = np.flatnonzero(defender.folds_ != fold)
    x = defender.vectorizer_.transform(texts)
    model = logistic_regression(C=10.0, max_iter=1000, random_state=0).fit(x[train], np.array(labels)[train])
    row = list(model.classes_).index(labels[p])
    expected = [model.coef_[row, defender.vectorizer_.vocabulary_[w.lower()]] for _, _, w in word_spans(texts[p])]
    assert [s.score for s in defender.word_scores(texts[p], labels[p], p)] == pytest.approx(expected)


def test_redact_step_validates_method_and_margin() -> None:
    assert Plan((Redact(0.1, "targeted", 2.0),)).describe().startswith("10 % of words masked")
    with pytest.raises(ConfigError, match="method"):
        Redact(0.1, "random")
    with pytest.raises(ConfigError, match="margin"):
        Redact(0.1, "targeted", -1.0)
    step = Plan.from_dict(Plan((Redact(0.05, "targeted", 1.5),)).to_dict()).steps[0]
    assert (step.level, step.method, step.margin) == (0.05, "targeted", 1.5)


def test_targeted_plan_step_masks_the_corpus_budget_and_a_rejected_word_stays() -> None:
    from types import SimpleNamespace

    from neswap_core.generate.plans import apply_plan

    chunks = _corpus()
    ctx = SimpleNamespace(chunks=chunks, labels=np.zeros(len(chunks), dtype=int),
                          embeddings=np.ones((len(chunks), 2)) / np.sqrt(2),
                          mixture=SimpleNamespace(concentrations_=np.array([0.9])))  # fmt: skip
    plan = Plan((Redact(0.1, "targeted", 0.0),))
    result = apply_plan(ctx, plan, np.random.default_rng(0))
    n_words = sum(len(word_spans(c.text)) for c in chunks)
    masks = sum(c.text.count(MASK_PLACEHOLDER) for c in result.chunks)
    assert masks == len(result.changes) == masked_count(n_words, 0.1)
    assert result.chunks_at(result.stages[-1]) == result.chunks
    changed = {c.chunk_id for c in result.changes}
    assert 0 < len(changed) < len(chunks)  # the budget went to some chunks, not to every one
    rejected = result.changes[0]
    again = apply_plan(ctx, plan, np.random.default_rng(0), frozenset({rejected.key}))
    assert rejected.key not in {c.key for c in again.changes}
    assert len(again.changes) == len(result.changes) - 1


def test_decoys_fill_masked_words_with_terms_of_the_company_the_defender_names_instead() -> None:
    from neswap_core.generate.targeted import with_decoys

    chunks = _corpus()
    texts, labels = [c.text for c in chunks], [c.protected for c in chunks]
    defender = TargetedRedactor(n_folds=1, margin=0.0).fit(texts, labels)
    records = defender.select(chunks, 0.1)
    terms = {"A": ("a0", "a1 a2"), "B": ("b0", "b1"), "C": ("c0",)}  # phrases are never decoys
    decoyed = with_decoys(chunks, records, defender, terms, np.random.default_rng(0))
    assert [(r.chunk_id, r.start, r.word) for r in decoyed] == [(r.chunk_id, r.start, r.word) for r in records]
    for chunk in chunks:
        own = [r for r in decoyed if r.chunk_id == chunk.chunk_id]
        if not own:
            continue
        masked = apply_redactions(chunk, [r for r in records if r.chunk_id == chunk.chunk_id]).text
        other = defender.best_other(masked, chunk.protected)
        assert other != chunk.protected
        assert {r.replacement for r in own} <= {t for t in terms[other] if " " not in t}
        after = apply_redactions(chunk, own)
        assert MASK_PLACEHOLDER not in after.text
        assert len(word_spans(after.text)) == len(word_spans(chunk.text))  # one word for one word


def test_decoy_plan_step_records_the_decoy_and_needs_targeted_redaction() -> None:
    from types import SimpleNamespace

    from neswap_core.generate.plans import apply_plan

    chunks = _corpus()
    ctx = SimpleNamespace(chunks=chunks, labels=np.zeros(len(chunks), dtype=int),
                          embeddings=np.ones((len(chunks), 2)) / np.sqrt(2),
                          mixture=SimpleNamespace(concentrations_=np.array([0.9])))  # fmt: skip
    result = apply_plan(ctx, Plan((Redact(0.1, "targeted", 0.0, fill="decoy"),)), np.random.default_rng(0))
    assert result.changes and all(c.after != MASK_PLACEHOLDER for c in result.changes)
    for change in result.changes:
        chunk = next(c for c in result.chunks if c.chunk_id == change.chunk_id)
        assert change.after in chunk.text
    assert "decoy" in Plan((Redact(0.1, "targeted", fill="decoy"),)).describe()
    with pytest.raises(ConfigError, match="decoy"):
        Redact(0.1, "smarter", fill="decoy")
