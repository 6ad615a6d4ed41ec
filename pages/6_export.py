"""Step 6 · Export: the released bundle (released/ may be shared, key/ stays), leak scan, run.toml."""

import re

import streamlit as st

from appkit import choice_view as cv
from appkit import verdict_view as vv
from appkit import views_export as ve
from appkit import views_frontier as vf
from appkit import views_release as vr
from appkit.corpus_checks import show_corpus_problems
from appkit.state import corpus_fingerprint, current, save_settings
from appkit.widgets import fmt_number, md_text, paginate, user_errors
from neswap_core import describe_candidate
from neswap_core.publish.bundle import FOLDER_PURPOSE

st.title("6 · Export")
st.markdown(
    "Download the chosen release with your review applied, as two folders: `released/`, the "
    "anonymised transcripts under random ids, and `key/`, everything that links them back to "
    "the companies (with the report that records settings, seeds and versions)."
)

stage = current()
ws, s = stage.workspace, stage.settings
show_corpus_problems(stage)
population, a, c = float(s["population"]), float(s["trade_off_a"]), float(s["trade_off_c"])

sweep, table = vr.sweep_table_or_stop(stage, population, "export")
with user_errors():  # the core's choice (pinned, goal or line) and its result, as the CLI's
    app = cv.app_choice(stage, vr.progress_bar("Measuring every candidate"), measure=True)
if app.release_id is None:
    st.warning(f"There is no release to export. {md_text(cv.plain(app.choice.reason))}")
    st.stop()
if s.get("chosen_release") and app.choice.why != "pinned":
    st.warning("The release you pinned is not among the candidates of the current settings any "
               "more; the release your goal or trade-off line chooses is exported instead. Pin a "
               "release again on **4 · Swaps** or **5 · Risk–utility frontier**.")
chosen_id, line = app.release_id, app.choice.line
with user_errors():
    export = ve.export_for(stage, app)
row, after = export.result.row, export.result.release.measures
with user_errors():
    verdict = ve.verdict_of(export)
vv.show(verdict, key="export_verdict")
vv.remember(ws, corpus_fingerprint(s), export.release_id, verdict, "6 · Export, as written")
st.info(f"**Release:** {md_text(export.release_id)} · {md_text(describe_candidate(row))}  \n"
        "**After your review:** "
        f"{export.review_sentence()}: model risk DR {fmt_number(after['dr'], 4)}, utility DU "
        f"{fmt_number(after['du'], 4)}", icon=":material/description:")
st.markdown(app.why_sentence())
if app.goal_missed:
    st.warning(f"**Goal not met:** {md_text(cv.plain(app.choice.goal_sentence))}", icon=":material/flag:")
st.caption("Change the release on **5 · Risk–utility frontier** or **4 · Swaps** (plans too) and "
           "review its changes on **4 · Swaps**.")
if ve.adaptive_applies_to(export):
    with st.expander("Against an attacker who runs neswap too"):
        st.markdown(
            "The verdict above is judged against the attacker panel, which reads the other texts "
            "of these companies as they are. An attacker who knows neswap can run this same "
            "document defence on that reading and train on the result: the words exchanged "
            "between documents then stop pointing elsewhere. This measures the release against "
            "that attacker (word, character and whole-document retrieval models). It changes "
            "nothing in the release; the download's key/ holds the same figures (adaptive.json).")
        measured = st.session_state.get("ex_adaptive_for") == export.cache_key
        if st.button("Measure against the adaptive attacker", key="ex_adaptive_run",
                     help="About a minute the first time on a corpus of a few dozen calls; then "
                     "kept.") or measured:
            with user_errors(stop=False):
                figures = ve.adaptive_of(export)
                if figures is not None:
                    st.session_state["ex_adaptive_for"] = export.cache_key
                    st.warning(figures["sentence"], icon=":material/report:")
                    st.dataframe(ve.adaptive_frame(figures), hide_index=True, width="stretch")

# --- the released bundle (SPEC §11) ----------------------------------------------------------------
st.subheader("What you download")
st.markdown(
    f"- **`released/`** — {FOLDER_PURPOSE['released']}\n"
    f"- **`key/`** — {FOLDER_PURPOSE['key']}\n\n"
    "Only `released/` may go to an LLM or anyone else."
)
with st.expander("Released documents: ids, manifest columns, chunk order"):
    options = ve.publishable_options(stage.corpus())
    columns = st.multiselect(
        "Metadata columns to publish in released/manifest.csv", options, key="ex_publishable",
        default=[c for c in s.get("publishable_columns", []) if c in options],
        help="The protected column, company/ticker columns, ids and source paths are never "
        "offered. Each published value is leak-scanned too.")
    shuffle = st.checkbox(
        "Shuffle the chunk order within each document", key="ex_shuffle",
        value=bool(s.get("shuffle_chunks", False)),
        help="Hides the flow of the call (and with it some clues to the company) at the cost of "
        "readability. The order is a seeded random permutation, recorded in key/.")
    save_settings(ws, publishable_columns=columns, shuffle_chunks=shuffle)
    export = export.with_bundle_options(publishable_columns=columns, shuffle_chunks=shuffle)
