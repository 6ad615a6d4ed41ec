"""Valid pairs (SPEC §3): inclusion–exclusion degrees against brute force, uniform draws."""

from __future__ import annotations

import itertools
import time
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.errors import ConfigError, CorpusError
from neswap_core.generate.pairs import (
    PairCodes,
    PairSampler,
    count_valid_pairs,
    explain_no_pairs,
    is_valid_pair,
    pair_codes,
    resolve_categories,
    valid_degrees,
    valid_pairs_by_cluster,
)
from neswap_core.text.contingency import cell_value

# --- helpers ---------------------------------------------------------------------------------


def make_chunk(cid: str, protected: str, entities: list[tuple[str, str]]) -> Chunk:
    """A chunk whose text is its entity strings separated by filler; spans at the right offsets."""
    text, spans = "", []
    for category, value in entities:
        text += "and "
        spans.append(
            EntitySpan(len(text), len(text) + len(value), category[:3].upper(), category, value)
        )
        text += value + " "
    return Chunk(cid, protected, 0, text, protected, tuple(spans))


def brute_valid(codes: PairCodes, i: int, j: int) -> bool:
    """SPEC §3 constraints 1–4 written out in plain Python, from the codes."""
    if i == j or codes.cluster[i] != codes.cluster[j] or codes.protected[i] == codes.protected[j]:
        return False
    if codes.other[i] == codes.other[j]:
        return False
    good = [a >= 0 and b >= 0 and a != b for a, b in zip(codes.swap[i], codes.swap[j], strict=True)]
    return all(good) if codes.require == "all" else any(good)


def brute_degrees(codes: PairCodes, alive: np.ndarray) -> np.ndarray:
    out = np.zeros(codes.n, dtype=np.int64)
    for i, j in itertools.combinations(np.flatnonzero(alive), 2):
        if brute_valid(codes, i, j):
            out[i] += 1
            out[j] += 1
    return out


@st.composite
def random_codes(draw, max_n: int = 14) -> tuple[PairCodes, np.ndarray]:
    """Small random code tables with few distinct values, so that every kind of tie happens."""
    n = draw(st.integers(0, max_n))
    k = draw(st.integers(1, 3))

    def ints(lo: int, hi: int, size: int) -> np.ndarray:
        values = draw(st.lists(st.integers(lo, hi), min_size=size, max_size=size))
        return np.array(values, dtype=np.int64)

    codes = PairCodes(
        categories=tuple(f"S{t}" for t in range(k)),
        require=draw(st.sampled_from(["all", "any"])),
        cluster=ints(0, 1, n),
        clusters=np.array([0, 1]),
        protected=ints(0, 2, n),
        swap=ints(-1, 2, n * k).reshape(n, k),
        other=ints(0, 2, n),
    )
    alive = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    return codes, alive


# --- degrees and counts -------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(random_codes())
def test_inclusion_exclusion_degrees_equal_brute_force(case):
    codes, alive = case
    assert np.array_equal(valid_degrees(codes, alive), brute_degrees(codes, alive))
    assert np.array_equal(valid_degrees(codes), brute_degrees(codes, np.ones(codes.n, bool)))


@settings(max_examples=150, deadline=None)
@given(random_codes())
def test_per_pair_test_and_cluster_counts_match_brute_force(case):
    codes, alive = case
    for i, j in itertools.combinations(range(codes.n), 2):
        assert is_valid_pair(codes, i, j) == brute_valid(codes, i, j) == is_valid_pair(codes, j, i)
    by_cluster = valid_pairs_by_cluster(codes, alive)
    brute = Counter(
        int(codes.cluster[i])
        for i, j in itertools.combinations(np.flatnonzero(alive), 2)
        if brute_valid(codes, i, j)
    )
    assert by_cluster == {0: brute[0], 1: brute[1]}


ENTITY_VALUES = {
    "Organization": ["Acme", "Globex", "Initech"],
    "Product": ["Gizmo", "Widget"],
    "Date": ["May", "June"],
    "Event": ["Expo", "Summit"],
}


@st.composite
def chunk_lists(draw) -> tuple[list[Chunk], np.ndarray]:
    pool = [(c, v) for c, vs in ENTITY_VALUES.items() for v in vs]
    n = draw(st.integers(2, 10))
    chunks = [
        make_chunk(
            f"c{i}",
            f"Co{draw(st.integers(0, 2))}",
            draw(st.lists(st.sampled_from(pool), max_size=5)),
        )
        for i in range(n)
    ]
    labels = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    return chunks, labels


