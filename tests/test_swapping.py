"""Roles, rewriting and sequential swapping (SPEC §3), with hypothesis-generated corpora."""

from __future__ import annotations

import itertools
import re
import time
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from neswap_core.config import CATEGORIES, PLACEHOLDER_PATTERN, SUPPRESSED_PLACEHOLDER
from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.errors import ConfigError, CorpusError, NeswapError
from neswap_core.generate.rewrite import plan_exchange, rewrite_chunk, swap_pair
from neswap_core.generate.swapping import (
    Replace,
    apply_operators,
    apply_roles,
    apply_swaps,
    swap_log,
    swap_sequence,
)
from neswap_core.text.contingency import cell_value

# --- corpus generator ------------------------------------------------------------------------

VOCAB = {
    "Organization": ["Acme Corp", "Acme", "Globex", "Initech Labs", "Paris"],
    "Person": ["Ann Lee", "Bob Stone", "Paris"],
    "Product": ["Widget Pro", "Widget", "Gizmo"],
    "Location": ["New York", "York", "Lyon"],
    "Event": ["Analyst Day", "Expo"],
    "Date": ["May Fifth", "June"],
}
ENTITY_WORDS = {w for values in VOCAB.values() for v in values for w in v.split()}
FILLER = [
    "we",
    "saw",
    "growth",
    "in",
    "the",
    "quarter",
    "and",
    "[Company Name]",
    "[Executive 1]",
    "[URL]",
]
PAIRS_POOL = [(c, v) for c, vs in VOCAB.items() for v in vs]
ITEM = st.one_of(
    st.tuples(st.just("f"), st.sampled_from(FILLER)),
    st.tuples(st.just("s"), st.sampled_from(PAIRS_POOL)),
    st.tuples(st.just("s"), st.sampled_from(PAIRS_POOL)),
    st.tuples(st.just("b"), st.sampled_from(PAIRS_POOL)),
)


def build_chunk(doc: str, index: int, protected: str, items) -> Chunk:
    """Join items with spaces: filler words, entity spans ("s") and bare entity strings ("b")."""
    pieces, spans, pos = [], [], 0
    for kind, payload in items:
        word = payload[1] if kind != "f" else payload
        if kind == "s":
            spans.append(EntitySpan(pos, pos + len(word), payload[0][:3].upper(), payload[0], word))
        pieces.append(word)
        pos += len(word) + 1
    return Chunk(f"{doc}#{index:04d}", doc, index, " ".join(pieces), protected, tuple(spans))


@st.composite
def corpora(draw, max_docs: int = 5, max_chunks: int = 5):
    n_docs = draw(st.integers(2, max_docs))
    n_companies = draw(st.integers(2, n_docs))
    chunks = [
        build_chunk(f"doc{d}", k, f"Co{d % n_companies}", draw(st.lists(ITEM, max_size=9)))
        for d in range(n_docs)
        for k in range(draw(st.integers(1, max_chunks)))
    ]
    labels = np.array(draw(st.lists(st.integers(0, 1), min_size=len(chunks), max_size=len(chunks))))
    return chunks, labels


SWAPPABLE = ["Organization", "Person", "Product", "Location"]
ROLE_SETS = st.lists(st.sampled_from(SWAPPABLE), min_size=1, max_size=2, unique=True).map(
    lambda s: {**{c: "U" for c in SWAPPABLE}, **{c: "S" for c in s}, "Event": "C", "Date": "F"}
)


# --- helpers -------------------------------------------------------------------------------------


def cell(chunk: Chunk, category: str) -> str:
    return cell_value(chunk.values(category))


def brute_valid(a, b, la, lb, swap, require) -> bool:
    """SPEC §3 constraints 1–4 on z cell strings, written out independently of pairs.py."""
    if a.protected == b.protected or la != lb:
        return False
    good = [cell(a, s) != "" and cell(b, s) != "" and cell(a, s) != cell(b, s) for s in swap]
    if not (all(good) if require == "all" else any(good)):
        return False
    return any(cell(a, c) != cell(b, c) for c in CATEGORIES if c not in swap)


def non_entity_words(text: str) -> list[str]:
    return [w for w in text.split(" ") if w not in ENTITY_WORDS]


def fixed_spans(chunk: Chunk, swap) -> list[tuple[str, str, str]]:
    return [(s.label, s.category, s.text) for s in chunk.entities if s.category not in swap]


