"""What the release report (key/report.html) shows, shared by the app's Export page and the CLI.

Which columns of each table are shown (every column stays in key/'s CSV files), how much of a
change log is shown, and the measured protection (SPEC §8–§9) in sentences from the contents of
attack.json and audit.json, so a report written by ``release`` reads like the app's.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..measure.audit import epsilon_reading

#: Columns of the tables shown in the report, in order.
REPORT_COLUMNS: dict[str, tuple[str, ...]] = {
    "candidates": ("release_id", "sampler", "description", "swaps", "du", "dr", "chunk_accuracy",
                   "document_accuracy", "words_unchanged", "chunks_changed"),
    "swap_log.csv": ("step", "doc_a", "doc_b", "protected_a", "protected_b", "cluster",
                     "exchanged", "review", "note"),
    "changes.csv": ("kind", "round", "chunk_id", "partner_chunk_id", "before", "after"),
}
#: Rows of a change log shown in the report (the CSV in key/ has every row).
REPORT_ROWS = 50
LOG_TITLES = {"swap_log.csv": "Swap log (pairs in the release)",
              "changes.csv": "Changes in the release (plan)"}


def report_columns(frame: pd.DataFrame, which: str) -> pd.DataFrame:
    """``frame`` with the report's columns for table ``which`` (those it has), in order."""
    return frame[[c for c in REPORT_COLUMNS[which] if c in frame.columns]]


def log_table(log: pd.DataFrame, log_name: str) -> tuple[str, pd.DataFrame]:
    """(title, first rows) of a change log for the report; the title says when rows are cut."""
    title = LOG_TITLES[log_name]
    if len(log) > REPORT_ROWS:
        title += f" — the first {REPORT_ROWS} of {len(log)}; all in key/{log_name}"
    return title, report_columns(log, log_name).head(REPORT_ROWS)


def protection_facts(attack: Mapping | None, audit: Mapping | None) -> dict[str, str]:
    """Sentences of the measured protection from attack.json's and audit.json's contents."""
    facts: dict[str, str] = {}
    panel = (attack or {}).get("panel")
    if panel:
        facts["worst attacker of the panel"] = (
            f"names {_share(panel.get('release_document_accuracy'))} of documents after the "
            f"release ({panel.get('release_document_attacker')}; "
            f"{_share(panel.get('pre_release_document_accuracy'))} before) and "
            f"{_share(panel.get('release_chunk_accuracy'))} of passages "
            f"({panel.get('release_chunk_attacker')}; "
            f"{_share(panel.get('pre_release_chunk_accuracy'))} before), over "
            f"{len(panel.get('members') or [])} attackers")
    for name, entry in ((attack or {}).get("attackers") or {}).items():
        pre, post = entry.get("pre_release"), entry.get("release")
        if not pre or not post:
            continue
        text = (f"chunk accuracy {_share(pre.get('chunk_top1'))} before the release, "
                f"{_share(post.get('chunk_top1'))} after; documents named "
                f"{pre.get('documents_named')} before, {post.get('documents_named')} after, of "
                f"{post.get('n_documents')}; {post.get('n_changed')} passages changed (chance "
                f"{_share(post.get('chance'))})")
        if entry.get("note"):
            text += f". {entry['note']}"
        facts[f"{name} attacker"] = text
    if audit:
        before, after = audit.get("corpus_epsilon_before"), audit.get("corpus_epsilon_after")
        if before is not None and after is not None:
            facts["divergence audit"] = (
                f"corpus ε {before:.3f} before the release, {after:.3f} after (the largest "
                "document's divergence from the rest; read against the permutation floor, "
                f"per document in key/audit.json); how to read ε = {after:.3g}: "
                f"{epsilon_reading(after, _largest_floor(audit))}")
            sample = (audit.get("after") or {}).get("sample")
            if sample:
                facts["divergence audit"] += f". The corpus was {sample['statement']}"
    return facts


def _largest_floor(audit: Mapping) -> float | None:
    """The largest per-document permutation floor of audit.json (None when it has none)."""
    floors = [d.get("epsilon_floor") for d in audit.get("documents", ())]
    floors = [float(f) for f in floors if f is not None]
    return max(floors) if floors else None


def _share(value) -> str:
    return "–" if value is None else f"{float(value):.3f}"


def attack_table(entry: Mapping) -> pd.DataFrame:
    """The paper's Table 2 for one attacker of attack.json (``attackers[name]``): accuracy on
    the changed passages and on all passages and documents, before and after the release."""
    pre, post = entry.get("pre_release") or {}, entry.get("release") or {}
    rows = [
        (f"changed passages ({post.get('n_changed')}), top-1", post.get("changed_pre_top1"),
         post.get("changed_post_top1")),
        (f"changed passages ({post.get('n_changed')}), top-5", post.get("changed_pre_top5"),
         post.get("changed_post_top5")),
        (f"all passages ({post.get('n_chunks')}), top-1", pre.get("chunk_top1"),
         post.get("chunk_top1")),
        (f"all passages ({post.get('n_chunks')}), top-5", pre.get("chunk_top5"),
         post.get("chunk_top5")),
        (f"whole documents ({post.get('n_documents')})", pre.get("document_accuracy"),
         post.get("document_accuracy")),
    ]
    return pd.DataFrame([{"accuracy of the attacker on": name, "before the release": _share(b),
                          "after the release": _share(a), "chance": _share(post.get("chance"))}
                         for name, b, a in rows])


def named_documents(attack_csv: pd.DataFrame) -> pd.DataFrame:
    """The documents each attacker still names after the release (rows of attack.csv)."""
    if attack_csv is None or not len(attack_csv):
        return pd.DataFrame()
    named = attack_csv[attack_csv["named_after"].astype(bool)]
    return named[["attacker", "doc_id", "company", "margin_after", "n_chunks", "n_changed",
                  "top_words"]].sort_values(["attacker", "margin_after"], ascending=[True, False])


def audit_table(audit: Mapping | None) -> pd.DataFrame:
    """Per document ε and KL before/after (audit.json), the most distinguishable first."""
    rows = pd.DataFrame((audit or {}).get("documents") or [])
    if not len(rows):
        return rows
    columns = [c for c in ("document", "chunks", "epsilon_before", "epsilon_after",
                           "epsilon_floor", "kl_before", "kl_after") if c in rows]
    return rows[columns].sort_values("epsilon_after", ascending=False)