def cell(chunk: Chunk, category: str) -> str:
    return cell_value(chunk.values(category))


@settings(max_examples=150, deadline=None)
@given(chunk_lists(), st.sampled_from(["all", "any"]))
def test_count_valid_pairs_from_chunks_matches_string_brute_force(case, require):
    """Cells compared as z strings; with a roles mapping the C category (Event) never counts."""
    chunks, labels = case
    roles = {"Organization": "S", "Product": "S", "Date": "F", "Event": "C"}
    swap, others = ["Organization", "Product"], ["Date"]
    expected = 0
    for (a, la), (b, lb) in itertools.combinations(zip(chunks, labels, strict=True), 2):
        good = [cell(a, s) != "" and cell(b, s) != "" and cell(a, s) != cell(b, s) for s in swap]
        expected += bool(
            la == lb
            and a.protected != b.protected
            and (all(good) if require == "all" else any(good))
            and any(cell(a, c) != cell(b, c) for c in others)
        )
    assert count_valid_pairs(chunks, labels, roles, require) == expected


def test_cells_are_compared_as_sorted_distinct_strings():
    """{"A", "B"} mentioned as B, A, B equals {"A", "B"} mentioned as A, B: same z cell."""
    a = make_chunk(
        "a",
        "X",
        [
            ("Organization", "Beta"),
            ("Organization", "Alpha"),
            ("Organization", "Beta"),
            ("Date", "May"),
        ],
    )
    b = make_chunk(
        "b", "Y", [("Organization", "Alpha"), ("Organization", "Beta"), ("Date", "June")]
    )
    c = make_chunk("c", "Z", [("Organization", "Alpha"), ("Date", "July")])
    codes = pair_codes([a, b, c], [0, 0, 0], ["Organization"])
    assert codes.swap[0, 0] == codes.swap[1, 0] != codes.swap[2, 0]
    assert count_valid_pairs([a, b, c], [0, 0, 0], ["Organization"]) == 2  # a-c and b-c


# --- the draw ------------------------------------------------------------------------------------


def star_example() -> tuple[list[Chunk], np.ndarray]:
    """Five chunks in cluster 0 with degrees 3, 2, 4, 3, 2 (7 valid pairs); one alone in cluster 1."""
    spec = [
        ("A1", "A", "X"),
        ("B1", "B", "Y"),
        ("C1", "C", "Z"),
        ("D1", "D", "Y"),
        ("B2", "B", "X"),
        ("E1", "E", "W"),
    ]
    chunks = [
        make_chunk(cid, co, [("Organization", org), ("Date", f"Day{k}")])
        for k, (cid, co, org) in enumerate(spec)
    ]
    return chunks, np.array([0, 0, 0, 0, 0, 1])


def exact_sequence_probabilities(codes: PairCodes) -> dict[tuple, float]:
    """P(sequence of pairs) = Π 1 / (number of valid pairs at step t), by enumeration."""
    out: dict[tuple, float] = {}

    def walk(alive: frozenset, prefix: tuple, p: float) -> None:
        pairs = [
            (i, j) for i, j in itertools.combinations(sorted(alive), 2) if brute_valid(codes, i, j)
        ]
        if not pairs:
            out[prefix] = p
        for i, j in pairs:
            walk(alive - {i, j}, prefix + ((i, j),), p / len(pairs))

    walk(frozenset(range(codes.n)), (), 1.0)
    return out


def test_sequential_draws_are_uniform_among_currently_valid_pairs():
    """Chi-square over whole sequences; a chunk-uniform draw would fail here (unequal degrees)."""
    chunks, labels = star_example()
    codes = pair_codes(chunks, labels, ["Organization"])
    assert valid_degrees(codes).tolist() == [3, 2, 4, 3, 2, 0]
    exact = exact_sequence_probabilities(codes)
    rng = np.random.default_rng(20240611)
    draws = 8_000
    degrees = valid_degrees(codes)
    seen: Counter = Counter()
    for _ in range(draws):
        sampler = PairSampler(codes, degrees)
        sequence = []
        while (pair := sampler.draw(rng)) is not None:
            sequence.append(tuple(sorted(pair)))
        seen[tuple(sequence)] += 1
    assert set(seen) <= set(exact)
    keys = sorted(exact)
    observed = np.array([seen[k] for k in keys])
    expected = np.array([exact[k] * draws for k in keys])
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    first = Counter(s[0] for s in seen.elements())
    assert len(first) == 7
    assert stats.chisquare([first[k] for k in sorted(first)]).pvalue > 1e-3


