"""View helpers of the Frontier page: the chart (the paper's Figure 3), the trade-off
sliders' range, the Pitman table's headers and the hyperparameter grid (SPEC §5, §7, §8).

Nothing here refits or re-embeds: a new line (a, c) or N only re-runs ``choose_release`` on a
cached release table. Only ``compute_grid`` fits mixtures, behind a button, and its result is
cached and kept in the workspace.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from neswap_core.choose.frontier import (
    choose_release,
    describe_release,
    frontier_mask,
    frontier_winner,
)
from neswap_core.config import PAPER_POPULATIONS

from .widgets import fmt_number

#: A colour-blind-safe qualitative palette (Tableau 10) for the category combinations J.
COMBINATION_PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)
#: The paper's population sizes N, as labels for the selector.
_SUPERSCRIPT = str.maketrans("0123456789.-", "⁰¹²³⁴⁵⁶⁷⁸⁹·⁻")


def population_label(population: float) -> str:
    """10²⁰ for 1e20 (the exponent may be fractional for a custom N)."""
    return "10" + f"{np.log10(population):g}".translate(_SUPERSCRIPT)


POPULATION_LABELS: dict[str, float] = {population_label(n): n for n in PAPER_POPULATIONS}

#: Release-table columns shown to the analyst, with readable headers.
RELEASE_COLUMNS = {
    "release_id": "release", "swaps": "swaps t", "swap_rate": "swap rate r", "du": "DU",
    "du_sd": "DU s.d.", "dr": "DR", "dr_sd": "DR s.d.", "draws": "draws", "p_hat": "p̂",
    "chunk_accuracy": "chunk accuracy", "document_accuracy": "document accuracy",
}


#: Significant digits of the release-table columns (``fmt_number``).
RELEASE_DIGITS = {"swap rate r": 3, "DU": 7, "DU s.d.": 3, "DR": 6, "DR s.d.": 3, "p̂": 4,
                  "chunk accuracy": 3, "document accuracy": 3}


def release_columns(table: pd.DataFrame) -> pd.DataFrame:
    out = table[[c for c in RELEASE_COLUMNS if c in table]].rename(columns=RELEASE_COLUMNS)
    return out.sort_values(["DU"], ascending=False)


def release_view(table: pd.DataFrame):
    """``release_columns`` in the app's number format (a Styler; the cells stay numbers)."""
    from .views_explain import formatted

    return formatted(release_columns(table), RELEASE_DIGITS)


#: Pitman-table columns shown (in this order) with the paper's symbols, significant digits
#: (``fmt_number``; 0 = not a number) and a tooltip each.
PITMAN_COLUMNS: dict[str, tuple[str, int, str]] = {
    "J": ("combination J", 0, "The categories whose entity values form the key of a chunk."),
    "n_J": ("n_J", 6, "Chunks with at least one entity in J (the chunks the model is fitted on)."),
    "k": ("cells k", 6, "Distinct entity-value combinations among those chunks."),
    "s1": ("s₁", 6, "Sample uniques: chunks alone in their cell."),
    "s1/n_J": ("s₁/n_J", 3, "Share of the chunks that are sample uniques."),
    "theta": ("θ̂", 4, "Ewens–Pitman strength: larger = more distinct values."),
    "theta_se": ("SE(θ̂)", 3, "Standard error of θ̂ (observed information)."),
    "alpha": ("α̂", 4, "Ewens–Pitman discount in [0, 1): how heavy the tail of rare values is."),
    "alpha_se": ("SE(α̂)", 3, "Standard error of α̂."),
    "S1_hat": ("Ŝ₁", 4, "Expected population uniques in a population of N chunks."),
    "p_hat": ("p̂", 4, "Share of sample uniques that are population uniques: (Ŝ₁/s₁)(n_J/N). "
              "DR uses min(p̂, 1)."),
    "status": ("status", 0, "'ok', or why p̂ is special (e.g. Ewens α̂ = 0, all unique)."),
}


