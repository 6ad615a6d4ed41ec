"""Measured accuracies of every candidate release of a sweep (SPEC §8 on R_cand, §3).

``build_scorers`` trains the attackers once per corpus: the reading attacker when a reading is
given (``measure/reading.py``) and the in-corpus attacker always. ``attack_columns`` scores every
candidate (J, t): a draw's releases are the prefixes of its swap run, so each draw's changed
chunks are vectorised once (``ReleaseScorer.score_steps``) and the release after t swaps costs
only sums. Columns (per attacker, prefixed ``reading_`` / ``in_corpus_``; the *primary* attacker —
the reading one when available, else the in-corpus one — also unprefixed, the names the
frontier and the goal use):

``chunk_accuracy`` (± ``_sd`` over the draws that reached t), ``chunk_top5``,
``document_accuracy`` (± ``_sd``), ``changed_accuracy_pre``, ``changed_accuracy_post`` (± ``_sd``),
``chunk_accuracy_released``/``document_accuracy_released``/``mcnemar_p`` (the written release:
draw 0's first t pairs), and ``attacker`` (the primary's name) and ``chance``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..corpus import Chunk
from ..measure.attack import CrossFittedAttacker, TextAttacker
from ..measure.attack_scores import AttackMeasures, ReleaseScorer

READING, IN_CORPUS = "reading", "in-corpus"
#: What each attacker is, for tables and pages (the in-corpus one is the pessimistic reading).
ATTACKER_NOTES = {
    READING: "outside reader trained on other texts of the same companies",
    IN_CORPUS: "cross-fitted on the corpus itself: it has read the other passages of the same "
    "document, which SPEC §8 calls the stronger, pessimistic reading; with little text per "
    "company it can still name fewer chunks than an outside reader (dev corpus: 0.60 vs 0.76)",
}


def build_scorers(
    chunks: Sequence[Chunk],
    reading: TextAttacker | None = None,
    *,
    in_corpus: bool = True,
    random_state: int = 0,
) -> dict[str, ReleaseScorer]:
    """Scorers of the pre-release ``chunks``: reading (when fitted attacker given), in-corpus."""
    texts = [c.text for c in chunks]
    labels = [c.protected for c in chunks]
    docs = [c.doc_id for c in chunks]
    scorers: dict[str, ReleaseScorer] = {}
    if reading is not None:
        scorers[READING] = ReleaseScorer(reading, texts, labels, docs, name=READING)
    if in_corpus:
        model = CrossFittedAttacker(random_state=random_state).fit(texts, labels, docs)
        scorers[IN_CORPUS] = ReleaseScorer(model, texts, labels, docs, name=IN_CORPUS)
    return scorers


def primary_name(scorers: Mapping[str, ReleaseScorer]) -> str | None:
    """The attacker shown by default: the reading one when there is one."""
    return READING if READING in scorers else next(iter(scorers), None)


def draw_steps(draw) -> list[dict[int, str]]:
    """One step per swap of a draw: {position: released text} of its two chunks."""
    return [
        {rec.index_a: new_a.text, rec.index_b: new_b.text}
        for rec, (new_a, new_b) in zip(draw.run.records, draw.run.swapped, strict=True)
    ]


def summarise(measures: Sequence[AttackMeasures]) -> dict[str, float]:
    """Mean ± s.d. (ddof 1; 0 for one draw) over draws of the headline figures."""
    out: dict[str, float] = {}
    for key in ("chunk_top1", "chunk_top5", "document_accuracy", "changed_pre_top1",
                "changed_post_top1"):  # fmt: skip
        values = np.array([getattr(m, key) for m in measures], dtype=float)
        out[key] = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
        finite = values[np.isfinite(values)]
        out[key + "_sd"] = float(finite.std(ddof=1)) if finite.size > 1 else 0.0
    return out


def _rows(sweep, scorer: ReleaseScorer) -> dict[str, dict[str, float]]:
    """release_id -> measured columns (unprefixed) for every (J, t) of ``Sweep.table``."""
    from ..generate.releases import combination_name

    rows: dict[str, dict[str, float]] = {}
    for combo in sweep.combinations:
        draws = sweep.draws_for(combo)
        if not draws:
            continue
        per_draw = [scorer.score_steps(draw_steps(d)) for d in draws]
        for t in range(1, draws[0].n_swaps + 1):
            reach = [ms[t - 1] for ms in per_draw if len(ms) >= t]
            s, written = summarise(reach), reach[0]
            rows[f"{combination_name(combo)} @ {t}"] = {
                "chunk_accuracy": s["chunk_top1"], "chunk_accuracy_sd": s["chunk_top1_sd"],
                "chunk_top5": s["chunk_top5"],
                "document_accuracy": s["document_accuracy"],
                "document_accuracy_sd": s["document_accuracy_sd"],
                "changed_accuracy_pre": s["changed_pre_top1"],
                "changed_accuracy_post": s["changed_post_top1"],
                "changed_accuracy_post_sd": s["changed_post_top1_sd"],
                "chunk_accuracy_released": written.chunk_top1,
                "document_accuracy_released": written.document_accuracy,
                "mcnemar_p": written.mcnemar_p,
            }  # fmt: skip
    return rows


def attack_columns(sweep, scorers: Mapping[str, ReleaseScorer]) -> pd.DataFrame:
    """Measured columns for every candidate of ``sweep`` (index ``release_id``; module doc)."""
    primary = primary_name(scorers)
    frames = []
    for name, scorer in scorers.items():
        frame = pd.DataFrame.from_dict(_rows(sweep, scorer), orient="index")
        prefix = name.replace("-", "_") + "_"
        frames.append(frame.add_prefix(prefix))
        if name == primary:
            frame = frame.assign(attacker=name, chance=scorer.pre_release().chance)
            frames.insert(0, frame)
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, axis=1)


def with_attack_columns(
    table: pd.DataFrame, sweep, scorers: Mapping[str, ReleaseScorer]
) -> pd.DataFrame:
    """``table`` (``Sweep.table``) with the measured columns joined on ``release_id``."""
    if not scorers or len(table) == 0:
        return table
    columns = attack_columns(sweep, scorers)
    return table.join(columns.drop(columns=[c for c in columns if c in table], errors="ignore"))