def assert_consistent(chunk: Chunk) -> None:
    spans = sorted(chunk.entities, key=lambda s: s.start)
    assert all(chunk.text[s.start : s.end] == s.text for s in spans)
    assert all(x.end <= y.start for x, y in itertools.pairwise(spans))
    assert not any(re.fullmatch(PLACEHOLDER_PATTERN, s.text) for s in spans)


# --- properties of whole runs ----------------------------------------------------------------------


@settings(max_examples=120, deadline=None)
@given(
    corpora(),
    ROLE_SETS,
    st.sampled_from(["all", "any"]),
    st.integers(1, 6),
    st.integers(0, 2**32 - 1),
)
def test_swap_run_properties(case, roles, require, max_swaps, seed):
    chunks, labels = case
    run = swap_sequence(
        chunks, labels, roles, np.random.default_rng(seed), max_swaps=max_swaps, require=require
    )
    swap = [c for c in CATEGORIES if roles.get(c) == "S"]
    base = run.base
    # valid at draw time, never the same protected value, never a chunk twice
    used: set[int] = set()
    for rec in run.records:
        a, b = base[rec.index_a], base[rec.index_b]
        assert (a.chunk_id, b.chunk_id) == (rec.chunk_a, rec.chunk_b)
        assert (
            rec.protected_a != rec.protected_b
            and labels[rec.index_a] == labels[rec.index_b] == rec.cluster
        )
        assert brute_valid(a, b, 0, 0, swap, require)
        assert not {rec.index_a, rec.index_b} & used
        used |= {rec.index_a, rec.index_b}
    assert len(run.swapped_ids) == len(set(run.swapped_ids)) == 2 * run.n_swaps
    # stops only when no valid pair is left; the initial count is the brute-force count
    free = [k for k in range(len(base)) if k not in used]
    left = sum(
        brute_valid(base[i], base[j], labels[i], labels[j], swap, require)
        for i, j in itertools.combinations(free, 2)
    )
    assert run.initial_valid_pairs == sum(
        brute_valid(base[i], base[j], labels[i], labels[j], swap, require)
        for i, j in itertools.combinations(range(len(base)), 2)
    )
    assert run.exhausted == (left == 0 and run.n_swaps < max_swaps)
    assert run.exhausted or run.n_swaps == max_swaps
    after = run.chunks
    for k, (old, new) in enumerate(zip(base, after, strict=True)):
        assert_consistent(new)
        if k not in used:
            assert new is old
        # F, C, U and unswapped categories byte-identical; placeholders and other text intact
        assert fixed_spans(new, swap) == fixed_spans(old, swap)
        assert re.findall(PLACEHOLDER_PATTERN, new.text) == re.findall(
            PLACEHOLDER_PATTERN, old.text
        )
        assert non_entity_words(new.text) == non_entity_words(old.text)
    # per S category the multiset of the pair's distinct values is conserved
    for rec in run.records:
        for s in swap:
            before = Counter(base[rec.index_a].values(s)) + Counter(base[rec.index_b].values(s))
            now = Counter(after[rec.index_a].values(s)) + Counter(after[rec.index_b].values(s))
            assert before == now
            received = {vb for c, _, vb in rec.exchanged if c == s}
            kept = {v for c, v in rec.leftovers_a + rec.shared if c == s}
            assert set(after[rec.index_a].values(s)) == received | kept
    # deterministic for a seed; the release after t is rebuilt from its records
    again = swap_sequence(
        chunks, labels, roles, np.random.default_rng(seed), max_swaps=max_swaps, require=require
    )
    assert again.records == run.records and again.chunks == after
    for t in range(run.n_swaps + 1):
        assert apply_swaps(base, run.records[:t]) == run.chunks_after(t)


@settings(max_examples=60, deadline=None)
@given(corpora(), st.integers(0, 2**32 - 1), st.data())
def test_rejected_pairs_are_excluded_and_the_rest_reproduced(case, seed, data):
    chunks, labels = case
    run = swap_sequence(
        chunks, labels, ["Organization"], np.random.default_rng(seed), max_swaps=5, require="any"
    )
    kept = data.draw(st.lists(st.sampled_from(run.records), unique=True)) if run.records else []
    release = run.release(kept)
    kept_positions = {k for r in kept for k in (r.index_a, r.index_b)}
    full = run.chunks
    for k, chunk in enumerate(release):
        if k in kept_positions:
            assert chunk == full[k]
        else:
            assert chunk is run.base[k]