def pitman_view(pitman: pd.DataFrame) -> tuple[object, dict]:
    """The Pitman table with the paper's symbols as headers and the app's number format (a
    Styler: the cells stay numbers), and its column config (tooltips)."""
    from .views_explain import formatted

    cols = [c for c in PITMAN_COLUMNS if c in pitman]
    frame = pitman[cols].rename(columns={c: PITMAN_COLUMNS[c][0] for c in cols})
    if "Ŝ₁" in frame:  # beyond 2^53 the browser shows the raw integer, whatever the Styler says
        frame["Ŝ₁"] = frame["Ŝ₁"].map(lambda v: fmt_number(v, PITMAN_COLUMNS["S1_hat"][1]))
    digits = {PITMAN_COLUMNS[c][0]: PITMAN_COLUMNS[c][1] for c in cols if PITMAN_COLUMNS[c][1]}
    config = {PITMAN_COLUMNS[c][0]: st.column_config.Column(PITMAN_COLUMNS[c][0],
                                                            help=PITMAN_COLUMNS[c][2])
              for c in cols}
    return formatted(frame, digits), config


# --- the frontier chart ---------------------------------------------------------------------------
def combination_colors(combinations: Sequence[str]) -> dict[str, str]:
    names = list(dict.fromkeys(combinations))
    return {n: COMBINATION_PALETTE[i % len(COMBINATION_PALETTE)] for i, n in enumerate(names)}


#: Risk axes of the frontier chart (SPEC §7, §8): column → (axis title, short name). The
#: measured accuracies are there when the release table carries them (``measured_table``).
RISK_AXES: dict[str, tuple[str, str]] = {
    "dr": ("risk DR  (1 = no protection; lower is safer ↓)", "DR"),
    "chunk_accuracy": ("measured chunk accuracy: share of passages whose company the attacker "
                   "names (lower is safer ↓)", "chunk accuracy"),
    "document_accuracy": ("measured document accuracy: share of documents whose company the "
                          "attacker names (lower is safer ↓)", "document accuracy"),
}


def risk_axes(table: pd.DataFrame) -> list[str]:
    """The risk columns of ``table`` the chart can show (DR always first)."""
    return [k for k in RISK_AXES if k in table and table[k].notna().any()]


