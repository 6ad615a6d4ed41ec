"""Sentences for the numbers of the Frontier page (issue 13: "sentences, not jargon"), a chart
click turned into a release, and tables shown with the app's one number format.

What DR and DU mean for *this* corpus, why DU can exceed 1, what the population size N changes,
and which release the trade-off line picks and why — each with the corpus's own numbers
(SPEC §5–§7). Numbers go through ``widgets.fmt_number``; corpus strings through ``md_text``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import numpy as np
import pandas as pd

from neswap_core.choose.frontier import TradeOffChoice, frontier_mask, is_acceptable

from .widgets import fmt_number, md_text

#: Significant digits per kind of number: risk and utility move in the 4th-6th decimal.
DIGITS = {"dr": 6, "du": 7, "p_hat": 3, "share": 3}


def _population(population: float) -> str:
    """10²⁰ for 1e20 (as on the N selector); plain digits below a million."""
    from .views_frontier import population_label

    return fmt_number(population) if population < 1e6 else population_label(population)


def pitman_row(pitman: pd.DataFrame, categories) -> pd.Series | None:
    """The Pitman-table row of a release's combination J (``J`` is "A, B")."""
    name = ", ".join(categories)
    rows = pitman[pitman["J"] == name]
    return None if rows.empty else rows.iloc[0]


def swapped_uniques(row: pd.Series, fit: pd.Series) -> float:
    """Sample uniques a release swapped, from DR = 1 − h/s₁ · min(p̂, 1) (a mean over draws)."""
    scale = min(float(fit["p_hat"]), 1.0)
    if scale <= 0 or float(fit["s1"]) <= 0:
        return 0.0
    return float((1.0 - float(row["dr"])) * float(fit["s1"]) / scale)


def dr_sentence(table: pd.DataFrame, row: pd.Series, fit: pd.Series | None, population: float) -> str:
    """What DR means for this corpus, with the release's own counts."""
    low, high = float(table["dr"].min()), float(table["dr"].max())
    spread = (f"The {len(table)} candidate releases have DR from {fmt_number(low, DIGITS['dr'])} "
              f"to {fmt_number(high, DIGITS['dr'])}.")
    if fit is None or str(fit.get("status", "ok")) != "ok" or float(fit["s1"]) <= 0:
        return (f"**Risk DR** is the share of the modelled re-identification risk left: 1 means no "
                f"protection. {spread}")
    cats = " or ".join(row["categories"])
    h = round(swapped_uniques(row, fit), 1)  # a whole number with one draw
    return (
        f"**Risk DR** is the share of the modelled re-identification risk left: 1 means no "
        f"protection. {spread} For {md_text(row['combination'])}: {int(fit['s1'])} of the "
        f"{int(fit['n_J'])} passages with at least one {md_text(cats)} entity are *sample "
        f"uniques* (no other passage has the same names). The model estimates that a share p̂ = "
        f"{fmt_number(fit['p_hat'], DIGITS['p_hat'])} of them is also unique in a population of "
        f"N = {_population(population)} passages. This release swaps {fmt_number(h, 3)} of "
        f"them, so DR = 1 − {fmt_number(h, 3)}/{int(fit['s1'])} × "
        f"{fmt_number(min(float(fit['p_hat']), 1.0), DIGITS['p_hat'])} = "
        f"{fmt_number(row['dr'], DIGITS['dr'])}. DR stays close to 1 because it counts only "
        "passages that are unique in the whole population, and the model finds those rare."
    )


