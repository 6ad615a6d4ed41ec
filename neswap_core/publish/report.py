"""key/report.json and key/report.html of a release: what was written, why, and how well it hides.

One report for the CLI and the app (the app adds its frontier chart as ``figures_html``):
the written release and why (pinned, the goal's — met or not — or the trade-off line's), the
analyst's review, the measured protection (attack.json, audit.json), examples before and
after, the change log, the candidates, the Pitman table and every setting.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ..choose.candidates import describe_candidate
from ..choose.result import ReleaseResult
from .adaptive_attack import release_adaptive
from .export import before_after_examples, html_report, package_versions
from .protection import release_attack, release_audit, release_verdict
from .report_parts import (
    attack_table,
    audit_table,
    log_table,
    named_documents,
    protection_facts,
    report_columns,
)

#: Figures of the written candidate recorded in report.json (as generated).
WRITTEN_FIGURES = ("du", "dr", "du_mean", "du_sd", "dr_mean", "dr_sd", "draws", "words_unchanged",
                   "mean_cosine", "clusters_unchanged", "chunks_changed", "chunk_accuracy",
                   "document_accuracy")  # fmt: skip


def _number(value):
    try:
        return None if pd.isna(value) else (int(value) if isinstance(value, (bool, int)) else float(value))
    except TypeError:
        return value


def written(result: ReleaseResult) -> dict | None:
    """The release written and why, with its figures as generated and after review."""
    row, release, choice = result.row, result.release, result.choice
    if release is None or row is None:
        return None
    return {
        "release_id": choice.release_id, "why": choice.why, "reason": choice.reason,
        "sentence": describe_candidate(row), "sampler": row["sampler"],
        "as_generated": {k: _number(row[k]) for k in WRITTEN_FIGURES if k in row},
        "after_review": {k: _number(v) for k, v in release.measures.items()},
        "changes_generated": release.generated, "changes_rejected": release.rejected,
        "changes_written": len(release.changes), "seed": list(release.seed),
    }  # fmt: skip


def goal_report(result: ReleaseResult) -> dict | None:
    goal = result.choice.goal
    if goal is None:
        return None
    return {"goal": goal.goal.describe(), "utility": goal.goal.utility,
            "constraints": [{"column": c.column, "maximum": c.maximum}
                            for c in goal.goal.constraints],
            "release_id": goal.release_id, "met": goal.met, "figures": goal.figures,
            "sentence": result.choice.goal_sentence}  # fmt: skip


def review_summary(result: ReleaseResult) -> dict | str:
    """What the analyst's review (run.toml's ``decisions``) changed in the written release."""
    decisions, release = result.config.review.decisions, result.release
    if result.choice.why != "pinned" or release is None:
        return ("none applied: no release is pinned in run.toml, so every change of the chosen "
                "release is kept" + (f" ({len(decisions)} decisions ignored)" if decisions else ""))
    return {"release": release.release_id, "decisions": len(decisions),
            "rejected": sum(1 for d in decisions if d["decision"] == "reject"),
            "generated": release.generated, "left_out": release.rejected,
            "released": len(release.changes)}  # fmt: skip


def report_json(result: ReleaseResult, verdict: bool = False) -> dict:
    """key/report.json's contents; with ``verdict``, the written release's protection verdict
    (``release_verdict``, which measures the release: the writer asks for it after audit.json,
    so adding it changed no other key/ byte)."""
    ctx, sweep, table, line = result.context, result.sweep, result.candidates.table, result.choice.line
    mix = ctx.mixture
    return {
        "config": result.config.to_dict(),
        "versions": package_versions(),
        "documents": len(result.corpus),
        "chunks": len(ctx.chunks),
        "mixture": {"converged": bool(mix.converged_), "n_iter": int(mix.n_iter_),
                    "components_kept": int(mix.n_components_),
                    "lower_bound": float(mix.lower_bound_), "warnings": result.fit_warnings},
        "valid_pairs": sweep.valid_pair_counts(),
        "runs": sweep.messages(),
        "candidates": len(table),
        **({"measurement_sample": ctx.sample.to_dict()} if ctx.sample is not None else {}),
        "plan_candidates": int((table["sampler"] == "plan").sum()) if len(table) else 0,
        "written": written(result),
        "goal": goal_report(result),
        "goal_met": result.goal_met,
        "line": {"a": line.a, "c": line.c, "release_id": line.index, "reached": line.line_reached,
                 "message": line.message},
        "notes": result.notes,
        "no_release_reason": result.no_release_reason(),
        "review": review_summary(result),
        **({"verdict": _verdict_json(result)} if verdict else {}),
        **({"adaptive": adaptive} if verdict and (adaptive := release_adaptive(result)) else {}),
    }


def _verdict_json(result: ReleaseResult) -> dict | None:
    if result.release is None:
        return None
    verdict = release_verdict(result)
    return {"colour": verdict.colour, "headline": verdict.headline, "sentence": verdict.sentence,
            "met": verdict.met,
            "worst": {level: {"accuracy": w.value, "attacker": w.attacker}
                      for level, w in verdict.worst.items()}}


def _facts(result: ReleaseResult) -> dict[str, str]:
    prepared, release, row = result.context, result.written_release(), result.row
    facts = {"corpus": f"{len(result.corpus)} documents, {len(prepared.chunks)} passages",
             "release": f"{result.choice.release_id}: {describe_candidate(row)}",
             "why this release": result.choice.reason}
    review = review_summary(result)
    facts["your review"] = review if isinstance(review, str) else release.review_sentence()
    facts["DU and DR as generated"] = f"{row['du']:.5f} and {row['dr']:.4f}"
    after = release.measures
    facts["DU and DR after your review"] = f"{after['du']:.5f} and {after['dr']:.4f}"
    facts["seed of the release"] = ", ".join(map(str, release.seed))
    goal = result.choice.goal
    if goal is not None:
        facts["goal"] = (f"met: {goal.goal.describe()}" if result.goal_met else
                         result.choice.goal_sentence)
    if result.choice.line.message:
        facts["trade-off line"] = result.choice.line.message
    for note in result.notes:
        facts.setdefault("notes", note)
    return facts


def report_html(result: ReleaseResult, figures_html: Sequence[str] = ()) -> str:
    """key/report.html: the release in sentences, measured protection, examples, change log,
    candidates and Pitman tables, corrections, decisions and settings (module docstring)."""
    release, candidates = result.written_release(), result.candidates
    attack, attack_rows = release_attack(result)
    audit = release_audit(result)
    facts = _facts(result)
    facts.update(protection_facts(attack, audit))
    adaptive = release_adaptive(result)
    if adaptive is not None:
        facts["an attacker who runs neswap too"] = adaptive["sentence"] + " (key/adaptive.json)"
    tables: dict[str, pd.DataFrame] = {}
    for name, entry in (attack.get("attackers") or {}).items():
        tables[f"Re-identification attack (the paper's Table 2): {name} attacker"] = attack_table(entry)
    tables["Documents the attacker still names"] = named_documents(attack_rows)
    tables["Divergence audit per document (ε, KL)"] = audit_table(audit)
    title, log = log_table(release.log, release.log_name)
    tables[title] = log
    tables["Frontier releases (the trade-off line's candidates)"] = report_columns(
        candidates.frontier(), "candidates")
    tables["Pitman estimates per combination (the paper's Table 1)"] = result.sweep.pitman_table(
        result.config.sweep.population)
    tables["All candidates (every column in key/candidates.csv)"] = report_columns(
        candidates.table, "candidates")
    review = release.review
    decided = (review[~review["decision"].astype(str).str.startswith("not reviewed")]
               if len(review) else review)  # fmt: skip
    facts["changes you did not review"] = (f"{len(review) - len(decided)}: kept in the release "
                                           "(every change is listed in key/decisions.csv)")
    base = result.context.chunks
    chosen = f"{facts['release']}; {facts['your review']}"
    return html_report("neswap release report", chosen, facts, tables, list(figures_html),
                       settings=result.config.settings(), corrections=result.config.review.corrections,
                       decisions=decided, examples=before_after_examples(base, release.chunks),
                       verdict=release_verdict(result))
