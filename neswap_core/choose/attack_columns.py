"""Measured risk columns of the candidate table (SPEC §8 on every candidate, §12's panel).

The attackers are trained once per corpus by ``choose/scorers.build_scorers`` (the reading
attacker when a reading is given, ``measure/reading.py``, and the in-corpus attacker); this module
only turns their scores into columns, so reading a kept table never imports scikit-learn. Every measured column is keyed
by **attacker** and **level** (chunk or document), so more attacker families (issue 22's panel)
are more columns, never new branches:

* ``chunk_accuracy.<attacker>``, ``document_accuracy.<attacker>`` (``risk_column``): the share
  of passages / documents that attacker names in the candidate's written text, with
  ``chunk_top5.<attacker>``, ``changed_accuracy_pre.<attacker>``,
  ``changed_accuracy_post.<attacker>`` (the changed passages before/after, the paper's Table 2)
  and ``mcnemar_p.<attacker>`` (Table 3);
* with an attacker reading, the **attacker panel** (``measure/panel.py``): the reading attacker
  is its ``word`` family (columns ``.reading``) and the other families of
  ``sweep.panel_families`` (default ``char``, ``embedding``, ``retrieval``; the
  evaluation-only ``bm25``, ``svm``, ``nb``, ``word_c1`` when listed) are attackers of their own
  name: ``chunk_accuracy.char``, ``document_accuracy.retrieval``, … The panel is fitted once per
  reading (cached on disk, ``measure/panel_cache.py``) and scores only changed chunks;
* ``chunk_accuracy`` and ``document_accuracy`` without a suffix: the **primary** figures, the
  columns goals, the frontier and the verdict use. With a panel they are the **worst case over
  the panel** (each level's maximum; ``attacker`` = "panel", ``worst_chunk_attacker`` and
  ``worst_document_attacker`` name the family that reaches it); without a reading they are the
  in-corpus attacker's (``attacker`` = "in-corpus"). ``chance`` is 1 / number of companies;
* over the paper's M Monte Carlo draws (``draws_columns``): ``chunk_accuracy_mean.<attacker>``
  and ``_sd`` (ddof 1; 0 for one draw), the same for ``document_accuracy`` and
  ``changed_accuracy_post``; a plan has one draw (mean = its value, s.d. 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..config.defaults import PANEL_CORE_FAMILIES, PANEL_EXTRA_FAMILIES
from ..generate.releases import combination_name, draw_steps
from ..measure.attack_scores import AttackMeasures, ReleaseScorer

READING, IN_CORPUS, PANEL = "reading", "in-corpus", "panel"
#: Attackers that are families of the panel (the reading attacker is its word family).
PANEL_MEMBERS = (READING, *(f for f in PANEL_CORE_FAMILIES + PANEL_EXTRA_FAMILIES if f != "word"))
#: Said when there is no reading: the panel cannot be fitted.
NO_READING_NOTE = ("No attacker reading (an attacker/ folder beside the corpus, or an upload): "
                   "the attacker panel (word, character, sentence-embedding and whole-document "
                   "retrieval attackers) needs one, so risk is measured by the in-corpus attacker "
                   "only.")
#: What each attacker is, for tables and pages (the in-corpus one is the pessimistic reading).
ATTACKER_NOTES = {
    PANEL: "the worst case over the attacker panel (each figure is the highest of its attackers)",
    READING: "outside reader trained on other texts of the same companies (word 1–2-grams + "
    "logistic regression: the panel's word attacker)",
    "char": "outside reader on character 2–5-grams + logistic regression",
    "embedding": "outside reader on sentence embeddings (MiniLM) + logistic regression",
    "retrieval": "whole-document retrieval: the document's TF-IDF word 1–2-grams against each "
    "company's other texts, nearest company",
    "bm25": "whole-document BM25 retrieval against each company's other texts (evaluation only)",
    "svm": "linear SVM on word 1–2-grams (evaluation only)",
    "nb": "naive Bayes on word 1–2-gram counts (evaluation only)",
    "word_c1": "the word attacker with stronger regularisation, C = 1 (evaluation only)",
    IN_CORPUS: "cross-fitted on the corpus itself: it has read the other passages of the same "
    "document, which SPEC §8 calls the stronger, pessimistic reading; with little text per "
    "company it can still name fewer chunks than an outside reader (dev corpus: 0.60 vs 0.76)",
}
#: The levels an attacker names at (SPEC §12: the document is the unit that must not be named).
LEVELS = ("chunk", "document")
#: Measured figures of one attacker on one text: column stem -> AttackMeasures attribute.
MEASURED = {"chunk_accuracy": "chunk_top1", "document_accuracy": "document_accuracy",
            "chunk_top5": "chunk_top5", "changed_accuracy_pre": "changed_pre_top1",
            "changed_accuracy_post": "changed_post_top1", "mcnemar_p": "mcnemar_p"}  # fmt: skip
#: Figures summarised over the paper's M draws (``_mean`` and ``_sd`` columns).
OVER_DRAWS = ("chunk_accuracy", "document_accuracy", "changed_accuracy_post")


def risk_column(level: str, attacker: str | None = None) -> str:
    """Name of a measured risk column: ``chunk_accuracy`` (primary) or ``chunk_accuracy.reading``."""
    if level not in LEVELS:
        raise ValueError(f"level is one of {LEVELS}, got {level!r}")
    stem = f"{level}_accuracy"
    return stem if attacker is None else f"{stem}.{attacker}"


def panel_members(scorers: Mapping[str, ReleaseScorer]) -> list[str]:
    """The attackers of ``scorers`` that are families of the attacker panel."""
    return [n for n in scorers if n in PANEL_MEMBERS]


def primary_name(scorers: Mapping[str, ReleaseScorer]) -> str | None:
    """The attacker shown by default: the panel's worst case when more than one family was
    fitted on a reading, else the reading attacker, else the first (in-corpus)."""
    if len(panel_members(scorers)) > 1:
        return PANEL
    return READING if READING in scorers else next(iter(scorers), None)


def worst_case(frame: pd.DataFrame, members: Sequence[str]) -> pd.DataFrame:
    """The primary columns of ``frame`` as the worst case over ``members`` (module docstring):
    ``chunk_accuracy`` / ``document_accuracy`` the highest, ``worst_*_attacker`` which one."""
    out = pd.DataFrame(index=frame.index)
    for level in LEVELS:
        cols = [risk_column(level, m) for m in members]
        values = frame[cols].astype(float)
        out[risk_column(level)] = values.max(axis=1)
        # the first of the members reaching the maximum (NaN rows name none)
        best = values.fillna(-np.inf).to_numpy().argmax(axis=1)
        out[f"worst_{level}_attacker"] = np.where(values.notna().any(axis=1),
                                                  np.asarray(members, dtype=object)[best], "")
    out["attacker"] = PANEL
    return out


def measured_row(scorers: Mapping[str, ReleaseScorer], changed: Mapping[int, str]) -> dict:
    """Every attacker's figures on one written text (``changed``: {position: released text})."""
    row: dict = {}
    primary = primary_name(scorers)
    for name, scorer in scorers.items():
        measures: AttackMeasures = scorer.score(changed)
        for stem, attr in MEASURED.items():
            row[f"{stem}.{name}"] = float(getattr(measures, attr))
        if name == primary:
            row.update(_primary(name, measures))
        row["chance"] = float(measures.chance)
    if primary == PANEL:
        row.update(worst_case(pd.DataFrame([row]), panel_members(scorers)).iloc[0].to_dict())
    return row


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


