"""Sequential named entity swapping and its log (SPEC §3).

``swap_sequence`` applies the roles (C placeholders first), then draws valid pairs uniformly at
random one at a time (``pairs.PairSampler``) and exchanges their S entities
(``rewrite.swap_pair``). The result, ``SwapRun``, holds the swap log (``SwapRecord`` per pair)
and the rewritten chunks of every step, so the release after swap t (the first t records) is
cheap to rebuild for every t. Because a chunk is swapped at most once, records are independent:
``apply_swaps`` rebuilds a release from any accepted subset of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from ..config import DEFAULT_MAX_SWAPS
from ..corpus import Chunk
from ..errors import ConfigError, CorpusError, NeswapError
from .pairs import (
    PairCodes,
    PairSampler,
    count_valid_pairs,
    explain_no_pairs,
    pair_codes,
    resolve_categories,
    valid_degrees,
    valid_pairs_by_cluster,
)
from .rewrite import (
    OPERATORS,
    Exchange,
    Keep,
    Operator,
    Replace,
    Suppress,
    apply_operators,
    apply_roles,
    rewrite_chunk,
    swap_pair,
)

__all__ = [
    "OPERATORS",
    "Keep",
    "Operator",
    "Replace",
    "Suppress",
    "SwapRecord",
    "SwapRun",
    "apply_operators",
    "apply_roles",
    "apply_swaps",
    "count_valid_pairs",
    "rewrite_chunk",
    "swap_log",
    "swap_sequence",
    "valid_pairs_by_cluster",
]


@dataclass(frozen=True)
class SwapRecord:
    """One swapped pair of the log: who, where, and what moved where (SPEC §3).

    ``exchanged``: (category, value from a now in b, value from b now in a).
    ``leftovers_a``/``leftovers_b``: (category, value) that stayed unmatched (suppressed to the
    category placeholder when ``suppress_leftovers``). ``shared``: (category, value) both chunks
    mention; never exchanged. ``index_a``/``index_b``: positions in the swapped chunk list.
    """

    step: int  # 1-based
    chunk_a: str
    chunk_b: str
    doc_a: str
    doc_b: str
    protected_a: str
    protected_b: str
    cluster: int
    categories: tuple[str, ...]
    exchanged: tuple[tuple[str, str, str], ...]
    leftovers_a: tuple[tuple[str, str], ...]
    leftovers_b: tuple[tuple[str, str], ...]
    shared: tuple[tuple[str, str], ...]
    suppress_leftovers: bool
    index_a: int
    index_b: int

    @property
    def moved(self) -> bool:
        """False when nothing was exchanged or suppressed: every S cell of one chunk was a
        subset of the other's (values differ as cells, but nothing can move without duplicating)."""
        return bool(self.exchanged) or (
            self.suppress_leftovers and bool(self.leftovers_a or self.leftovers_b)
        )

    def to_dict(self) -> dict[str, Any]:
        """Flat, JSON-friendly row of the swap log."""
        row = asdict(self)
        row["categories"] = " + ".join(self.categories)
        row["exchanged"] = "; ".join(f"{c}: {a} <-> {b}" for c, a, b in self.exchanged)
        for key in ("leftovers_a", "leftovers_b", "shared"):
            row[key] = "; ".join(f"{c}: {v}" for c, v in getattr(self, key))
        return row


def _record(
    step: int,
    i: int,
    j: int,
    chunks: Sequence[Chunk],
    cluster: int,
    exchanges: Sequence[Exchange],
    suppress_leftovers: bool,
) -> SwapRecord:
    a, b = chunks[i], chunks[j]
    return SwapRecord(
        step=step,
        chunk_a=a.chunk_id,
        chunk_b=b.chunk_id,
        doc_a=a.doc_id,
        doc_b=b.doc_id,
        protected_a=a.protected,
        protected_b=b.protected,
        cluster=cluster,
        categories=tuple(ex.category for ex in exchanges),
        exchanged=tuple((ex.category, va, vb) for ex in exchanges for va, vb in ex.pairs),
        leftovers_a=tuple((ex.category, v) for ex in exchanges for v in ex.leftovers_a),
        leftovers_b=tuple((ex.category, v) for ex in exchanges for v in ex.leftovers_b),
        shared=tuple((ex.category, v) for ex in exchanges for v in ex.shared),
        suppress_leftovers=suppress_leftovers,
        index_a=i,
        index_b=j,
    )


