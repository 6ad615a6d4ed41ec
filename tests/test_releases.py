"""Candidate releases end to end on a synthetic corpus: the table, additivity, N, determinism."""

import hashlib

import numpy as np
import pytest

from neswap_core.choose.frontier import choose_release
from neswap_core.choose.sources import PaperRound
from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.errors import ConfigError
from neswap_core.generate.context import release_inputs
from neswap_core.generate.releases import (
    ReleaseContext,
    category_combinations,
    evaluate_records,
    sweep_releases,
)
from neswap_core.models.mixture import SphericalMixture

ORGS = ["Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark", "Wayne", "Wonka"]
PRODUCTS = ["Widget", "Gizmo", "Doohickey", "Sprocket", "Gadget", "Thingamajig"]
PEOPLE = ["Alice Smith", "Bob Jones", "Carol White", "Dan Brown", "Eve Black"]
DATES = ["March", "April", "2021", "the third quarter"]
CENTERS = np.eye(8)[:2]


def embed(texts):
    """Deterministic text → unit vector near one of two directions (by a hash of the text)."""
    out = []
    for t in texts:
        h = int(hashlib.sha256(t.encode()).hexdigest(), 16)
        rng = np.random.default_rng(h % 2**32)
        v = CENTERS[h % 2] * 4 + rng.normal(size=8) * 0.3
        out.append(v / np.linalg.norm(v))
    return np.array(out)


def make_chunks(n_docs=4, per_doc=12, seed=0):
    rng = np.random.default_rng(seed)
    chunks = []
    for d in range(n_docs):
        for i in range(per_doc):
            parts, spans, pos = [], [], 0
            for cat, pool in (("Organization", ORGS), ("Product", PRODUCTS), ("Person", PEOPLE), ("Date", DATES)):
                if rng.random() < 0.8:
                    value = pool[rng.integers(len(pool))]
                    prefix = f"In this part {cat.lower()} "
                    start = pos + len(prefix)
                    spans.append(EntitySpan(start, start + len(value), cat.upper()[:3], cat, value))
                    parts.append(prefix + value + ". ")
                    pos += len(prefix) + len(value) + 2
            text = "".join(parts) or "Nothing named here. "
            chunks.append(Chunk(f"d{d}#{i:04d}", f"d{d}", i, text, f"company{d}", tuple(spans)))
    return chunks


@pytest.fixture(scope="module")
def sweep():
    chunks = make_chunks()
    x = embed([c.text for c in chunks])
    mix = SphericalMixture(family="pkb", n_components=2, random_state=0).fit(x)
    ctx = ReleaseContext(chunks, x, mix, embed)
    return sweep_releases(ctx, ["Organization", "Person", "Product"], max_swaps=6, draws=3, seed=1)


def test_table_has_one_row_per_combination_and_step(sweep):
    table = sweep.table(1e20)
    assert set(table["combination"]) <= {"Organization + Person", "Organization + Product", "Person + Product"}
    n = sweep.ctx.n_chunks
    for _combo, rows in table.groupby("combination"):
        assert rows["swaps"].tolist() == list(range(1, len(rows) + 1))
        np.testing.assert_allclose(rows["swap_rate"], 2 * rows["swaps"] / n)
        # DR never increases as more pairs are swapped (each pair adds >= 0 swapped uniques)
        assert np.all(np.diff(rows["dr"].to_numpy()) <= 1e-12)
        assert rows["draws"].max() <= 3
    assert table["dr"].between(0, 1).all()


def test_table_is_the_sum_of_per_pair_effects(sweep):
    table = sweep.table(1e20)
    combo = sweep.combinations[0]
    draws = sweep.draws_for(combo)
    t = min(d.n_swaps for d in draws)
    assert t > 0
    vals = np.array([evaluate_records(sweep, d, range(t), 1e20) for d in draws])
    row = table[(table["combination"] == " + ".join(combo)) & (table["swaps"] == t)].iloc[0]
    if row["draws"] == len(draws):
        assert row["du"] == pytest.approx(vals[:, 0].mean())
        assert row["dr"] == pytest.approx(vals[:, 1].mean())
    # no accepted pair: the release is the original data
    assert evaluate_records(sweep, draws[0], [], 1e20) == (1.0, 1.0)


def test_population_changes_only_risk(sweep):
    a, b = sweep.table(1e10), sweep.table(1e30)
    np.testing.assert_allclose(a["du"], b["du"])
    assert not np.allclose(a["p_hat"], b["p_hat"])