def spread_digits(values, extra: int = 2, low: int = 3, high: int = 9) -> int:
    """Decimals that tell neighbouring releases apart: two past the first decimal the values'
    spread reaches (DR of real releases spans [0.997, 1.000], releases differ by ~10⁻⁵)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    span = float(np.ptp(values)) if values.size > 1 else 0.0
    if span <= 0:
        return low
    return int(min(max(np.ceil(-np.log10(span) - 1e-9) + extra, low), high))


def hover_template(table: pd.DataFrame, risk: str = "dr") -> str:
    """The points' hover: release, swaps, share changed, DU and DR (± s.d.) with the digits that
    tell releases apart (``spread_digits``), p̂, and the measured risk when it is the axis."""
    du, dr = spread_digits(table["du"]), spread_digits(table["dr"])
    text = ("<b>%{customdata[0]}</b><br>%{customdata[1]} swaps, r = %{customdata[2]:.1f}% of "
            f"chunks<br>DU %{{x:.{du}f}} ± %{{customdata[3]:.{du}f}}<br>"
            f"DR %{{customdata[6]:.{dr}f}} ± %{{customdata[4]:.{dr}f}}<br>"
            "p̂ = %{customdata[5]}")
    if risk != "dr":
        text += "<br>%{customdata[7]}: %{y:.1%}"
    return text + "<extra></extra>"


def default_risk_axis(axes: Sequence[str]) -> str:
    """The chart's risk axis until the analyst picks one: what an attacker measurably gets right
    (documents first: the unit an LLM reads), DR only when nothing is measured (issue 20)."""
    for axis in ("document_accuracy", "chunk_accuracy"):
        if axis in axes:
            return axis
    return axes[0]


def _custom(t: pd.DataFrame, risk: str = "dr") -> np.ndarray:
    name = RISK_AXES.get(risk, (risk, risk))[1]
    p_hat = np.array([fmt_number(p, 3) for p in t["p_hat"]], dtype=object)
    return np.column_stack([t["release_id"], t["swaps"], 100 * t["swap_rate"], t["du_sd"], t["dr_sd"],
                            p_hat, t["dr"], np.full(len(t), name, dtype=object)])


def _ranges(table: pd.DataFrame, a: float, c: float, risk: str = "dr") -> tuple[list[float], list[float], str]:
    """Axis ranges around the releases, stretched to show the line when it is near; else a note."""
    du, dr = table["du"].to_numpy(float), table[risk].to_numpy(float)
    if risk != "dr":  # the trade-off line is drawn in DR units only; shares read in %
        span_x, span_y = max(du.max() - du.min(), 1e-4), max(dr.max() - dr.min(), 0.05)
        return ([du.min() - 0.08 * span_x, du.max() + 0.08 * span_x],
                [dr.min() - 0.08 * span_y, dr.max() + 0.08 * span_y], "")
    span_x, span_y = max(du.max() - du.min(), 1e-4), max(dr.max() - dr.min(), 1e-3)
    xr = [du.min() - 0.08 * span_x, du.max() + 0.08 * span_x]
    lo, hi = dr.min(), dr.max()
    line = (c + a * xr[0], c + a * xr[1])
    note = ""
    if max(line) < lo:
        if lo - max(line) <= span_y:
            lo = max(line)
        else:
            note = f"your line is below the chart (DR = {max(line):.3f} at most): no release is under it"
    elif min(line) > hi:
        if min(line) - hi <= span_y:
            hi = min(line)
        else:
            note = f"your line is above the chart (DR ≥ {min(line):.3f}): every release is under it"
    pad = 0.08 * max(hi - lo, 1e-3)
    return xr, [lo - pad, hi + pad], note


def _tick_format(values: Sequence[float]) -> str:
    """Enough decimals that neighbouring ticks differ (DR and DU move in the 3rd-5th decimal)."""
    span = max(float(np.ptp(values)), 1e-9)
    return f".{int(min(max(np.ceil(-np.log10(span)) + 1, 2), 6))}f"


def frontier_figure(table: pd.DataFrame, chosen_id: str | None, a: float, c: float,
                    line_pick: str | None = None, risk: str = "dr") -> go.Figure:
    """The paper's Figure 3: releases (DU on x, risk on y) by combination, frontier, line, choice.

    ``risk`` is a column of ``RISK_AXES``; the trade-off line (in DR units) is drawn with DR only.
    """
    fig = go.Figure()
    hover = hover_template(table, risk)
    xr, yr, note = _ranges(table, a, c, risk)
    if risk == "dr":
        xs = np.linspace(xr[0], xr[1], 80)
        ys = np.clip(c + a * xs, yr[0] - 1.0, yr[1] + 1.0)
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", fill="tozeroy", fillcolor="rgba(89,161,79,0.10)",
            line={"color": "#c0392b", "dash": "dash", "width": 2},
            name=(f"your line DR = {fmt_number(c, 6)} + {fmt_number(a)}·DU<br>(releases on or "
                  "below it are acceptable)"),
            hoverinfo="skip"))
    colors = combination_colors(table["combination"])
    for name, group in table.groupby("combination", sort=False):
        fig.add_trace(go.Scatter(
            x=group["du"], y=group[risk], mode="markers", name=name,
            customdata=_custom(group, risk), hovertemplate=hover,
            marker={"color": colors[name], "size": 7, "opacity": 0.75}))
    front = table[frontier_mask(table["du"].to_numpy(float), table[risk].to_numpy(float))]
    front = front.sort_values(["du", risk])
    fig.add_trace(go.Scatter(
        x=front["du"], y=front[risk], mode="lines+markers", name="frontier (not dominated)",
        customdata=_custom(front, risk), hovertemplate=hover,
        line={"color": "#1b1f24", "width": 1.5},
        marker={"size": 11, "color": [colors[n] for n in front["combination"]],
                "line": {"color": "#1b1f24", "width": 1.5}}))
    marks = [(chosen_id, "chosen release", "star", 20, "#ffd700")]
    if line_pick is not None and line_pick != chosen_id:
        marks.append((line_pick, "the line's pick", "diamond-open", 18, "#c0392b"))
    for rid, label, symbol, size, color in marks:
        if rid is None or rid not in table.index:
            continue
        row = table.loc[[rid]]
        fig.add_trace(go.Scatter(
            x=row["du"], y=row[risk], mode="markers", name=label, customdata=_custom(row, risk),
            hovertemplate=hover, marker={"symbol": symbol, "size": size, "color": color,
                                         "line": {"color": "#1b1f24", "width": 1.5}}))
    if note:
        below = note.startswith("your line is below")
        fig.add_annotation(text=("▼ " if below else "▲ ") + note, xref="paper", yref="paper",
                           x=0.5, y=0.01 if below else 0.99, showarrow=False,
                           font={"color": "#c0392b", "size": 13}, bgcolor="rgba(255,255,255,0.85)")
    fig.update_layout(
        height=520, margin={"l": 10, "r": 10, "t": 30, "b": 10}, template="plotly_white",
        legend={"orientation": "v", "x": 1.01, "y": 1, "font": {"size": 12}},
        xaxis={"title": "utility DU  (1 = cluster structure kept; higher is better →)",
               "range": xr, "tickformat": _tick_format(xr)},
        yaxis={"title": RISK_AXES.get(risk, (risk, risk))[0], "range": yr,
               "tickformat": _tick_format(yr) if risk == "dr" else ".0%"},
    )
    return fig


def choice_sentence(table: pd.DataFrame, release_id: str | None) -> str:
    """``describe_release`` of a release id, or "" when there is none."""
    return "" if release_id is None or release_id not in table.index else describe_release(table.loc[release_id])


def offset_step(table: pd.DataFrame) -> float:
    """The offset slider's step: a power of ten giving ~100 or more positions over the releases'
    DR spread (0.001 could not tell apart releases that differ by 10⁻⁵)."""
    dr = table["dr"].to_numpy(float)
    span = float(np.ptp(dr)) if len(dr) > 1 else 0.0
    return float(10.0 ** np.floor(np.log10(span / 100) + 1e-9)) if span > 0 else 0.001


def slope_range(table: pd.DataFrame) -> tuple[float, float]:
    """(largest useful slope, step) of the line: a few times the releases' DR spread over their DU
    spread (a slope that turns the line across every release), in ~100 steps."""
    du, dr = table["du"].to_numpy(float), table["dr"].to_numpy(float)
    span_du = float(np.ptp(du)) if len(du) > 1 else 0.0
    span_dr = float(np.ptp(dr)) if len(dr) > 1 else 0.0
    if span_du <= 0 or span_dr <= 0:
        return 10.0, 0.5
    top = 4 * span_dr / span_du
    step = float(10.0 ** np.floor(np.log10(top / 100) + 1e-9))
    return float(np.ceil(top / step) * step), step


def slider_bounds(table: pd.DataFrame, a: float) -> tuple[float, float, float]:
    """(low, high, pivot DU) of the offset c: the line's height at the pivot covers the DR range
    with a quarter of it to spare, on the ``offset_step`` grid; DR never exceeds 1, so neither
    does the line's height at the pivot."""
    du, dr = table["du"].to_numpy(float), table["dr"].to_numpy(float)
    step = offset_step(table)
    pivot = float((du.min() + du.max()) / 2)
    pad = max(0.25 * (dr.max() - dr.min()), 10 * step)
    low = np.floor((dr.min() - pad - a * pivot) / step) * step
    high = np.ceil((min(dr.max() + pad, 1.0) - a * pivot) / step) * step
    digits = step_digits(step)
    return round(float(low), digits), round(float(high), digits), pivot