def test_sampler_exhausts_and_every_draw_is_valid_at_its_time():
    chunks, labels = star_example()
    codes = pair_codes(chunks, labels, ["Organization"])
    for seed in range(30):
        sampler = PairSampler(codes)
        alive = np.ones(codes.n, bool)
        while (pair := sampler.draw(np.random.default_rng(seed))) is not None:
            assert alive[list(pair)].all() and brute_valid(codes, *pair)
            alive[list(pair)] = False
            assert sampler.n_pairs == brute_degrees(codes, alive).sum() // 2
        assert brute_degrees(codes, alive).sum() == 0


def test_sampler_is_fast_at_100k_chunks():
    """Degrees by inclusion–exclusion and 30 draws on 100,000 rows (no n × n matrix)."""
    rng = np.random.default_rng(0)
    n = 100_000
    codes = PairCodes(
        ("Organization", "Product"),
        "all",
        rng.integers(0, 10, n),
        np.arange(10),
        rng.integers(0, 2000, n),
        rng.integers(-1, n // 5, (n, 2)),
        rng.integers(0, n // 2, n),
    )
    start = time.perf_counter()
    sampler = PairSampler(codes)
    pairs = [sampler.draw(rng) for _ in range(30)]
    print(f"100k codes: degrees + 30 draws in {time.perf_counter() - start:.2f} s")
    assert all(p is not None and is_valid_pair(codes, *p) for p in pairs)
    assert len({i for p in pairs for i in p}) == 60


# --- diagnostics and errors ------------------------------------------------------------------------


def test_explain_no_pairs_names_the_failing_constraint():
    a = make_chunk("a", "A", [("Organization", "Acme"), ("Date", "May")])
    b = make_chunk("b", "B", [("Organization", "Globex"), ("Date", "June")])
    c = make_chunk("c", "B", [("Organization", "Acme"), ("Date", "May")])
    cases = [
        ([a, b], [0, 0], ["Organization", "Product"], "no chunk has a Product entity"),
        ([a, b], [0, 1], ["Organization"], "never share a cluster"),
        ([a, c], [0, 0], ["Organization"], "identical values"),
    ]
    for chunks, labels, cats, text in cases:
        codes = pair_codes(chunks, labels, cats)
        assert valid_degrees(codes).sum() == 0
        assert text in explain_no_pairs(codes)
    d = make_chunk("d", "D", [("Organization", "Initech"), ("Date", "May")])
    codes = pair_codes([a, d], [0, 0], ["Organization"])
    assert "only re-index" in explain_no_pairs(codes)
    e = make_chunk("e", "E", [("Organization", "Initech"), ("Product", "Gizmo")])
    assert "only 1 chunk" in explain_no_pairs(
        pair_codes([a, e], [0, 0], ["Organization", "Product"])
    )


def test_bad_inputs_raise_clear_errors():
    a = make_chunk("a", "A", [("Organization", "Acme")])
    b = make_chunk("b", "B", [("Organization", "Globex")])
    with pytest.raises(CorpusError, match="one cluster label per chunk"):
        pair_codes([a, b], [0], ["Organization"])
    with pytest.raises(CorpusError, match="integers"):
        pair_codes([a, b], [0.0, 1.0], ["Organization"])
    with pytest.raises(CorpusError, match="not unique"):
        pair_codes([a, a], [0, 0], ["Organization"])
    with pytest.raises(ConfigError, match="require"):
        pair_codes([a, b], [0, 0], ["Organization"], require="most")
    with pytest.raises(ConfigError, match="Unknown swap categories"):
        resolve_categories(["Company"])
    with pytest.raises(ConfigError, match="role S"):
        resolve_categories({"Organization": "F"})
    with pytest.raises(ConfigError, match="repeated"):
        resolve_categories(["Organization", "Organization"])
    with pytest.raises(ConfigError, match="Roles must be"):
        resolve_categories({"Organization": "X"})
    assert resolve_categories("Product") == (("Product",), ())
    assert resolve_categories({"Organization": "S", "Event": "C", "Date": "F"}) == (
        ("Organization",),
        ("Event",),
    )
