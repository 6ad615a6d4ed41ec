"""View helpers of the Export page: the released bundle of the reviewed release (SPEC §11).

The chosen release is a paper release (J @ t) or a plan release (several rounds, terms,
redaction; SPEC §10); either way its released chunks come from ``neswap_core.choose.chosen``
and its bundle from ``neswap_core.publish.bundle.build_bundle``, the functions the CLI's
``release`` command calls with the exported run.toml. This module gathers the app's key/ files
(swap log or plan changes with review notes, decisions, tables, report, run.toml, entity
corrections) and keeps the analyst's accepted leak-scan hits in the workspace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from neswap_core.choose.candidates import describe_candidate
from neswap_core.choose.chosen import (
    ChosenRelease,
    decision_rows,
    find_plan_release,
    paper_release,
    plan_identity,
    plan_release,
    rejected_keys,
)
from neswap_core.choose.frontier import describe_release
from neswap_core.config import IDENTIFYING_COLUMNS, RunConfig
from neswap_core.corpus import Corpus
from neswap_core.publish.bundle import Bundle, build_bundle
from neswap_core.publish.leaks import LeakHit

from . import views_release as vr
from .pipeline import digest

ACCEPTED_SETTING = "accepted_leaks"
#: Setting of a pinned plan release: {"release_id", "plan", "stage_index"} (its identity).
PLAN_SETTING = "chosen_plan"


def publishable_options(corpus: Corpus) -> list[str]:
    """Metadata columns the analyst may mark publishable (never the protected or identifying ones)."""
    columns = dict.fromkeys(k for d in corpus.documents for k in d.metadata)
    return [c for c in columns if c != corpus.protect and c.lower() not in IDENTIFYING_COLUMNS
            and "path" not in c.lower()]


def hit_id(hit: LeakHit) -> str:
    """Workspace key of one hit: document|chunk|identifier|case."""
    return "|".join(hit.key)


def accepted_keys(stored: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(s.split("|", 3)) for s in stored}


def hits_frame(hits: Sequence[LeakHit]) -> pd.DataFrame:
    return pd.DataFrame([{"document": h.document, "chunk": h.chunk, "identifier": h.identifier,
                          "kind": h.kind, "case": h.case, "own company": h.own_company,
                          "context": h.context} for h in hits])


# --- the release to export --------------------------------------------------------------------------
@dataclass
class Export:
    """The chosen release as the Export page writes it: released chunks, review, identity."""

    release_id: str
    source: str  # "paper" or "plan"
    sentence: str  # what it is, in words
    chosen: ChosenRelease
    decisions: dict[str, tuple[str, str]]  # the review decisions that determine it
    review: pd.DataFrame  # key/decisions.csv
    log_name: str  # "swap_log.csv" or "changes.csv"
    log: pd.DataFrame
    identity: dict = field(default_factory=dict)  # run.toml's release, release_plan, release_stage
    facts: dict = field(default_factory=dict)  # measures as generated and after review, seeds
    sweep: object = None  # the sweep (its ctx holds the pre-swap chunks)
    cache_key: str = ""

    def released_chunks(self) -> list:
        return list(self.chosen.chunks)

    @property
    def n_rejected(self) -> int:
        return self.chosen.rejected

    def review_sentence(self) -> str:
        c = self.chosen
        if self.source == "paper":
            return f"{c.generated - c.rejected} of {c.generated} pairs kept ({c.rejected} rejected)"
        text = f"{c.generated} changes as generated ({c.rejected} rejected)"
        if c.rejected:  # the plan is replayed without them: later draws can differ
            text += f"; replayed without them, the plan makes {len(c.changes)} changes"
        return text

    def run_config(self, settings: dict, corpus: str, corrections: list) -> RunConfig:
        """run.toml: the settings, corrections, decisions and this release's identity."""
        from .state import run_config

        return run_config(settings, corpus=corpus, corrections=corrections,
                          decisions=decision_rows(self.decisions), **self.identity)


