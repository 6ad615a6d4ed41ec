"""The protection verdict on screen (issue 20): the core's ``choose.verdict`` in one coloured box,
the analyst's goal as two plain inputs, and the last verdict kept for the sidebar.

Every page that shows a release computes its verdict with the core (the Export page on the text
as written after the review, the same as key/report.html) and stores it with the release id and
the corpus it belongs to; the sidebar, drawn after the page, shows it when it is about the
release in use, so the sidebar and the page never disagree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import streamlit as st

from neswap_core.choose.goals import Goal
from neswap_core.choose.verdict import GREEN, GREY, ORANGE, RED, Verdict, protection_verdict

from .widgets import md_text

#: Streamlit call and material icon per colour (no emoji font needed).
BOXES = {GREEN: ("success", ":material/verified_user:"), ORANGE: ("warning", ":material/help:"),
         RED: ("error", ":material/gpp_bad:"), GREY: ("info", ":material/hourglass_empty:")}
#: Sidebar text colour per verdict colour (Streamlit markdown colours).
MARKDOWN_COLOURS = {GREEN: "green", ORANGE: "orange", RED: "red", GREY: "gray"}
ARTIFACT = "verdict"
#: Goal settings the app offers: RunConfig setting -> (label, what it bounds). The document
#: bound appears once the configuration has it (issue 22's ``max_document_accuracy``).
GOAL_INPUTS = {
    "max_chunk_accuracy": ("Most passages an attacker may name (%)", "passages"),
    "max_document_accuracy": ("Most documents an attacker may name (%)", "documents"),
}


def show(verdict: Verdict, key: str | None = None) -> None:
    """The verdict in its colour, with its headline and sentence."""
    call, icon = BOXES[verdict.colour]
    box = st.container(key=key) if key else st.container()
    getattr(box, call)(_bold_head(verdict.sentence), icon=icon)


def _bold_head(sentence: str) -> str:
    """"**Goal missed:** the outside reader names …" (the clause before the first colon bold)."""
    head, sep, rest = sentence.partition(": ")
    return f"**{md_text(head)}:** {md_text(rest)}" if sep else md_text(sentence)


def sidebar_line(verdict: Verdict) -> str:
    """One markdown line for the sidebar: the headline in colour and the sentence."""
    colour = MARKDOWN_COLOURS[verdict.colour]
    head, sep, rest = verdict.sentence.partition(": ")
    if not sep:
        head, rest = verdict.headline, verdict.sentence
    return f":{colour}[**{md_text(head)}:**] {md_text(rest)}"


def goal_of(settings) -> Goal | None:
    """The analyst's goal from the app's settings (the RunConfig the Export page writes)."""
    return Goal.from_config(settings.config)


def figures_of_measures(measures: Mapping[str, object]) -> dict:
    """Verdict figures from ``AttackMeasures`` per attacker name (the Check page's attacker)."""
    figures: dict = {}
    for name, m in measures.items():
        figures[f"chunk_accuracy.{name}"] = m.chunk_top1
        figures[f"document_accuracy.{name}"] = m.document_accuracy
        figures["chance"], figures["n_documents"] = m.chance, m.n_documents
    return figures


def verdict_of(figures: Mapping, settings) -> Verdict:
    return protection_verdict(figures, goal_of(settings))


def remember(ws, fingerprint: str, release_id: str, verdict: Verdict, where: str) -> None:
    """Keep the verdict of ``release_id`` for the sidebar (per corpus), when it changed."""
    payload = json.dumps({"release_id": release_id, "colour": verdict.colour, "where": where,
                          "sentence": verdict.sentence, "met": verdict.met}).encode()
    if ws.get_artifact(ARTIFACT, fingerprint) != payload:
        ws.put_artifact(ARTIFACT, fingerprint, payload)


def remembered(ws, fingerprint: str, release_id: str | None) -> tuple[Verdict, str] | None:
    """(verdict, page it was measured on) of ``release_id``, if a page measured it."""
    raw = ws.get_artifact(ARTIFACT, fingerprint)
    if not raw or release_id is None:
        return None
    data = json.loads(raw)
    if data.get("release_id") != release_id:
        return None
    return Verdict(data["colour"], data["sentence"], data.get("met"), {}), data.get("where", "")


def goal_inputs(ws, settings, save) -> None:
    """The goal as percentages (100 = no bound); ``save(ws, **values)`` stores a change."""
    present = [k for k in GOAL_INPUTS if k in settings.config.settings()]
    columns = st.columns(len(present))
    for column, name in zip(columns, present, strict=True):
        label, what = GOAL_INPUTS[name]
        key = f"goal_{name}"
        st.session_state[key] = round(100 * float(settings[name]), 1)

        def store(name: str = name, key: str = key) -> None:
            save(ws, **{name: round(float(st.session_state[key]) / 100, 4)})

        column.number_input(label, 0.0, 100.0, step=5.0, format="%.0f", key=key, on_change=store,
                            help=f"The release must let the strongest attacker name at most this "
                            f"share of {what}; 100 sets no bound. The verdict is green only when "
                            "every bound is met.")