@settings(max_examples=60, deadline=None)
@given(corpora(), st.integers(0, 2**32 - 1))
def test_suppressed_leftovers_become_category_placeholders(case, seed):
    chunks, labels = case
    run = swap_sequence(
        chunks,
        labels,
        ["Organization", "Product"],
        np.random.default_rng(seed),
        max_swaps=4,
        require="any",
        suppress_leftovers=True,
    )
    for rec, (new_a, new_b) in zip(run.records, run.swapped, strict=True):
        for chunk, leftovers in ((new_a, rec.leftovers_a), (new_b, rec.leftovers_b)):
            assert_consistent(chunk)
            for category, value in leftovers:
                assert value not in chunk.values(category)
                assert f"[{category}]" in chunk.text


# --- hand-made cases -------------------------------------------------------------------------------


def chunk(cid: str, protected: str, *items) -> Chunk:
    parsed = [
        ("s", item) if isinstance(item, tuple) else ("b" if item.startswith("!") else "f", item)
        for item in items
    ]
    parsed = [("b", (None, p[1][1:])) if p[0] == "b" else p for p in parsed]
    return build_chunk(cid, 0, protected, parsed)


def test_rewrite_replaces_every_whole_word_mention_longest_first_and_never_placeholders():
    c = chunk(
        "a",
        "A",
        ("Organization", "Acme"),
        "and",
        ("Organization", "Acme Corp"),
        "met",
        "!Acme",
        "!Acme Corp",
        "!Acmex",
        "[Company Name]",
        ("Product", "Acme Phone"),
        "!Acme.",
    )
    new = rewrite_chunk(
        c, {("Organization", "Acme"): "Globex", ("Organization", "Acme Corp"): "Initech Labs"}
    )
    assert new.text == (
        "Globex and Initech Labs met Globex Initech Labs Acmex [Company Name] Acme Phone Globex."
    )
    assert [s.text for s in new.entities] == ["Globex", "Initech Labs", "Acme Phone"]
    assert_consistent(new)
    assert rewrite_chunk(c, {("Organization", "Nope"): "X"}) is c


def test_bare_string_also_kept_as_another_categorys_span_is_left_alone():
    c = chunk("a", "A", ("Organization", "Paris"), ("Location", "Paris"), "in", "!Paris")
    new = rewrite_chunk(c, {("Organization", "Paris"): "Globex"})
    assert new.text == "Globex Paris in Paris"
    assert [(s.category, s.text) for s in new.entities] == [
        ("Organization", "Globex"),
        ("Location", "Paris"),
    ]


def test_rewrite_rejects_inconsistent_spans():
    bad = Chunk(
        "a#0000", "a", 0, "hello Acme", "A", (EntitySpan(0, 4, "ORG", "Organization", "Acme"),)
    )
    with pytest.raises(CorpusError, match="does not match"):
        rewrite_chunk(bad, {("Organization", "Acme"): "X"})
    overlap = Chunk(
        "a#0000",
        "a",
        0,
        "Acme Corp",
        "A",
        (
            EntitySpan(0, 4, "ORG", "Organization", "Acme"),
            EntitySpan(0, 9, "ORG", "Organization", "Acme Corp"),
        ),
    )
    with pytest.raises(CorpusError, match="overlap"):
        rewrite_chunk(overlap, {("Organization", "Acme"): "X"})


def test_exchange_pairs_first_distinct_values_and_keeps_shared_ones():
    a = chunk(
        "a",
        "A",
        ("Organization", "Acme"),
        ("Organization", "Globex"),
        ("Organization", "Acme"),
        ("Organization", "Initech Labs"),
    )
    b = chunk("b", "B", ("Organization", "Globex"), ("Organization", "Paris"))
    ex = plan_exchange(a, b, "Organization")
    assert ex.pairs == (("Acme", "Paris"),)
    assert ex.leftovers_a == ("Initech Labs",) and ex.leftovers_b == () and ex.shared == ("Globex",)
    new_a, new_b, _ = swap_pair(a, b, ["Organization"])
    assert new_a.text == "Paris Globex Paris Initech Labs" and new_b.text == "Globex Acme"
    new_a, _, _ = swap_pair(a, b, ["Organization"], suppress_leftovers=True)
    assert new_a.text == "Paris Globex Paris [Organization]"
    assert new_a.values("Organization") == ("Paris", "Globex")