def _draw_rows(sweep, name: str, scorer: ReleaseScorer, primary: bool) -> dict[str, dict]:
    """release_id -> one attacker's figures for every (J, t) of the paper's sweep: on the
    written text (draw 0) and over the draws that reached t.

    A draw's releases are the prefixes of its swap run, so each draw's changed chunks are
    vectorised once (``ReleaseScorer.score_steps``) and the release after t swaps costs sums."""
    rows: dict[str, dict] = {}
    for combo in sweep.combinations:
        draws = sweep.draws_for(combo)
        if not draws:
            continue
        per_draw = [scorer.score_steps(draw_steps(d)) for d in draws]
        for t in range(1, draws[0].n_swaps + 1):
            reach = [ms[t - 1] for ms in per_draw if len(ms) >= t]
            written, s = reach[0], summarise(reach)
            row = {f"{stem}.{name}": float(getattr(written, attr)) for stem, attr in MEASURED.items()}
            if primary:
                row.update(_primary(name, written))
            for stem in OVER_DRAWS:
                attr = MEASURED[stem]
                row[f"{stem}_mean.{name}"] = s[attr]
                row[f"{stem}_sd.{name}"] = s[attr + "_sd"]
            rows[f"{combination_name(combo)} @ {t}"] = row
    return rows


def _primary(name: str, measures: AttackMeasures) -> dict:
    return {"chunk_accuracy": float(measures.chunk_top1),
            "document_accuracy": float(measures.document_accuracy), "attacker": name,
            "chance": float(measures.chance)}  # fmt: skip


def draws_columns(sweep, scorers: Mapping[str, ReleaseScorer]) -> pd.DataFrame:
    """Every attacker's figures for every paper candidate (index release_id): on its written
    draw, as ``measured_row`` gives them, and over its M draws (module docstring)."""
    primary = primary_name(scorers)
    frames = [pd.DataFrame.from_dict(_draw_rows(sweep, name, scorer, name == primary),
                                     orient="index")
              for name, scorer in scorers.items()]  # fmt: skip
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, axis=1)
    if primary == PANEL:
        table = pd.concat([table, worst_case(table, panel_members(scorers))], axis=1)
        table["chance"] = 1.0 / max(next(iter(scorers.values())).n_companies, 1)
    return table


def single_draw_columns(row: Mapping[str, float], scorers: Mapping[str, ReleaseScorer]) -> dict:
    """The over-draws columns of a candidate made of one text (a plan): mean = value, s.d. 0."""
    out = {}
    for name in scorers:
        for stem in OVER_DRAWS:
            out[f"{stem}_mean.{name}"] = row.get(f"{stem}.{name}", float("nan"))
            out[f"{stem}_sd.{name}"] = 0.0
    return out
