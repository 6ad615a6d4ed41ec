"""Risk–utility frontier and the trade-off choice of a release (SPEC §7, paper §2.3).

R2 dominates R1 iff DR(R2) ≤ DR(R1) and DU(R2) ≥ DU(R1), one of them strictly. The frontier
is the non-dominated subset. The analyst's line DR = c + a·DU (a ≥ 0) marks releases with
DR ≤ c + a·DU as acceptable; the chosen release is the acceptable frontier release with the
highest DU (ties: lower DR, then fewer swaps). When none is acceptable the lowest-risk release
is chosen and flagged "line not reached".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import ConfigError

#: Slack for float comparisons of DR against the line: values are proportions in [0, 1].
LINE_TOLERANCE = 1e-12


def frontier_mask(utility: np.ndarray, risk: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated points (utility DU higher is better, risk DR lower).

    Identical points do not dominate each other, so both stay on the frontier. O(n log n).
    """
    du = np.asarray(utility, dtype=float)
    dr = np.asarray(risk, dtype=float)
    if du.shape != dr.shape or du.ndim != 1:
        raise ValueError("utility and risk must be 1-D arrays of the same length")
    n = du.size
    mask = np.zeros(n, dtype=bool)
    if n == 0:
        return mask
    valid = np.isfinite(du) & np.isfinite(dr)
    order = np.lexsort((dr, -du))  # by DU descending, then DR ascending
    order = order[valid[order]]
    best_higher = np.inf  # lowest DR among points with strictly higher DU
    i = 0
    while i < order.size:
        j = i
        while j + 1 < order.size and du[order[j + 1]] == du[order[i]]:
            j += 1
        group = order[i : j + 1]
        group_min = dr[group[0]]  # sorted by DR within equal DU
        for idx in group:
            if dr[idx] == group_min and dr[idx] < best_higher:
                mask[idx] = True
        best_higher = min(best_higher, group_min)
        i = j + 1
    return mask


@dataclass(frozen=True)
class TradeOffChoice:
    """The release picked for a trade-off line, and why."""

    index: object | None  # row label in the releases table; None when there is no candidate
    line_reached: bool  # False: no frontier release is under the line, lowest risk chosen
    a: float
    c: float
    message: str


def frontier_winner(table: pd.DataFrame) -> tuple[str, dict[str, int]]:
    """The combination with most releases on the frontier, and the count per combination."""
    if len(table) == 0:
        return "", {}
    on = table[frontier_mask(table["du"].to_numpy(), table["dr"].to_numpy())]
    counts = on["combination"].value_counts().to_dict()
    return (max(counts, key=counts.get) if counts else ""), counts


def is_acceptable(utility, risk, a: float, c: float) -> np.ndarray:
    """DR ≤ c + a·DU, elementwise (SPEC §7)."""
    return np.asarray(risk, float) <= c + a * np.asarray(utility, float) + LINE_TOLERANCE


def choose_release(
    table: pd.DataFrame,
    a: float,
    c: float,
    utility: str = "du",
    risk: str = "dr",
    more_swaps_possible: bool = True,
) -> TradeOffChoice:
    """Pick the highest-utility acceptable frontier release of ``table`` for the line (a, c).

    Rows with ``all_draws`` False (averaged over only some of the M draws, releases.Sweep.table)
    are never chosen. ``more_swaps_possible``: False when the valid pairs were used up, so the
    advice does not suggest allowing more swaps.
    """
    if a < 0:
        raise ConfigError("The trade-off slope a must be >= 0: more utility may cost more risk.")
    if table is not None and len(table) and "all_draws" in table:
        complete = table[table["all_draws"].astype(bool)]
        if len(complete) == 0:
            return TradeOffChoice(None, False, a, c, (
                "No candidate release is reached by every Monte Carlo draw (some draws found no "
                "valid pair at all), so none can be reported consistently; use fewer draws or "
                "check the swap settings."))
        table = complete
    if table is None or len(table) == 0:
        return TradeOffChoice(None, False, a, c, "There are no candidate releases to choose from.")
    du = table[utility].to_numpy(float)
    dr = table[risk].to_numpy(float)
    swaps = table["swaps"].to_numpy(float) if "swaps" in table else np.zeros(len(table))
    front = frontier_mask(du, dr)
    if not front.any():
        return TradeOffChoice(None, False, a, c, "No release has finite risk and utility.")
    ok = front & is_acceptable(du, dr, a, c)
    if ok.any():
        cand = np.flatnonzero(ok)
        best = cand[np.lexsort((swaps[cand], dr[cand], -du[cand]))[0]]
        return TradeOffChoice(table.index[best], True, a, c, "")
    cand = np.flatnonzero(front)
    best = cand[np.lexsort((swaps[cand], -du[cand], dr[cand]))[0]]
    msg = (
        f"No release reaches the line DR = {c:g} + {a:g}·DU: the lowest-risk release is chosen. "
        "Raise c (accept more risk) or the slope a"
        + (", or allow more swaps." if more_swaps_possible else
           " (every valid pair is already used: more swaps are not possible).")
    )
    return TradeOffChoice(table.index[best], False, a, c, msg)


def describe_release(row: pd.Series) -> str:
    """One sentence for an analyst, e.g. "Organization + Product, 28 swaps, r = 3.1%: DR 0.962, DU 0.9981".

    Values within 0.001 of 1 get the decimals that show how far they are from 1 (DR 0.999995,
    not a misleading "1.000": on real corpora every DR is that close to 1).
    """
    return (
        f"{row['combination']}, {int(row['swaps'])} swaps, r = {100 * row['swap_rate']:.1f}%: "
        f"DR {near_one(row['dr'], 3)}, DU {near_one(row['du'], 4)}"
    )


def near_one(value: float, decimals: int) -> str:
    """``value`` with ``decimals`` decimals, or up to 8 when it is closer to 1 than that shows."""
    gap = abs(1.0 - float(value))
    if not 0 < gap < 10.0 ** -decimals:
        return f"{float(value):.{decimals}f}"
    text = f"{float(value):.{min(int(np.floor(-np.log10(gap))) + 2, 8)}f}"  # 2 digits of the gap
    whole, fraction = text.split(".")
    return f"{whole}.{fraction.rstrip('0').ljust(decimals, '0')}"


#: Share of the largest achievable risk reduction the default trade-off line asks for.
DEFAULT_RISK_REDUCTION = 0.5


def default_offset(
    table: pd.DataFrame, share: float = DEFAULT_RISK_REDUCTION, utility: str = "du", risk: str = "dr"
) -> float:
    """Offset c of the default flat line (a = 0): the DR that removes ``share`` of the largest
    risk reduction any frontier release achieves, so the line is always reached (SPEC §7).

    A fixed c (the paper's 0.97) can lie below every release of a corpus whose risk is
    already low; this one picks the most useful release among those at least halfway from
    "no protection" (the highest frontier DR) to the safest release.
    """
    if table is None or len(table) == 0:
        return 1.0
    du, dr = table[utility].to_numpy(float), table[risk].to_numpy(float)
    front = frontier_mask(du, dr) & np.isfinite(dr)
    if not front.any():
        return 1.0
    low, high = float(dr[front].min()), float(dr[front].max())
    # Rounded up to 6 decimals: rounding to nearest could put the line just below the safest
    # release when all frontier releases share one DR (then the line is not reached).
    return float(np.ceil(np.round((high - share * (high - low)) * 1e6, 3)) / 1e6)