def test_nested_values_are_a_valid_pair_that_moves_nothing_and_is_flagged():
    """Cells "Acme & Globex" and "Globex" differ (valid, SPEC §3) but nothing can move."""
    a = chunk("a", "A", ("Organization", "Acme"), ("Organization", "Globex"), ("Date", "June"))
    b = chunk("b", "B", ("Organization", "Globex"), ("Date", "May Fifth"))
    run = swap_sequence([a, b], [0, 0], ["Organization"], np.random.default_rng(0))
    assert run.n_swaps == 1 and not run.records[0].moved
    assert run.records[0].shared == (("Organization", "Globex"),)
    assert run.chunks[0] is a and run.chunks[1] is b
    assert "moved nothing" in run.message


def test_apply_roles_replaces_c_everywhere_and_suppresses_u_on_request():
    a = chunk(
        "a",
        "A",
        ("Event", "Analyst Day"),
        "in",
        ("Location", "York"),
        "!Analyst Day",
        ("Date", "June"),
    )
    b = chunk("b", "B", ("Organization", "Acme"), "only")
    roles = {"Event": "C", "Location": "U", "Date": "F", "Organization": "S"}
    out = apply_roles([a, b], roles)
    assert out[0].text == "[Event] in York [Event] June" and out[1] is b
    assert [s.text for s in out[0].entities] == ["York", "June"]
    assert_consistent(out[0])
    out = apply_roles([a, b], roles, suppress_untouched=True)
    assert out[0].text == f"[Event] in {SUPPRESSED_PLACEHOLDER} [Event] June"
    assert [s.category for s in out[0].entities] == ["Date"]
    custom = apply_operators([a], {"Date": Replace("[Date]")})
    assert custom[0].text.endswith("[Date]")
    with pytest.raises(ConfigError, match="Roles must be"):
        apply_roles([a], {"Event": "drop"})


def handmade() -> tuple[list[Chunk], np.ndarray]:
    chunks = [
        chunk("a", "A", ("Organization", "Acme"), ("Product", "Gizmo"), ("Date", "June")),
        chunk("b", "B", ("Organization", "Globex"), ("Date", "May Fifth")),
        chunk("c", "C", ("Organization", "Paris"), ("Product", "Widget"), ("Event", "Expo")),
        chunk("d", "A", ("Organization", "Initech Labs"), ("Product", "Widget Pro")),
    ]
    return chunks, np.array([0, 0, 0, 1])


def test_a_category_without_any_entity_gives_no_swap_and_says_why():
    chunks, labels = handmade()
    chunks = [apply_operators([c], {"Product": Replace()})[0] for c in chunks]
    run = swap_sequence(chunks, labels, ["Organization", "Product"], np.random.default_rng(0))
    assert run.n_swaps == 0 and run.exhausted and run.chunks == list(chunks)
    assert "No valid pair for Organization + Product" in run.message
    assert "no chunk has a Product entity" in run.message
    run = swap_sequence(
        chunks, labels, ["Organization", "Product"], np.random.default_rng(0), require="any"
    )
    assert run.n_swaps == 1 and run.exhausted
    assert (
        "Only 1 swap for" in run.message and "Product has no valid pair on its own" in run.message
    )


def test_require_any_pairs_a_chunk_missing_one_category():
    chunks, labels = handmade()
    roles = {"Organization": "S", "Product": "S", "Event": "C", "Date": "F"}
    run_all = swap_sequence(chunks, labels, roles, np.random.default_rng(0), max_swaps=5)
    assert run_all.initial_valid_pairs == 1  # a-c: b lacks a Product, d is alone in its cluster
    assert {run_all.records[0].chunk_a, run_all.records[0].chunk_b} == {"a#0000", "c#0000"}
    run_any = swap_sequence(
        chunks, labels, roles, np.random.default_rng(0), max_swaps=5, require="any"
    )
    assert run_any.initial_valid_pairs == 3
    pairs = {frozenset((r.chunk_a, r.chunk_b)): r for r in run_any.records}
    for r in pairs.values():
        if "b#0000" in (r.chunk_a, r.chunk_b):
            other = r.leftovers_a if r.chunk_a != "b#0000" else r.leftovers_b
            assert [c for c, _ in other] == ["Product"]  # b had no Product to give back
    log = swap_log(run_any.records)
    assert list(log["step"]) == list(range(1, run_any.n_swaps + 1))
    rec = run_all.records[0]
    row = swap_log([rec]).iloc[0]
    assert row["categories"] == "Organization + Product"
    assert row["exchanged"] == "; ".join(f"{c}: {a} <-> {b}" for c, a, b in rec.exchanged)
    assert {rec.chunk_a, rec.chunk_b} == {row["chunk_a"], row["chunk_b"]}