def du_sentence(table: pd.DataFrame, row: pd.Series) -> str:
    """What DU means, its range here, and why it can exceed 1."""
    du = table["du"].to_numpy(float)
    above = int((du > 1).sum())
    text = (
        f"**Utility DU** compares how well the passages fit their clusters after the swaps with "
        f"how well they fit before (the mixture's log-likelihood): 1 means the cluster structure "
        f"is kept exactly, lower means meaning was lost. Here DU runs from "
        f"{fmt_number(du.min(), DIGITS['du'])} to {fmt_number(du.max(), DIGITS['du'])}; this "
        f"release has {fmt_number(row['du'], DIGITS['du'])}."
    )
    if above:
        text += (
            f" {above} of the {len(du)} releases have DU above 1: the two passages of a pair are "
            "in the same cluster, so exchanging their names can move both a little closer to the "
            "cluster's centre, and the released text then fits its clusters slightly better than "
            "the original. That is not an error; it means those swaps cost no measurable meaning."
        )
    return text


def population_sentence(population: float, fit: pd.Series | None,
                        p_by_n: Mapping[float, float]) -> str:
    """What N changes, with p̂ of the release's combination at the paper's N."""
    text = (
        f"**Population size N = {_population(population)}**: the number of passages this corpus "
        "is imagined to be a sample of. The larger N, the less likely a passage that is unique "
        "here is unique in the population (p̂ falls like N^(α̂−1)), so each swap removes less "
        "risk and every DR moves toward 1; a smaller N makes the same swaps count for more."
    )
    if fit is not None and p_by_n:
        values = ", ".join(f"{fmt_number(p, DIGITS['p_hat'])} at N = {_population(n)}"
                           for n, p in sorted(p_by_n.items()))
        text += f" For {md_text(str(fit['J']).replace(', ', ' + '))} (α̂ = " \
                f"{fmt_number(fit['alpha'], 3)}): p̂ = {values}."
    return text


def line_sentence(table: pd.DataFrame, pick: TradeOffChoice, describe: str) -> str:
    """Which release the line picks, and why (SPEC §7)."""
    a, c = pick.a, pick.c
    du, dr = table["du"].to_numpy(float), table["dr"].to_numpy(float)
    front = frontier_mask(du, dr)
    ok = is_acceptable(du, dr, a, c)
    line = f"DR = {fmt_number(c, DIGITS['dr'])}" + (f" + {fmt_number(a)}·DU" if a else "")
    if pick.index is None:
        return f"**Your line** {line}: there is no release to pick."
    if not pick.line_reached:
        return (f"**Your line** {line} lies below every release on the frontier, so none is "
                f"acceptable and the lowest-risk release is used: {describe}. Raise c to accept "
                "more risk.")
    return (
        f"**Your line** {line} accepts {int((ok & front).sum())} of the {int(front.sum())} "
        f"frontier releases ({int(ok.sum())} of all {len(table)} candidates lie on or below it). "
        f"Among them it picks the one that keeps most meaning, the highest DU: {describe}."
    )


def clicked_release(event, table: pd.DataFrame, risk: str = "dr") -> str | None:
    """The release id of the point clicked on the frontier chart (``st.plotly_chart`` selection),
    or None. Uses the point's customdata (release id first) when the browser sends it, else
    the release nearest to the clicked (x, y)."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    if not points:
        return None
    point = points[-1]
    custom = point.get("customdata")
    if isinstance(custom, list | tuple) and custom and custom[0] in table.index:
        return str(custom[0])
    if "x" not in point or "y" not in point or risk not in table:
        return None
    du, y = table["du"].to_numpy(float), table[risk].to_numpy(float)
    scale_x = max(float(np.ptp(du)), 1e-12)
    scale_y = max(float(np.ptp(y)), 1e-12)
    d = ((du - float(point["x"])) / scale_x) ** 2 + ((y - float(point["y"])) / scale_y) ** 2
    return str(table.index[int(np.argmin(d))])


def formatted(frame: pd.DataFrame, digits: Mapping[str, int] | None = None, default: int = 4):
    """``frame`` as a Styler whose numbers read with ``fmt_number`` (the values stay numbers,
    so sorting works); ``digits`` gives significant digits per column."""
    digits = dict(digits or {})
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c])]
    return frame.style.format({c: partial(fmt_number, digits=digits.get(c, default))
                               for c in numeric})