def step_digits(step: float) -> int:
    """Decimals of a slider on a grid of ``step`` (at least 3)."""
    return max(3, int(np.ceil(-np.log10(step)))) if step > 0 else 3


# --- the hyperparameter grid ----------------------------------------------------------------------
def grid_tables(rows: pd.DataFrame, sweeps: dict, populations: Sequence[float]) -> dict:
    """What the grid view needs, small enough to keep in the workspace: fit facts and tables."""
    fits = rows.drop_duplicates(["family", "K", "min_weight"])[
        ["family", "K", "min_weight", "components_kept", "converged", "fit_warnings"]]
    tables = {(s.family, s.n_components, s.min_weight, float(n)): sweep.table(n)
              for s, sweep in sweeps.items() for n in populations}
    return {"fits": fits.reset_index(drop=True), "tables": tables}


def grid_summary(grid: dict, a: float, c: float) -> pd.DataFrame:
    """One row per (N, f, K, ε): convergence, the frontier's winning J, and the J your line picks."""
    fits = grid["fits"].set_index(["family", "K", "min_weight"])
    rows = []
    for (family, k, eps, n), table in grid["tables"].items():
        winner, counts = frontier_winner(table)
        choice = choose_release(table, a, c)
        chosen = "" if choice.index is None else table.loc[choice.index, "combination"]
        fit = fits.loc[(family, k, eps)]
        rows.append({"N": population_label(n), "population": n, "family": family, "K": k, "ε": eps,
                     "converged": bool(fit["converged"]), "frontier winner": winner,
                     "frontier points": json.dumps(counts), "your line picks": chosen,
                     "line reached": choice.line_reached})
    return pd.DataFrame(rows)


