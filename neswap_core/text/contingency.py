"""The contingency table z and its marginals z_J (SPEC §1, §5).

z has one row per chunk (index: chunk_id) and one column per category; a cell holds the
chunk's distinct entity strings of that category, sorted and joined as ``"A & B"``, or ``""``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from ..config import CATEGORIES
from ..corpus import Chunk

EMPTY = ""
JOINER = " & "


def cell_value(values: Iterable[str]) -> str:
    """The z cell for a chunk's entity strings of one category: sorted, distinct, ``" & "``."""
    return JOINER.join(sorted(set(values)))


def contingency_table(
    chunks: Sequence[Chunk], categories: Sequence[str] = CATEGORIES
) -> pd.DataFrame:
    """z as a DataFrame: index chunk_id, one string column per category (``""`` = none)."""
    rows = {c: [cell_value(ch.values(c)) for ch in chunks] for c in categories}
    frame = pd.DataFrame(rows, index=pd.Index([ch.chunk_id for ch in chunks], name="chunk_id"))
    return frame.astype(object) if len(frame) == 0 else frame


def cell_keys(z: pd.DataFrame, categories: Sequence[str]) -> pd.Series:
    """Per chunk, the tuple of its values in J; chunks empty in every category of J are left out.

    These keys define the cells of z_J used by the risk model (SPEC §5).
    """
    cols = list(categories)
    missing = [c for c in cols if c not in z.columns]
    if missing:
        raise KeyError(f"Categories not in the contingency table: {missing}")
    sub = z[cols]
    nonempty = (sub != EMPTY).any(axis=1)
    sub = sub[nonempty]
    return pd.Series(list(map(tuple, sub.to_numpy())), index=sub.index, dtype=object)


def marginal_table(
    z: pd.DataFrame, categories: Sequence[str], include_empty: bool = False
) -> pd.DataFrame:
    """z_J: one row per distinct combination of values in J with its chunk count, largest first.

    ``include_empty=True`` keeps the all-empty combination (useful for display, never for risk).
    """
    cols = list(categories)
    sub = z[cols]
    if not include_empty:
        sub = sub[(sub != EMPTY).any(axis=1)]
    if len(sub) == 0:
        return pd.DataFrame(columns=[*cols, "chunks"])
    counts = sub.groupby(cols, sort=False).size().rename("chunks").reset_index()
    return counts.sort_values("chunks", ascending=False, kind="stable").reset_index(drop=True)