@dataclass(frozen=True)
class SwapRun:
    """A sequential swap run: the log, the rewritten pairs, and why it stopped.

    ``base`` are the chunks the run swapped (after the roles were applied); ``swapped[t-1]`` the
    rewritten (a, b) of step t. ``exhausted`` is True when fewer than ``max_swaps`` valid pairs
    could be drawn; ``message`` says how many and why.
    """

    base: tuple[Chunk, ...]
    records: tuple[SwapRecord, ...]
    swapped: tuple[tuple[Chunk, Chunk], ...]
    categories: tuple[str, ...]
    require: str
    max_swaps: int
    initial_valid_pairs: int
    exhausted: bool
    message: str

    @property
    def n_swaps(self) -> int:
        return len(self.records)

    @property
    def swapped_ids(self) -> list[str]:
        """Chunk ids in the order they were swapped (a, b of step 1, then step 2, ...)."""
        return [cid for r in self.records for cid in (r.chunk_a, r.chunk_b)]

    @property
    def chunks(self) -> list[Chunk]:
        """The post-swap chunks after every swap, aligned with ``base``."""
        return self.chunks_after(self.n_swaps)

    def changed_after(self, t: int) -> dict[int, Chunk]:
        """{position: rewritten chunk} of the release after swap t (the only chunks to re-embed)."""
        if not 0 <= t <= self.n_swaps:
            raise ConfigError(f"t must be in 0..{self.n_swaps} (the number of swaps), got {t}.")
        out: dict[int, Chunk] = {}
        for record, (new_a, new_b) in zip(self.records[:t], self.swapped[:t], strict=True):
            out[record.index_a], out[record.index_b] = new_a, new_b
        return out

    def chunks_after(self, t: int) -> list[Chunk]:
        """The release after swap t: ``base`` with the first t pairs rewritten (same objects else)."""
        chunks = list(self.base)
        for position, chunk in self.changed_after(t).items():
            chunks[position] = chunk
        return chunks

    def swap_rate(self, t: int | None = None) -> float:
        """r = 2t/n, the share of chunks swapped after t swaps (default: all of them)."""
        t = self.n_swaps if t is None else t
        return 2 * t / len(self.base) if self.base else 0.0

    def release(self, records: Sequence[SwapRecord]) -> list[Chunk]:
        """The release made of an accepted subset of this run's records."""
        return apply_swaps(self.base, records)


def swap_log(records: Sequence[SwapRecord]) -> pd.DataFrame:
    """The swap log as a DataFrame, one row per pair."""
    columns = list(SwapRecord.__dataclass_fields__)
    return pd.DataFrame([r.to_dict() for r in records], columns=columns)


def _run_message(codes: PairCodes, n_swaps: int, max_swaps: int, initial: int) -> str:
    names = " + ".join(codes.categories)
    if initial == 0:
        message = f"No valid pair for {names}: {explain_no_pairs(codes)}."
    elif n_swaps < max_swaps:
        plural = "swap" if n_swaps == 1 else "swaps"
        message = (
            f"Only {n_swaps} {plural} for {names} (max_swaps = {max_swaps}): no valid pair "
            f"was left after swap {n_swaps} ({initial} valid pairs at the start)."
        )
    else:
        return f"{n_swaps} swaps for {names} ({initial} valid pairs at the start)."
    if len(codes.categories) > 1:
        for category in codes.categories:
            alone = codes.restrict(category)
            why = explain_no_pairs(alone) if valid_degrees(alone).sum() == 0 else ""
            if why and why not in message:
                message += f" {category} has no valid pair on its own: {why}."
    return message


def _idle_note(records: Sequence[SwapRecord]) -> str:
    idle = [r.step for r in records if not r.moved]
    if not idle:
        return ""
    return (
        f" Swaps {idle} moved nothing: in each S category one chunk's values contained the "
        "other's (or one chunk had none), so nothing could move without duplicating a value."
    )


