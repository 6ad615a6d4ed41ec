"""AppTests of the Swaps, Frontier and Export pages on the bundled corpus (issue 5).

Every test gets its own workspace (NESWAP_WORKSPACE) seeded with small settings (K = 5,
10 swaps, one restart); the pipeline caches are process-wide, so only the first test pays for
NER, the mixture and the sweep. Expected numbers are recomputed from the cached sweep's
per-pair δ and h, not read back from the page.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from neswap_core.choose.frontier import choose_release, describe_release
from neswap_core.config import RunConfig
from neswap_core.workspace.store import Workspace
from tests.app_workspace import small_workspace

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    return small_workspace(tmp_path, monkeypatch)


def run_page(page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def stage_for(ws: Workspace):
    from appkit.pipeline import Stage
    from appkit.state import settings

    return Stage(settings(ws), ws)


def cached_sweep(ws: Workspace):
    """The sweep the pages used (a cache hit: the arguments after the key are never read)."""
    from appkit.pipeline import sweep

    return sweep(stage_for(ws).sweep_key, None, None, None, None)


def sentence_of(at: AppTest) -> str:
    for box in [*at.success, *at.warning]:
        text = box.value
        if "Your line picks" in text or "Line not reached" in text:
            return text
    raise AssertionError("no chosen-release sentence on the page")


def pitman_frame(at: AppTest):
    return next(d.value for d in at.dataframe if "α̂" in d.value.columns)


def decision_keys(at: AppTest) -> list[str]:
    return [r.key for r in at.radio if r.key and r.key.startswith("dec::")]


def metric(at: AppTest, label: str) -> float:
    return float(next(m.value for m in at.metric if m.label == label))


# --- rendering -------------------------------------------------------------------------------------
@pytest.mark.parametrize("page", ["5_frontier", "4_swaps", "6_export"])
def test_page_renders_on_the_sample(workspace, page):
    at = run_page(page)
    assert at.title[0].value.startswith(page[0])
    if page == "5_frontier":
        assert at.get("plotly_chart"), "the frontier chart is missing"
        assert re.search(r", \d+ swaps?, r = [\d.]+%: DR [\d.]+, DU [\d.]+", sentence_of(at))
    if page == "4_swaps":
        assert [m.label for m in at.metric][:3] == ["Pairs kept", "DU as generated", "DU after your review"]
        assert decision_keys(at), "no accept/reject control"


# --- frontier: the trade-off line and N --------------------------------------------------------------
def test_offset_slider_moves_the_chosen_release(workspace):
    at = run_page("5_frontier")
    table = cached_sweep(workspace).table(float(stage_for(workspace).settings["population"]))
    slider = at.slider(key="frontier_c")

    slider.set_value(slider.max).run()  # above every release: all acceptable
    best = table.loc[table["du"].idxmax()]  # the highest-utility release is on the frontier
    assert "Your line picks" in sentence_of(at)
    assert describe_release(best) in sentence_of(at)
    assert workspace.get_setting("trade_off_c") == pytest.approx(slider.max)

    low = at.slider(key="frontier_c").min
    at.slider(key="frontier_c").set_value(low).run()  # below every release
    assert low < table["dr"].min()
    assert "Line not reached" in sentence_of(at)
    lowest = choose_release(table, 0.0, -1.0).index
    assert describe_release(table.loc[lowest]) in sentence_of(at)
    assert workspace.get_setting("trade_off_c") == pytest.approx(low)

    # In between: the highest-DU release with DR ≤ c (a = 0 is the paper's constrained choice).
    c = float(np.median(table["dr"]))
    at.slider(key="frontier_c").set_value(round(c, 3)).run()
    ok = table[table["dr"] <= round(c, 3) + 1e-12]
    expected = ok.sort_values(["du", "dr", "swaps"], ascending=[False, True, True]).iloc[0]
    assert describe_release(expected) in sentence_of(at)


def test_slope_turns_the_line_around_the_chart_centre(workspace):
    at = run_page("5_frontier")
    c0 = at.slider(key="frontier_c").value
    slope = at.slider(key="frontier_a").max  # the steepest slope that keeps c >= 0 (issue 13)
    at.slider(key="frontier_a").set_value(slope).run()
    assert not at.exception
    from appkit.views_frontier import slider_bounds

    table = cached_sweep(workspace).table(1e20)
    _, _, pivot = slider_bounds(table, 0.0)
    # The line's height at the pivot DU is kept: c1 + a·pivot = c0 + 0·pivot.
    assert workspace.get_setting("trade_off_a") == slope > 0
    assert workspace.get_setting("trade_off_c") + slope * pivot == pytest.approx(c0, abs=1e-4)
    assert workspace.get_setting("trade_off_c") >= 0
    assert at.slider(key="frontier_c").value == pytest.approx(workspace.get_setting("trade_off_c"))


def test_population_changes_p_hat_as_n_to_the_alpha_minus_one(workspace):
    at = run_page("5_frontier")
    before = pitman_frame(at)
    at.radio(key="frontier_population").set_value("10³⁰").run()
    after = pitman_frame(at)
    assert workspace.get_setting("population") == 1e30
    fitted = before["status"].eq(after["status"]) & before["α̂"].gt(0.05)
    assert fitted.any(), before
    ratio = (after["p̂"] / before["p̂"])[fitted]
    # p̂ ∝ Ŝ₁/N ~ N^(α̂−1): a factor 10^(10(α̂−1)) from N = 10^20 to 10^30.
    np.testing.assert_allclose(ratio, 10.0 ** (10 * (before["α̂"][fitted] - 1)), rtol=1e-3)
    assert not np.allclose(before["p̂"], after["p̂"])

    at.radio(key="frontier_population").set_value("custom").run()  # any N, as log₁₀ N
    assert at.number_input(key="frontier_population_exp").value == pytest.approx(30.0)
    at.number_input(key="frontier_population_exp").set_value(15.0).run()
    assert workspace.get_setting("population") == pytest.approx(1e15)
    assert at.radio(key="frontier_population").value == "custom"


def test_sliders_never_refit_or_reembed(workspace, monkeypatch):
    run_page("5_frontier")  # warm

    def forbidden(*args, **kwargs):
        raise AssertionError("a slider change refitted, re-embedded or re-swept")

    import appkit.pipeline as pipeline
    import neswap_core.generate.context as context
    from neswap_core.models.embedding import Embedder

    for name in ("embed_chunks", "sweep_for_config", "tag_entities"):
        monkeypatch.setattr(pipeline, name, forbidden)
    monkeypatch.setattr(context, "fit_mixture", forbidden)  # imported where it is used
    monkeypatch.setattr(Embedder, "encode", forbidden)
    at = run_page("5_frontier")
    at.slider(key="frontier_c").set_value(at.slider(key="frontier_c").min).run()
    at.slider(key="frontier_a").set_value(5.0).run()
    at.radio(key="frontier_population").set_value("10¹⁰").run()
    assert not at.exception, [e.value for e in at.exception]


def test_use_this_release_pins_it_for_the_other_pages(workspace):
    at = run_page("5_frontier")
    table = cached_sweep(workspace).table(1e20)
    c = float(workspace.get_setting("trade_off_c"))  # the default line (always reached)
    line_pick = choose_release(table, 0.0, c).index
    at.button(key="frontier_use").click().run()
    pinned = workspace.get_setting("chosen_release")
    assert pinned == line_pick
    assert any("in use on the Swaps and Export pages" in c.value for c in at.caption)
    swaps = run_page("4_swaps")
    assert swaps.selectbox(key="swaps_release").value == pinned


# --- swaps: review decisions ---------------------------------------------------------------------------
def test_reject_persists_and_updates_risk_and_utility(workspace):
    at = run_page("4_swaps")
    release_id = at.selectbox(key="swaps_release").value
    first = next(k for k in decision_keys(at) if k.endswith(_first_pair(workspace, release_id)))
    at.radio(key=first).set_value("reject").run()
    at.text_input(key=first.replace("dec::", "note::", 1)).input("wrong entity").run()

    # A fresh session on the same workspace sees the decision and the updated numbers.
    again = run_page("4_swaps")
    assert again.radio(key=first).value == "reject"
    assert again.text_input(key=first.replace("dec::", "note::", 1)).value == "wrong entity"
    sweep = cached_sweep(workspace)
    row = sweep.table(1e20).loc[release_id]
    draw = sweep.draws_for(tuple(row["categories"]))[0]
    t = int(row["swaps"])
    # Closed forms (SPEC §5–§6): DU = 1 + Σδ/|L0| and DR = 1 − hits/s₁·min(p̂, 1) over kept pairs.
    l0 = abs(sweep.ctx.baseline.total)
    prof = sweep.profile(draw.combination, 1e20)
    kept = slice(1, t)
    du_after = 1 + draw.deltas[kept].sum() / l0
    dr_after = 1 - draw.hits[kept].sum() / prof.s1 * min(prof.p_hat, 1.0)
    assert metric(again, "DU after your review") == pytest.approx(du_after, abs=6e-6)
    assert metric(again, "DR after your review") == pytest.approx(dr_after, abs=6e-5)
    assert metric(again, "DU as generated") == pytest.approx(1 + draw.deltas[:t].sum() / l0, abs=6e-6)
    assert next(m.value for m in again.metric if m.label == "Pairs kept") == f"{t - 1} of {t}"
    from appkit.views_release import release_key

    assert workspace.decisions(release_key(stage_for(workspace).sweep_key, release_id))[
        first.rsplit("::", 1)[1]] == ("reject", "wrong entity")


def test_a_decision_follows_its_pair_to_every_release_of_the_combination(workspace):
    """Issue 13: a pair rejected at "@ t" showed "not reviewed" once the line picked "@ t-1"."""
    at = run_page("4_swaps")
    table = cached_sweep(workspace).table(1e20)
    big = table[table["swaps"] >= 2].sort_values("swaps").index[-1]
    combo, t = big.rsplit(" @ ", 1)
    smaller = f"{combo} @ {int(t) - 1}"
    assert smaller in table.index
    at.selectbox(key="swaps_release").set_value(big).run()
    first = next(k for k in decision_keys(at) if k.endswith(_first_pair(workspace, big)))
    last = decision_keys(at)[-1]  # the pair release t adds: not part of release t - 1
    at.radio(key=first).set_value("reject").run()
    at.radio(key=last).set_value("accept").run()

    at.selectbox(key="swaps_release").set_value(smaller).run()
    assert not at.exception
    first_here = next(k for k in decision_keys(at) if k.endswith(_first_pair(workspace, big)))
    assert at.radio(key=first_here).value == "reject"
    assert len(decision_keys(at)) == int(t) - 1

    # Clearing release t - 1's decisions leaves the pair only release t holds.
    at.button(key="swaps_clear").click().run()
    at.selectbox(key="swaps_release").set_value(big).run()
    assert at.radio(key=last).value == "accept"
    assert at.radio(key=first).value == ""


def _first_pair(ws: Workspace, release_id: str) -> str:
    sweep = cached_sweep(ws)
    row = sweep.table(1e20).loc[release_id]
    rec = sweep.draws_for(tuple(row["categories"]))[0].run.records[0]
    return f"{rec.chunk_a}|{rec.chunk_b}"


def test_a_release_picked_on_the_swaps_page_is_exported(workspace):
    from appkit.widgets import md_text

    at = run_page("4_swaps")
    table = cached_sweep(workspace).table(1e20)
    other = next(r for r in table.index if r != at.selectbox(key="swaps_release").value)
    at.selectbox(key="swaps_release").set_value(other).run()
    at.button(key="swaps_use").click().run()
    assert workspace.get_setting("chosen_release") == other
    export = run_page("6_export")
    assert any(md_text(other) in i.value for i in export.info)  # the release line (the verdict above)
    # run.toml pins it, whether or not the line picks it (issue 13 item 6)
    assert any("run.toml pins this release" in i.value for i in export.info)
    assert f'release = "{other}"' in next(c.value for c in export.code if "release =" in c.value)


# --- export ------------------------------------------------------------------------------------------
def test_export_offers_every_download(workspace):
    at = run_page("6_export")
    keys = {b.key for b in at.get("download_button")}
    assert keys == {"dl_released", "dl_key", "dl_config", "dl_report"}
    text = " ".join(i.value for i in [*at.info, *at.warning])
    assert "trade-off line" in text
    page = " ".join(m.value for m in at.markdown)
    assert "`released/`" in page and "`key/`" in page and "Only `released/` may go to an LLM" in page
    assert any("Leak scan: no company name" in m.value for m in at.success)


def test_export_files_apply_the_review(workspace):
    from appkit import choice_view as cv
    from appkit import views_export as ve
    from appkit import views_frontier as vf
    from appkit import views_release as vr
    from appkit.state import save_settings

    run_page("6_export")
    stage = stage_for(workspace)
    sweep = cached_sweep(workspace)
    table = sweep.table(1e20)
    release_id = table.index[table["swaps"].argmax()]  # the longest release: most pairs
    key = vr.release_key(stage.sweep_key, release_id)
    rec0 = sweep.draws_for(tuple(table.loc[release_id, "categories"]))[0].run.records[0]
    workspace.set_decision(key, vr.pair_key(rec0), "reject", "keep this pair")
    save_settings(workspace, chosen_release=release_id)  # pinned, as on the Frontier page
    export = ve.export_for(stage_for(workspace), cv.app_choice(stage_for(workspace), measure=True))
    assert export.config.review.release == release_id
    assert export.config.review.decisions == [{"key": vr.pair_key(rec0), "decision": "reject",
                                        "note": "keep this pair"}]
    bundle = ve.release_bundle_of(export)
    archive = zipfile.ZipFile(io.BytesIO(bundle.released_zip()))
    assert "released/manifest.csv" in archive.namelist()
    assert not any(doc_id in " ".join(archive.namelist()) for doc_id in bundle.pseudonyms)
    keys = zipfile.ZipFile(io.BytesIO(bundle.key_zip())).namelist()
    assert {"key/pseudonyms.csv", "key/tab_annotations.json", "key/leaks.csv"} <= set(keys)
    release = export.result.release
    released = {c.chunk_id: c for c in release.chunks}
    draw = sweep.draws_for(tuple(table.loc[release_id, "categories"]))[0]
    base = {c.chunk_id: c for c in draw.run.base}
    assert released[rec0.chunk_a].text == base[rec0.chunk_a].text  # rejected: not swapped
    records = draw.run.records[: int(table.loc[release_id, "swaps"])]
    for rec, (new_a, _) in zip(records[1:], draw.run.swapped[1:], strict=False):
        assert released[rec.chunk_a].text == new_a.text  # accepted: swapped
    doc = archive.read(f"released/docs/{bundle.pseudonyms[rec0.doc_a]}.txt").decode()
    assert base[rec0.chunk_a].text in doc

    assert len(release.log) == len(records) - 1 and rec0.chunk_a not in set(release.log["chunk_a"])
    fig = vf.frontier_figure(table, release_id, 0.0, 0.97)
    html = ve.report_with_chart(export, stage, fig)
    assert "<script src=\"http" not in html and "plotly" in html.lower()
    assert "keep this pair" in html and release_id in html
    assert "in-corpus attacker" in html and "chunk accuracy" in html
    assert "the paper&#x27;s Table 2" in html or "the paper's Table 2" in html
    assert "Divergence audit per document" in html and "corpus ε" in html
    files = ve.key_files_of(export, stage, fig)
    assert files["report.html"].decode() == html  # the download and key/ hold the same report

    from appkit.state import run_config

    toml = run_config(stage.settings).to_toml()
    path = Path(workspace.folder) / "run.toml"
    path.write_text(toml)
    loaded = RunConfig.load(path)
    assert (loaded.sweep.max_swaps, loaded.mixture.n_components, loaded.mixture.n_init) == (10, 5, 1)
    assert loaded.roles == stage.settings["roles"]


# --- hyperparameter grid -----------------------------------------------------------------------------
def test_grid_runs_once_then_follows_the_line_without_refitting(workspace, monkeypatch):
    from appkit import views_frontier as vf
    from appkit.widgets import fmt_number
    from neswap_core.choose import grid as core_grid

    at = run_page("5_frontier")
    at.button(key="grid_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    stage = stage_for(workspace)
    grid = vf.stored_grid(stage, [1e10, 1e20, 1e30])
    assert grid is not None and len(grid["tables"]) == 24  # 2 families × 2 K × 2 ε × 3 N
    assert any("settings." in c.value for c in at.caption)

    # A new session reads the grid from the workspace: no button, no fit, and the "your line
    # picks" view follows the sliders (c above every release: the highest-DU release wins).
    # (the page imports the grid's module when it fits: patched there)
    monkeypatch.setattr(core_grid, "hyperparameter_grid", lambda *a, **k: pytest.fail("grid refitted"))
    again = run_page("5_frontier")
    assert not [b for b in again.button if b.key == "grid_run"]
    again.slider(key="frontier_c").set_value(again.slider(key="frontier_c").max).run()
    pivots = [d.value for d in again.dataframe if list(d.value.columns) == ["10¹⁰", "10²⁰", "10³⁰"]]
    assert len(pivots) == 2  # most frontier points; the line's pick
    picks = pivots[1]
    for (family, k, eps, n), table in grid["tables"].items():
        best = table.loc[table["du"].idxmax(), "combination"]
        cell = picks.loc[f"{family.upper()}, K = {k}, ε = {fmt_number(eps, 1)}", vf.population_label(n)]
        assert cell.replace(" ⚠", "") == best


# --- pure view helpers ----------------------------------------------------------------------------------
def test_excerpt_keeps_spans_aligned_with_the_text():
    from appkit.views_release import excerpt
    from neswap_core.corpus import Chunk, EntitySpan

    words = [f"w{i}" for i in range(200)]
    text = " ".join(words)
    spans = []
    for i in (3, 80, 83, 190):
        start = len(" ".join(words[:i])) + (1 if i else 0)
        spans.append(EntitySpan(start, start + len(words[i]), "ORG", "Organization", words[i]))
    chunk = Chunk("d#0000", "d", 0, text, "d", tuple(spans))
    out, kept, marks = excerpt(chunk, [(spans[1].start, spans[1].end), (spans[3].start, spans[3].end)],
                               context=20)
    assert len(out) < len(text) and out.startswith("… ") and " … " in out
    assert {s.text for s in kept} == {"w80", "w83", "w190"}  # w3 is outside every window
    for s in kept:
        assert out[s.start:s.end] == s.text
    assert [out[a:b] for a, b in marks] == ["w80", "w190"]
