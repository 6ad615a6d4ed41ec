"""Plain labels for the columns and settings shown to people (reports, the Export page).

One place for each name: a table keeps its machine column names in the CSV files of ``key/``
and is shown with these labels; a setting is shown with its label and a readable value (roles
as "Organization: swap", never a Python dict).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from ..config import ROLE_NAMES

#: Column name -> label, for every table of the release report.
COLUMN_LABELS: dict[str, str] = {
    # candidate releases (generate/releases.py, choose/candidates.py)
    "release_id": "release", "combination": "categories swapped", "categories": "categories",
    "swaps": "pairs swapped (t)", "swap_rate": "share of passages swapped",
    "du": "utility DU", "du_sd": "DU s.d. over draws", "dr": "disclosure risk DR",
    "dr_sd": "DR s.d. over draws", "draws": "draws that reached t", "draws_total": "draws",
    "all_draws": "reached by every draw", "du_released": "DU of the released draw",
    "dr_released": "DR of the released draw", "du_mean": "DU, mean over draws",
    "dr_mean": "DR, mean over draws", "sampler": "how it was drawn",
    "p_hat": "share of sample uniques that are population uniques (p̂)",
    "risk_status": "risk model status", "rounds": "swap rounds",
    "description": "what the release does", "words_unchanged": "share of words unchanged",
    "mean_cosine": "mean cosine of each passage before/after",
    "clusters_unchanged": "share of passages in the same cluster",
    "chunks_changed": "share of passages changed", "plan": "plan", "plan_index": "plan number",
    "stage_index": "stage of the plan",
    # measured accuracies (choose/attack_columns.py)
    "chunk_accuracy": "passages the attacker names", "chunk_accuracy_sd": "s.d. of passages named",
    "chunk_top5": "passages with the company in the attacker's top 5",
    "document_accuracy": "documents the attacker names",
    "document_accuracy_sd": "s.d. of documents named",
    "changed_accuracy_pre": "changed passages named before",
    "changed_accuracy_post": "changed passages named after",
    "changed_accuracy_post_sd": "s.d. of changed passages named after",
    "chunk_accuracy_released": "passages named in the released draw",
    "document_accuracy_released": "documents named in the released draw",
    "mcnemar_p": "McNemar p (changed passages)", "attacker": "attacker",
    "chance": "chance accuracy", "chunk_accuracy_mean": "passages named, mean over draws",
    "document_accuracy_mean": "documents named, mean over draws",
    "changed_accuracy_post_mean": "changed passages named after, mean over draws",
    "worst_chunk_attacker": "attacker naming most passages",
    "worst_document_attacker": "attacker naming most documents",
    "tone_correlation": "tone kept (correlation of net tone per document)",
    "tone_kept": "share of tone words kept", "epsilon": "ε of the word-level DP baseline",
    # attack.csv and audit.json (publish/attack_report.py, measure/audit.py)
    "doc_id": "document", "company": "company", "named_before": "named before",
    "named_after": "named after", "predicted_after": "guess after",
    "margin_after": "margin over the next company after", "n_chunks": "passages",
    "n_changed": "passages changed", "telling_chunks": "passages that gave it away",
    "top_words": "words that weighed most", "document": "document", "chunks": "passages",
    "epsilon_before": "ε before", "epsilon_after": "ε after",
    "epsilon_floor": "ε floor (no difference)", "kl_before": "KL before", "kl_after": "KL after",
    # the paper's Table 1 (measure/risk.py)
    "J": "categories J", "n_J": "passages n_J", "k": "distinct values k",
    "s1": "sample uniques s₁", "s1/n_J": "sample uniques per passage", "theta": "θ̂",
    "theta_se": "s.e. of θ̂", "alpha": "α̂", "alpha_se": "s.e. of α̂", "N": "population N",
    "S1_hat": "population uniques Ŝ₁", "status": "fit status", "converged": "converged",
    # swap log (generate/swapping.py) and plan changes (generate/plans.py)
    "step": "pair", "chunk_a": "passage A", "chunk_b": "passage B", "doc_a": "document A",
    "doc_b": "document B", "protected_a": "protected value A", "protected_b": "protected value B",
    "cluster": "cluster", "exchanged": "entities exchanged", "leftovers_a": "left over in A",
    "leftovers_b": "left over in B", "shared": "values in both", "index_a": "position A",
    "index_b": "position B", "suppress_leftovers": "leftovers suppressed", "review": "review",
    "note": "note", "kind": "kind of change", "round": "round", "chunk": "passage",
    "chunk_id": "passage", "partner": "partner passage", "partner_chunk_id": "partner passage",
    "before": "before", "after": "after", "detail": "exchanged", "in release": "in the release",
    "decision": "decision", "key": "change key",
    # entity corrections (text/entities.py)
    "action": "correction", "category": "category", "text": "entity text",
}  # fmt: skip

#: Attackers of the per-attacker columns ``stem.attacker`` (choose/attack_columns.py).
ATTACKER_NAMES: dict[str, str] = {
    "reading": "outside reader (words)", "in-corpus": "in-corpus attacker",
    "panel": "worst attacker of the panel", "char": "outside reader (characters)",
    "embedding": "outside reader (sentence meaning)", "retrieval": "document retrieval",
    "bm25": "document retrieval (BM25)", "svm": "outside reader (words, SVM)",
    "nb": "outside reader (words, naive Bayes)", "word_c1": "outside reader (words, C = 1)",
}

#: Setting name -> label (RunConfig fields), for the report's settings table.
SETTING_LABELS: dict[str, str] = {
    "corpus": "corpus", "protect": "protected column", "out": "output folder",
    "text_column": "column holding the text",
    "threshold": "chunking threshold (percentile 0–100)", "buffer": "sentences buffered",
    "embedding_model": "embedding model", "embedding_backend": "embedding backend",
    "spacy_model": "spaCy model", "cache_dir": "cache folder",
    "label_map": "NER labels → categories", "roles": "roles of the categories",
    "not_entities": "strings that are never entities",
    "not_entity_patterns": "patterns that are never entities",
    "default_not_entities": "built-in non-entity filter", "family": "mixture family",
    "n_components": "clusters K", "min_weight": "minimum cluster weight ε",
    "n_init": "restarts", "max_iter": "EM iterations at most", "tol": "EM tolerance",
    "mixture_seed": "mixture seed", "combination_size": "categories per combination",
    "max_swaps": "pairs per release at most", "draws": "draws M", "require": "a pair requires",
    "suppress_leftovers": "suppress leftover entities", "seed": "swap seed",
    "population": "population size N", "trade_off_a": "slope a of the line",
    "trade_off_c": "offset c of the line", "plan_rounds": "plan rounds (0 = no plans)",
    "plan_categories": "plan categories", "plan_terms": "distinctive terms swapped",
    "plan_redaction_levels": "redaction levels", "plan_redaction_method": "redaction method",
    "plan_redaction_fill": "masked words filled with", "plan_redaction_alone": "redaction alone too",
    "plan_require": "a plan pair requires",
    "plan_coverage": "plan coverage target", "plan_similarity_floor": "pair similarity floor",
    "plan_concentration_floor": "cluster concentration floor",
    "plan_one_vs_many": "leftovers moved one-vs-many",
    "document_levels": "document defence levels (share of words)",
    "document_fill": "document defence fill", "document_min_z": "document defence z floor",
    "document_top_k": "partner drawn among the most similar",
    "document_candidates": "types scored per document",
    "document_round_figures": "figures rounded", "document_defender": "defender fitted on the reading",
    "document_adaptive_check": "adaptive attacker measured",
    "max_chunk_accuracy": "goal: passages named at most",
    "max_document_accuracy": "goal: documents named at most", "goal_utility": "goal's utility",
    "panel_families": "attacker panel", "lineup": "attackers' line-up (companies, 0: all)",
    "dp_epsilons": "word-level DP baseline: ε values",
    "corrections": "entity corrections", "publishable_columns": "published columns",
    "shuffle_chunks": "chunk order shuffled", "bundle_seed": "pseudonym seed",
    "decisions": "review decisions", "release": "release written",
    "release_plan": "plan of the release", "release_stage": "stage of the plan",
}  # fmt: skip


def column_label(name: Any) -> str:
    """The label of a column; an unknown one reads as words ("some_name" -> "some name")."""
    name = str(name)
    if name in COLUMN_LABELS:
        return COLUMN_LABELS[name]
    if "." in name:  # a measured column of one attacker (choose/attack_columns.py)
        stem, attacker = name.split(".", 1)
        return f"{column_label(stem)} ({ATTACKER_NAMES.get(attacker, attacker + ' attacker')})"
    return name.replace("_", " ")


def labelled(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with plain column labels (the values are left as they are)."""
    return frame.rename(columns={c: column_label(c) for c in frame.columns})


def readable_value(name: str, value: Any) -> str:
    """A setting's value as text: roles and maps as "key: value" lists, booleans as yes/no."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        if not value:
            return "none"
        if name == "roles":
            return "; ".join(f"{k}: {ROLE_NAMES.get(v, v)}" for k, v in value.items())
        arrow = " → " if name == "label_map" else ": "
        return "; ".join(f"{k}{arrow}{readable_value(str(k), v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(readable_value(name, v) for v in value) if value else "none"
    return str(value)


def settings_frame(settings: Mapping[str, Any], skip: Iterable[str] = ()) -> pd.DataFrame:
    """Two columns, setting and value, both readable (``skip``: names listed elsewhere)."""
    skip = set(skip)
    rows = [(SETTING_LABELS.get(k, k.replace("_", " ")), readable_value(k, v))
            for k, v in settings.items() if k not in skip]
    return pd.DataFrame(rows, columns=["setting", "value"])