def test_first_pair_is_uniform_over_seeds():
    """Chi-square of the first pair over many seeds on a tiny corpus with unequal degrees."""
    spec = [("A", "Acme"), ("B", "Globex"), ("C", "Paris"), ("D", "Globex"), ("B", "Acme")]
    chunks = [
        chunk(f"x{k}", co, ("Organization", org), ("Date", ["June", "May Fifth"][k % 2]), f"k{k}")
        for k, (co, org) in enumerate(spec)
    ]
    labels = np.zeros(len(chunks), dtype=int)
    valid = {
        frozenset((i, j))
        for i, j in itertools.combinations(range(5), 2)
        if brute_valid(chunks[i], chunks[j], 0, 0, ["Organization"], "all")
    }
    counts = Counter()
    for seed in range(1400):
        rec = swap_sequence(
            chunks, labels, ["Organization"], np.random.default_rng(seed), max_swaps=1
        ).records[0]
        counts[frozenset((rec.index_a, rec.index_b))] += 1
    assert set(counts) == valid and len(valid) == 5
    assert stats.chisquare([counts[p] for p in valid]).pvalue > 1e-3


def test_bad_arguments_raise_clear_errors():
    chunks, labels = handmade()
    with pytest.raises(ConfigError, match="Generator"):
        swap_sequence(chunks, labels, ["Organization"], 42)
    with pytest.raises(ConfigError, match="max_swaps"):
        swap_sequence(chunks, labels, ["Organization"], np.random.default_rng(0), max_swaps=0)
    with pytest.raises(CorpusError, match="one cluster label per chunk"):
        swap_sequence(chunks, labels[:2], ["Organization"], np.random.default_rng(0))
    run = swap_sequence(chunks, labels, ["Organization"], np.random.default_rng(0), max_swaps=1)
    with pytest.raises(NeswapError, match="only once"):
        apply_swaps(run.base, run.records * 2)
    with pytest.raises(CorpusError, match="not among the given chunks"):
        apply_swaps(run.base[:1], run.records)
    other = [
        c if k != run.records[0].index_a else chunk(c.doc_id, c.protected, ("Organization", "York"))
        for k, c in enumerate(run.base)
    ]
    with pytest.raises(CorpusError, match="does not match"):
        apply_swaps(other, run.records)
    with pytest.raises(ConfigError, match="t must be"):
        run.chunks_after(5)


def fast_chunks(n: int, rng: np.random.Generator) -> tuple[list[Chunk], np.ndarray]:
    """n chunks, 50 per document, each with one Organization, Product and Date from large vocabularies."""
    org, prod, date = (rng.integers(0, n // 4, n) for _ in range(3))
    chunks = []
    for k in range(n):
        o, p, d = f"Org{org[k]}", f"Prod{prod[k]}", f"Day{date[k]}"
        text = f"{o} sold {p} on {d}"
        spans = (
            EntitySpan(0, len(o), "ORG", "Organization", o),
            EntitySpan(len(o) + 6, len(o) + 6 + len(p), "PRODUCT", "Product", p),
            EntitySpan(len(text) - len(d), len(text), "DATE", "Date", d),
        )
        chunks.append(
            Chunk(f"d{k // 50}#{k % 50:04d}", f"d{k // 50}", k % 50, text, f"d{k // 50}", spans)
        )
    return chunks, rng.integers(0, 10, n)


def test_swapping_runs_at_100k_chunks():
    """Not a timing assertion: it must finish (no n × n matrix); benchmarks/ has the figures."""
    chunks, labels = fast_chunks(100_000, np.random.default_rng(1))
    start = time.perf_counter()
    run = swap_sequence(
        chunks, labels, ["Organization", "Product"], np.random.default_rng(2), max_swaps=30
    )
    print(
        f"100k chunks: 30 swaps in {time.perf_counter() - start:.2f} s, "
        f"{run.initial_valid_pairs} valid pairs at the start"
    )
    assert run.n_swaps == 30 and not run.exhausted
    assert len(run.changed_after(30)) == 60