def test_same_seed_same_releases_and_choice():
    chunks = make_chunks(seed=3)
    x = embed([c.text for c in chunks])
    tables = []
    for _ in range(2):
        mix = SphericalMixture(family="pkb", n_components=2, random_state=0).fit(x)
        s = sweep_releases(ReleaseContext(chunks, x, mix, embed), ["Organization", "Product"],
                           combination_size=2, max_swaps=5, seed=7)
        tables.append(s.table(1e20))
        assert [r.chunk_a for r in s.draws[0].run.records] == [r.chunk_a for r in s.draws[0].run.records]
    assert tables[0].equals(tables[1])
    c0, c1 = (choose_release(t, 0, 0.99) for t in tables)
    assert c0.index == c1.index


def test_release_inputs_apply_c_placeholders_and_reembed_only_changed():
    chunks = make_chunks()
    x = embed([c.text for c in chunks])
    calls = []

    def counting(texts):
        calls.append(len(texts))
        return embed(texts)

    roles = {"Organization": "S", "Person": "S", "Product": "S", "Location": "S", "Event": "C", "Date": "C"}
    pre, pre_x = release_inputs(chunks, x, roles, counting)
    changed = [i for i, (a, b) in enumerate(zip(chunks, pre, strict=True)) if a.text != b.text]
    assert changed and calls == [len(changed)]
    assert all("[Date]" in pre[i].text and not pre[i].values("Date") for i in changed)
    unchanged = sorted(set(range(len(chunks))) - set(changed))
    np.testing.assert_array_equal(pre_x[unchanged], x[unchanged])


def test_combinations_need_enough_swap_categories():
    assert len(category_combinations(["Organization", "Person", "Product", "Location"], 2)) == 6
    with pytest.raises(ConfigError, match="role S"):
        category_combinations(["Organization"], 2)


def test_the_lines_release_is_written_with_its_pairs(sweep):
    from neswap_core.choose.candidates import build_candidates, describe_candidate
    from neswap_core.config import RunConfig
    from neswap_core.run_release import finish_release

    cfg = RunConfig.of(roles={"Organization": "S", "Person": "S", "Product": "S", "Location": "F",
                           "Event": "F", "Date": "F"}, trade_off_c=1.0,
                       max_document_accuracy=1.0, document_levels=[])  # the line's release
    result = finish_release(cfg, None, None, build_candidates(sweep, cfg))
    row = result.row
    assert result.choice.why == "line" and row.name == choose_release(sweep.table(1e20), 0.0, 1.0).index
    assert describe_candidate(row).startswith(f"1 round of swapping {row['combination']}")
    assert len(result.release.changes) == int(row["swaps"]) == len(result.release.log)


def test_written_release_is_the_reported_draw_when_draws_differ_in_length():
    """M > 1 (issue 10): rows stop at the released draw's length, carry that draw's own DU/DR,
    and only rows every draw reaches are chosen, so the written pairs match the report."""
    chunks = make_chunks(n_docs=4, per_doc=10, seed=3)
    x = embed([c.text for c in chunks])
    mix = SphericalMixture(family="pkb", n_components=2, random_state=0).fit(x)
    ctx = ReleaseContext(chunks, x, mix, embed)
    sweep = sweep_releases(ctx, ["Organization", "Product"], combination_size=1, max_swaps=40,
                           draws=5, seed=2)
    lengths = {c: [d.n_swaps for d in sweep.draws_for(c)] for c in sweep.combinations}
    assert any(len(set(v)) > 1 for v in lengths.values()), lengths  # the case under test
    table = sweep.table(1e20)
    for combo, ns in lengths.items():
        rows = table[table["categories"] == combo]
        assert rows["swaps"].max() == ns[0]  # never beyond what draw 0 (the written one) has
        for _, row in rows.iterrows():
            t = int(row["swaps"])
            du0, dr0 = evaluate_records(sweep, sweep.draws_for(combo)[0], range(t), 1e20)
            assert row["du_released"] == pytest.approx(du0) and row["dr_released"] == pytest.approx(dr0)
            assert row["draws"] == sum(n >= t for n in ns) and row["draws_total"] == 5
            assert row["all_draws"] == (row["draws"] == 5)
    for c in (0.0, 1.0):  # "line not reached" fallback, and the best acceptable release
        choice = choose_release(table, 0.0, c)
        row = table.loc[choice.index]
        assert row["all_draws"]
        release = PaperRound(sweep, row, 1e20).review({})
        assert len(release.changes) == row["swaps"] and len(release.draws) == 5