def paper_export(release: vr.ReviewedRelease, stage) -> Export:
    """The Export of a paper release under review (``views_release.ReviewedRelease``)."""
    chosen = paper_release(release.sweep, release.row, rejected_keys(decision_rows(release.decisions)))
    du0, dr0 = release.as_generated()
    du1, dr1 = release.after_review()
    facts = {"released draw seed (seed, combination, draw)": ", ".join(map(str, release.draw.seed)),
             "DU and DR as generated": f"{du0:.5f} and {dr0:.4f}",
             "DU and DR after your review": f"{du1:.5f} and {dr1:.4f}"}
    return Export(
        release_id=str(release.row["release_id"]), source="paper",
        sentence=describe_release(release.row), chosen=chosen, decisions=dict(release.decisions),
        review=vr.review_frame(release), log_name="swap_log.csv", log=vr.swap_log_frame(release),
        identity={"release": str(release.row["release_id"])}, sweep=release.sweep, facts=facts,
        cache_key=digest([release.key, sorted(release.decisions.items())]),
    )


def plan_export(plans, release_id: str, stage) -> Export:
    """The Export of a plan candidate with the content-keyed decisions of the workspace."""
    from .views_plans import ReviewedPlan, review_frame

    decisions = stage.workspace.decisions(stage.review_key)
    review = ReviewedPlan(plans, release_id, decisions)
    chosen = plan_release(plans, release_id, review.rejected)
    frame = review_frame(review)
    plan, index = plan_identity(plans, release_id)
    row = plans.table.loc[release_id]
    after = review.measures_after
    facts = {"plan": row["description"],
             "DU and DR as generated": f"{row['du']:.5f} and {row['dr']:.4f}",
             "DU and DR after your review": f"{after['du']:.5f} and {after['dr']:.4f}",
             "words unchanged after your review": f"{100 * after['words_unchanged']:.1f} %",
             "passages changed after your review": f"{100 * after['chunks_changed']:.1f} %",
             "seed": str(stage.settings.get("seed", 0))}
    return Export(
        release_id=release_id, source="plan", sentence=describe_candidate(row), chosen=chosen,
        decisions=dict(decisions), review=frame, log_name="changes.csv",
        log=pd.DataFrame([c.to_dict() for c in chosen.changes]),
        identity={"release": release_id, "release_plan": plan, "release_stage": index},
        sweep=stage.sweep(), facts=facts,
        cache_key=digest([stage.plans_key, plan, index, sorted(decisions.items())]),
    )


def pinned_plan(stage, plans) -> str | None:
    """The plan release the analyst pinned, found by its plan and stage (None if none or gone)."""
    pinned = stage.settings.get(PLAN_SETTING) or {}
    if plans is None or pinned.get("release_id") != stage.settings.get("chosen_release"):
        return None
    return find_plan_release(plans, pinned.get("plan", {}), int(pinned.get("stage_index", 0)))


def pin_plan(ws, plans, release_id: str) -> None:
    """Pin a plan candidate for export: its id for the pages, its plan and stage as identity."""
    from .state import save_settings

    plan, index = plan_identity(plans, release_id)
    save_settings(ws, chosen_release=release_id,
                  **{PLAN_SETTING: {"release_id": release_id, "plan": plan, "stage_index": index}})


# --- key/ files and the bundle ------------------------------------------------------------------------
def key_files(export: Export, stage, table: pd.DataFrame, pitman: pd.DataFrame,
              report_html: str, config_toml: str, candidates: pd.DataFrame | None = None) -> dict[str, bytes]:
    """The app's key/ files besides those build_bundle adds (pseudonyms, chunks, leaks, TAB)."""
    corrections = [dict(c) for c in stage.workspace.corrections()]
    files = {
        export.log_name: export.log.to_csv(index=False).encode(),
        "decisions.csv": export.review.to_csv(index=False).encode(),
        "releases.csv": table.to_csv(index=False).encode(),
        "pitman.csv": pitman.to_csv(index=False).encode(),
        "report.html": report_html.encode(),
        "config.toml": config_toml.encode(),
        "corrections.json": (json.dumps(corrections, indent=2, default=str) + "\n").encode(),
    }
    if candidates is not None:
        files["candidates.csv"] = candidates.to_csv(index=False).encode()
    return files


