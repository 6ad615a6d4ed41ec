"""Step 6 · Export: the released bundle (released/ may be shared, key/ stays), leak scan, run.toml."""

import streamlit as st

from appkit import views_check as vc
from appkit import views_export as ve
from appkit import views_frontier as vf
from appkit import views_release as vr
from appkit.corpus_checks import show_corpus_problems
from appkit.state import current, run_config, save_settings
from appkit.widgets import user_errors
from neswap_core.errors import NeswapError
from neswap_core.release.bundle import FOLDER_PURPOSE
from neswap_core.release.frontier import choose_release

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
with user_errors():
    corpus = stage.clean().corpus

chosen_id, line = vr.pick_release(table, s.get("chosen_release"), a, c)
release = vr.reviewed_release(sweep, stage.sweep_key, table, chosen_id, ws.decisions, population)
du1, dr1 = release.after_review()
kept = len(release.accepted_positions)
st.success(f"**Release:** {vf.choice_sentence(table, chosen_id)}  \n**After your review:** "
           f"{kept} of {len(release.records)} pairs kept ({release.n_rejected} rejected): "
           f"DR {dr1:.3f}, DU {du1:.4f}")
st.caption("Change the release on **5 · Risk–utility frontier** and review its pairs on "
           "**4 · Swaps**.")

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
    s = {**s, "publishable_columns": columns, "shuffle_chunks": shuffle}
with user_errors():
    bundle = ve.release_bundle(release, stage, s)

stored = list(s.get(ve.ACCEPTED_SETTING, []))
accepted = ve.accepted_keys(stored)
if bundle.hits:
    st.warning(f"The leak scan found {len(bundle.hits)} company identifier(s) in the released "
               "text. `released/` can be downloaded only after you accept each one (or fix the "
               "text with entity corrections on **2 · Entities & roles**).")
    st.dataframe(ve.hits_frame(bundle.hits), hide_index=True, width="stretch")
    chosen = []
    for k, hit in enumerate(bundle.hits):
        if st.checkbox(f"Accept: {hit.sentence()}", key=f"leak_{k}", value=hit.key in accepted):
            chosen.append(ve.hit_id(hit))
    keep = [x for x in stored if x not in {ve.hit_id(h) for h in bundle.hits}] + chosen
    if sorted(keep) != sorted(stored):
        save_settings(ws, **{ve.ACCEPTED_SETTING: keep})
    accepted = ve.accepted_keys(keep)
else:
    st.success("Leak scan: no company name, alias, ticker, web domain or executive name was "
               "found in the released text.")
blocking = bundle.blocking(accepted)

base = "neswap-" + chosen_id.replace(" + ", "-").replace(" @ ", "-t").replace(" ", "_")


def key_zip() -> bytes:
    fig = vf.frontier_figure(table, chosen_id, a, c, line_pick=line.index)
    try:
        protection = vc.protection_report(stage, release)
    except NeswapError as exc:  # the report still records why protection was not measured
        protection = ({"measured protection": f"not measured: {exc}"}, {})
    html = vr.report_html(release, s, table, stage.pitman(population), fig, line.message,
                          protection)
    extra = ve.key_files(release, stage, table, stage.pitman(population), html, config_toml)
    return bundle.with_key_files(extra).key_zip(accepted)


config_toml = run_config(s, corpus="data/sample" if stage.source == "sample"
                         else "PATH/TO/YOUR/FILES", corrections=stage.corrections()).to_toml()
left, right = st.columns(2)
with left:
    st.download_button(
        "released/ (.zip) — may be shared", key="dl_released", data=bundle.released_zip(),
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

# --- reproducing with the CLI ----------------------------------------------------------------------
st.subheader("Reproduce with the command line")
st.code("python -m neswap_core release --config run.toml --out neswap-out", language="bash")
notes = ["The command line picks the release with your trade-off line "
         f"(DR = {c:g} + {a:g}·DU) and keeps every pair of it."]
cli_pick = choose_release(table, a, c).index
if cli_pick != chosen_id:
    notes.append(f"Your release ({chosen_id}) is not the line's pick ({cli_pick}): the command "
                 "line would write the line's pick. Move the line on the frontier page until it "
                 "picks your release, or keep using the app's export.")
if release.n_rejected:
    notes.append(f"Your {release.n_rejected} rejected pair(s) are **not** in run.toml: review "
                 "decisions live only in the workspace and in the report above.")
if stage.source != "sample":
    notes.append("Replace `PATH/TO/YOUR/FILES` in run.toml by the folder or file you uploaded.")
if len(notes) > 1:
    st.warning("  \n".join(notes))
else:
    st.info(notes[0])
with st.expander("run.toml"):
    st.code(config_toml, language="toml")

with st.expander(f"Review decisions ({len(release.records) - release.n_rejected} kept, "
                 f"{release.n_rejected} rejected)"):
    st.dataframe(vr.review_frame(release), hide_index=True, width="stretch")