def test_no_release_says_why_and_exhausted_pairs_are_not_told_to_allow_more_swaps(monkeypatch):
    import sys
    from types import SimpleNamespace

    from neswap_core.config import RunConfig
    from neswap_core.run_release import run_release

    def run_analysis(chunks, x, embed, cfg):
        prepared = SimpleNamespace(chunks=chunks, embeddings=x, raw=None,
                                   clean=SimpleNamespace(corpus=None), timings={})
        return run_release(prepared, cfg, embed)

    chunks = make_chunks(n_docs=3, per_doc=8, seed=1)
    monkeypatch.setattr(sys.modules[__name__], "ORGS", ["Acme"])  # one Organization value
    same = make_chunks(n_docs=3, per_doc=8, seed=1)
    x = embed([c.text for c in chunks])
    cfg = RunConfig.of(roles={"Organization": "S", "Person": "F", "Product": "F", "Location": "F",
                           "Event": "F", "Date": "F"}, combination_size=1, n_components=2,
                    n_init=1, trade_off_c=0.0, max_document_accuracy=1.0, document_levels=[])
    result = run_analysis(same, embed([c.text for c in same]), embed, cfg)
    assert result.release is None and len(result.candidates.table) == 0
    assert "identical values" in result.no_release_reason()
    cfg.sweep.max_swaps = 500  # far more than the valid pairs: every draw runs out of pairs
    result = run_analysis(chunks, x, embed, cfg)
    line = result.choice.line
    assert result.sweep.exhausted() and not line.line_reached
    assert "allow more swaps" not in line.message
    assert "more swaps are not possible" in line.message


def test_a_kept_sweep_state_leaves_out_the_chunks_and_restores_the_same_sweep(sweep):
    """Issue 21: the kept ``SweepState`` held every chunk a second time through each draw's
    swap run (78 MB and 1 s to read back at 100k passages, and a second copy in memory). It
    keeps the draws without them and gives them back the caller's chunks: the same sweep."""
    import pickle
    from dataclasses import replace

    from neswap_core.generate.releases import SweepState

    state = SweepState.of(sweep)
    assert state.base_shared and all(d.run.base == () for d in state.draws)
    assert all(len(d.run.base) == len(sweep.ctx.chunks) for d in sweep.draws)  # the sweep untouched
    plain = pickle.dumps(replace(state, draws=list(sweep.draws), base_shared=False))
    assert len(pickle.dumps(state)) < len(plain) - sum(len(pickle.dumps(c)) for c in sweep.ctx.chunks) // 2
    ctx = sweep.ctx
    back = pickle.loads(pickle.dumps(state)).restore(ctx.chunks, ctx.embeddings, ctx.mixture, ctx.embed)
    for a, b in zip(back.draws, sweep.draws, strict=True):
        assert a.run == b.run and (a.combination, a.seed) == (b.combination, b.seed)
        assert all(x is y for x, y in zip(a.run.base, ctx.chunks, strict=True))  # one copy
        np.testing.assert_array_equal(a.deltas, b.deltas)
    for population in (1e6, 1e20):
        assert back.table(population).equals(sweep.table(population))


def test_a_sweep_whose_draws_swapped_other_chunks_is_kept_whole(sweep):
    """A draw whose run swapped chunks other than the sweep's own keeps them (nothing is
    dropped that ``restore`` could not give back)."""
    from dataclasses import replace

    from neswap_core.generate.releases import Sweep, SweepState

    other = tuple(replace(c, text=c.text + " ") for c in sweep.ctx.chunks)
    odd = Sweep(sweep.ctx, sweep.combinations,
                [replace(sweep.draws[0], run=replace(sweep.draws[0].run, base=other)), *sweep.draws[1:]],
                sweep.max_swaps, sweep.n_draws, dict(sweep._profiles))
    state = SweepState.of(odd)
    assert not state.base_shared and state.draws[0].run.base == other
    ctx = sweep.ctx
    back = state.restore(ctx.chunks, ctx.embeddings, ctx.mixture, ctx.embed)
    assert back.draws[0].run.base == other and back.draws[1].run.base == tuple(ctx.chunks)