def release_bundle(export, stage, settings: dict) -> Bundle:
    """The bundle of the release to export (no key/ extras: add them with ``with_key_files``).

    ``export``: an ``Export`` (or a ``views_release.ReviewedRelease``, made one). Cached on the
    release, its decisions and the bundle settings: the leak scan and the TAB diff run once per
    change, not on every rerun of the page.
    """
    if isinstance(export, vr.ReviewedRelease):
        export = paper_export(export, stage)
    options = (int(settings.get("bundle_seed", 0)), bool(settings.get("shuffle_chunks", False)),
               tuple(settings.get("publishable_columns", [])))
    key = digest([export.cache_key, options])
    return _bundle(key, export, stage, options)


@st.cache_resource(show_spinner="Scanning the release for leaks…", max_entries=8)
def _bundle(key: str, _export: Export, _stage, options: tuple) -> Bundle:
    seed, shuffle, columns = options
    return build_bundle(_stage.corpus(), _stage.clean().corpus, _export.released_chunks(),
                        seed=seed, shuffle_chunks=shuffle, publishable_columns=list(columns))


# --- the HTML report ------------------------------------------------------------------------------------
def report_html(export: Export, config: RunConfig, table: pd.DataFrame, pitman: pd.DataFrame,
                figure, choice_message: str = "", protection: tuple[dict, dict] | None = None,
                candidates: pd.DataFrame | None = None) -> str:
    """The release report: the release and its review in sentences, before/after examples,
    corrections, decisions, measured protection (``views_check.protection_report``), the
    frontier and tables with plain labels, the settings of run.toml (publish/export.py)."""
    from neswap_core.choose.frontier import frontier_mask
    from neswap_core.publish.export import before_after_examples, html_report
    from neswap_core.publish.report_parts import log_table, report_columns

    facts = {"release": export.sentence, "your review": export.review_sentence(), **export.facts}
    if choice_message:
        facts["trade-off line"] = choice_message
    if protection is not None:
        facts.update(protection[0])
    front = table[frontier_mask(table["du"].to_numpy(float), table["dr"].to_numpy(float))]
    title, log = log_table(export.log, export.log_name)
    tables = {**(protection[1] if protection is not None else {}), title: log,
              "Frontier releases": report_columns(front, "releases"),
              "Pitman estimates per combination (the paper's Table 1)": pitman}
    if candidates is not None and len(candidates):
        tables["Plan candidates"] = report_columns(candidates[candidates["source"] == "plan"],
                                                   "releases")
    tables["All paper releases (every column in key/releases.csv)"] = report_columns(table,
                                                                                     "releases")
    chart = "<h2>Risk–utility frontier</h2>" + figure.to_html(
        include_plotlyjs=True, full_html=False, default_width="100%", config={"responsive": True},
        div_id="neswap-frontier")  # a fixed id: the same release gives the same report
    chosen = f"{export.sentence}; after your review {export.review_sentence()}"
    base = export.sweep.ctx.chunks
    review = export.review
    decided = review[~review["decision"].astype(str).str.startswith("not reviewed")] if len(review) else review
    facts["changes you did not review"] = (f"{len(review) - len(decided)}: kept in the release "
                                           "(every change is listed in key/decisions.csv)")
    return html_report("neswap release report", chosen, facts, tables, [chart],
                       settings=config.to_dict(), corrections=config.corrections,
                       decisions=decided, examples=before_after_examples(base, export.chosen.chunks))