with user_errors():
    bundle = ve.release_bundle_of(export)

stored = list(s.get(ve.ACCEPTED_SETTING, []))
accepted = ve.accepted_keys(stored)
if bundle.hits:
    accepted = ve.leak_gate(ws, stored, bundle.hits)
else:
    st.success("Leak scan: no company name, alias, ticker, web domain or executive name was "
               "found in the released text.", icon=":material/policy:")
blocking = bundle.blocking(accepted)

base = "neswap-" + re.sub(r"[^A-Za-z0-9]+", "-", chosen_id.replace(" @ ", " t")).strip("-")


config_toml = export.config.to_toml()


def chart():
    return vf.frontier_figure(table, chosen_id if chosen_id in table.index else None, a, c,
                              line_pick=line.index)


def report() -> str:
    """The release report (also in key/), with the frontier chart."""
    return ve.report_with_chart(export, stage, chart())


def key_zip() -> bytes:
    return bundle.with_key_files(ve.key_files_of(export, stage, chart())).key_zip(accepted)


left, right = st.columns(2)
with left:
    st.download_button(
        "released/ (.zip) — may be shared", key="dl_released", data=bundle.released_zip,
        file_name=f"{base}-released.zip", mime="application/zip", on_click="ignore",
        type="primary", icon=":material/folder_zip:", disabled=bool(blocking),
        help="Documents under random ids in the layout you uploaded, and a manifest with only "
        "the columns you chose to publish. No swap log, no per-chunk metadata.")
    if blocking:
        st.caption(f"{len(blocking)} leak-scan hit(s) not accepted yet.")
with right:
    st.download_button(
        "key/ (.zip) — stays with you", key="dl_key", data=key_zip,
        file_name=f"{base}-key.zip", mime="application/zip", on_click="ignore",
        icon=":material/key:",
        help="Pseudonym → document and company, chunks, swap log with your notes, decisions, "
        "releases and Pitman tables, the HTML report, run.toml, entity corrections, the leak "
        "list and the changed spans in TAB format.")
    st.download_button("Run configuration for the command line (run.toml)", key="dl_config",
                       data=config_toml, file_name="run.toml", mime="application/toml",
                       on_click="ignore")
    st.download_button("Report (report.html, also in key/)", key="dl_report", data=report,
                       file_name=f"{base}-report.html", mime="text/html", on_click="ignore",
                       help="The release and your review in sentences, before/after examples, "
                       "corrections, decisions, the measured protection, the frontier and the "
                       "settings. It names companies: it stays with you, like key/.")

# --- reproducing with the CLI ----------------------------------------------------------------------
st.subheader("Reproduce with the command line")
command = "python -m neswap_core release --config run.toml --out neswap-out"
if bundle.hits:  # the accepted hits travel as a file, as on the command line
    command += " \\\n    --accept-leaks key/leaks.csv   # key/leaks.csv from the key/ download"
st.code(command, language="bash")
notes = [f"run.toml pins this release ({md_text(export.release_id)}"
         + (", found by its plan and stage" if export.pinned_plan else "")
         + f") and holds your {len(stage.corrections())} entity correction(s) and "
         f"{len(export.config.review.decisions)} review decision(s): the command line writes the same "
         "released/ files. (With `release = \"\"` the command line chooses as this page does "
         "when nothing is pinned: " + (f"your goal's release ({md_text(app.choice.goal.release_id)})"
                                        if app.choice.goal is not None and app.choice.goal.release_id
                                        else f"the pick of your trade-off line DR = {c:g} + {a:g}·DU")
         + ".)"]
if stage.source != "sample":
    notes.append("Replace `PATH/TO/YOUR/FILES` in run.toml by the folder or file you uploaded.")
if len(notes) > 1:
    st.warning("  \n".join(notes))
else:
    st.info(notes[0])
with st.expander("run.toml"):
    st.code(config_toml, language="toml")

with st.expander(f"Review decisions ({export.review_sentence()})"):
    st.dataframe(paginate(export.result.release.review, "review_page", 500, "changes"),
                 hide_index=True, width="stretch")