def grid_verdict(summary: pd.DataFrame) -> str:
    """E.g. "Organization + Product has most frontier releases in 20 of 24 settings"."""
    counts = summary["frontier winner"].value_counts()
    if counts.empty:
        return "No setting had a release on the frontier."
    return (f"{counts.index[0]} has most frontier releases in {counts.iloc[0]} of "
            f"{len(summary)} settings.")


def winner_pivot(summary: pd.DataFrame, column: str) -> pd.DataFrame:
    """Settings (family, K, ε) × N, each cell the winning combination; ⚠ marks non-converged fits."""
    s = summary.assign(cell=np.where(summary["converged"], summary[column], summary[column] + " ⚠"))
    s["setting"] = s["family"].str.upper() + ", K = " + s["K"].astype(str) + ", ε = " + s["ε"].map(lambda e: fmt_number(e, 1))
    order = s.drop_duplicates("N").sort_values("population")["N"].tolist()
    return s.pivot(index="setting", columns="N", values="cell")[order]


def style_winners(pivot: pd.DataFrame, colors: dict[str, str]):
    """The pivot with each cell coloured like its combination on the frontier chart."""
    def paint(value: str) -> str:
        color = colors.get(str(value).replace(" ⚠", ""), "#dddddd")
        return f"background-color: {color}44"
    return pivot.style.map(paint)

def grid_key(stage, populations: Sequence[float]) -> str:
    """Cache and workspace key of the grid: the pre-swap data, seeds and the sweep settings."""
    from .pipeline import digest

    s = stage.settings
    return digest([stage.roles_key, sorted(populations), s["mixture_seed"], s["n_init"],
                   s["combination_size"], s["max_swaps"], s["draws"], s["require"], s["seed"]])


@st.cache_resource(show_spinner=False, max_entries=4)
def _grid_run(key: str, populations: tuple[float, ...], _chunks, _x, _config, _progress=None) -> dict:
    # here, not at the top: the grid fits mixtures (scikit-learn estimators, 1.5 s to import), which
    # a page drawing a kept grid never does (issue 21)
    from neswap_core.choose.grid import hyperparameter_grid

    from .pipeline import embedder

    rows, sweeps = hyperparameter_grid(
        _chunks, _x, embedder(_config.prepare.embedding_backend).encode, _config.swap_categories,
        populations=populations,
        mixture_seed=_config.mixture.mixture_seed, n_init=_config.mixture.n_init, progress=_progress,
        combination_size=_config.sweep.combination_size, max_swaps=_config.sweep.max_swaps,
        draws=_config.sweep.draws, require=_config.sweep.require,
        suppress_leftovers=_config.sweep.suppress_leftovers, seed=_config.sweep.seed,
        population=_config.sweep.population)
    return grid_tables(rows, sweeps, populations)


def stored_grid(stage, populations: Sequence[float]) -> dict | None:
    """The grid computed earlier for these inputs (workspace), or None."""
    payload = stage.workspace.get_artifact("grid", grid_key(stage, populations))
    return None if payload is None else pickle.loads(payload)


def compute_grid(stage, populations: Sequence[float], progress: Callable | None = None) -> dict:
    """Fit the 8 mixtures (f × K × ε), sweep each, and keep the result in the workspace."""
    key = grid_key(stage, populations)
    chunks, x = stage.pre_swap()
    grid = _grid_run(key, tuple(sorted(populations)), chunks, x, stage.config, progress)
    stage.workspace.put_artifact("grid", key, pickle.dumps(grid))
    return grid