def swap_sequence(
    chunks: Sequence[Chunk],
    labels: np.ndarray | Sequence[int],
    roles: Mapping[str, str] | Sequence[str] | str,
    rng: np.random.Generator,
    max_swaps: int = DEFAULT_MAX_SWAPS,
    require: str = "all",
    suppress_leftovers: bool = False,
    suppress_untouched: bool = False,
) -> SwapRun:
    """Swap up to ``max_swaps`` uniformly drawn valid pairs, one at a time (SPEC §3).

    ``roles``: a {category: S/F/C/U} mapping (C placeholders and, if ``suppress_untouched``,
    U suppression are applied first), or the list of S categories for chunks whose roles were
    applied already (e.g. one combination J of the releases). ``labels``: MAP cluster label of
    every chunk. Stops early, with ``exhausted`` and a message, when no valid pair is left.
    """
    if not isinstance(rng, np.random.Generator):
        raise ConfigError("Pass a numpy.random.Generator, e.g. numpy.random.default_rng(seed).")
    if isinstance(max_swaps, bool) or not isinstance(max_swaps, (int, np.integer)) or max_swaps < 1:
        raise ConfigError(f"max_swaps must be an integer >= 1, got {max_swaps!r}.")
    categories, ignored = resolve_categories(roles)
    if isinstance(roles, Mapping):
        base = tuple(apply_roles(chunks, roles, suppress_untouched))
    else:
        base = tuple(chunks)
    codes = pair_codes(base, labels, categories, require, ignored)
    sampler = PairSampler(codes)
    initial = sampler.n_pairs
    records: list[SwapRecord] = []
    swapped: list[tuple[Chunk, Chunk]] = []
    while len(records) < max_swaps:
        pair = sampler.draw(rng)
        if pair is None:
            break
        i, j = pair
        new_a, new_b, exchanges = swap_pair(base[i], base[j], categories, suppress_leftovers)
        cluster = int(codes.clusters[codes.cluster[i]])
        records.append(
            _record(len(records) + 1, i, j, base, cluster, exchanges, suppress_leftovers)
        )
        swapped.append((new_a, new_b))
    return SwapRun(
        base=base,
        records=tuple(records),
        swapped=tuple(swapped),
        categories=categories,
        require=require,
        max_swaps=int(max_swaps),
        initial_valid_pairs=initial,
        exhausted=len(records) < max_swaps,
        message=_run_message(codes, len(records), int(max_swaps), initial) + _idle_note(records),
    )


def _position(chunks: Sequence[Chunk], index: int, chunk_id: str, lookup: dict[str, int]) -> int:
    if 0 <= index < len(chunks) and chunks[index].chunk_id == chunk_id:
        return index
    if not lookup:
        lookup.update({c.chunk_id: k for k, c in enumerate(chunks)})
    if chunk_id not in lookup:
        raise CorpusError(
            f"Chunk {chunk_id} of the swap log is not among the given chunks; "
            "pass the chunks the run swapped (SwapRun.base)."
        )
    return lookup[chunk_id]


def apply_swaps(chunks: Sequence[Chunk], records: Sequence[SwapRecord]) -> list[Chunk]:
    """Rebuild a release from ``chunks`` (the run's ``base``) and a subset of its records.

    Each record's exchange is recomputed from the two chunks and must match the log; chunks
    not named by a record are returned as the same objects.
    """
    out = list(chunks)
    lookup: dict[str, int] = {}
    used: set[int] = set()
    for record in records:
        i = _position(chunks, record.index_a, record.chunk_a, lookup)
        j = _position(chunks, record.index_b, record.chunk_b, lookup)
        if i in used or j in used:
            raise NeswapError(
                f"Swap {record.step}: a chunk of this pair is already swapped by "
                "another record; a chunk may be swapped only once per release."
            )
        used.update((i, j))
        new_a, new_b, exchanges = swap_pair(
            chunks[i], chunks[j], record.categories, record.suppress_leftovers
        )
        expected = _record(
            record.step, i, j, chunks, record.cluster, exchanges, record.suppress_leftovers
        )
        if replace(expected, index_a=record.index_a, index_b=record.index_b) != record:
            raise CorpusError(
                f"Swap {record.step} ({record.chunk_a} <-> {record.chunk_b}) does not "
                "match these chunks; pass the chunks the run swapped (SwapRun.base)."
            )
        out[i], out[j] = new_a, new_b
    return out
