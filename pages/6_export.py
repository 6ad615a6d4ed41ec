"""Step 6 · Export: the anonymised corpus, chunk tables, swap log, HTML report and run.toml."""

import streamlit as st

from appkit import views_frontier as vf
from appkit import views_release as vr
from appkit.state import current, run_config
from appkit.widgets import user_errors
from neswap_core.release.frontier import choose_release

st.title("6 · Export")
st.markdown(
    "Download the chosen release with your review applied: the anonymised transcripts in the "
    "layout you uploaded them in, the passages as a table, the log of every swap, and a report "
    "that records the settings, seeds and package versions so the release can be reproduced."
)

stage = current()
ws, s = stage.workspace, stage.settings
population, a, c = float(s["population"]), float(s["trade_off_a"]), float(s["trade_off_c"])

with user_errors():
    sweep = vr.ensure_sweep(stage)
    table = stage.table(population)
    corpus = stage.clean().corpus
if len(table) == 0:
    st.warning("There is no release to export: no combination had a valid pair to swap. Go back "
               "to **2 · Entities & roles** or **3 · Clusters**.")
    st.stop()

chosen_id, line = vr.pick_release(table, s.get("chosen_release"), a, c)
release = vr.reviewed_release(sweep, stage.sweep_key, table, chosen_id, ws.decisions, population)
du1, dr1 = release.after_review()
kept = len(release.accepted_positions)
st.success(f"**Release:** {vf.choice_sentence(table, chosen_id)}  \n**After your review:** "
           f"{kept} of {len(release.records)} pairs kept ({release.n_rejected} rejected): "
           f"DR {dr1:.3f}, DU {du1:.4f}")
st.caption("Change the release on **5 · Risk–utility frontier** and review its pairs on "
           "**4 · Swaps**.")

# --- downloads (built only when clicked) -----------------------------------------------------------
base = chosen_id.replace(" + ", "-").replace(" @ ", "-t").replace(" ", "_")
st.subheader("Downloads")
left, right = st.columns(2)
with left:
    st.download_button(
        "Anonymised corpus (.zip, same layout as the input)", key="dl_corpus",
        data=lambda: vr.corpus_zip(release, corpus), file_name=f"neswap-corpus-{base}.zip",
        mime="application/zip", on_click="ignore", type="primary", icon=":material/folder_zip:",
        help="One text file per transcript plus manifest.csv (or the CSV/JSONL table, or the "
        "Motley Fool JSON files, if that is what you uploaded).")
    st.download_button(
        "Passages (chunks) as CSV", key="dl_chunks_csv",
        data=lambda: vr.chunks_table(release, corpus).to_csv(index=False),
        file_name=f"neswap-chunks-{base}.csv", mime="text/csv", on_click="ignore",
        help="One row per passage: document, metadata, released text and its entities.")
    st.download_button(
        "Passages (chunks) as JSONL", key="dl_chunks_jsonl",
        data=lambda: vr.chunks_table(release, corpus).to_json(orient="records", lines=True,
                                                              force_ascii=False),
        file_name=f"neswap-chunks-{base}.jsonl", mime="application/jsonl", on_click="ignore")
with right:
    st.download_button(
        "Swap log (.csv, accepted pairs)", key="dl_swap_log",
        data=lambda: vr.swap_log_frame(release).to_csv(index=False),
        file_name=f"neswap-swap-log-{base}.csv", mime="text/csv", on_click="ignore",
        help="Which passages were paired, the entities exchanged, and your review note.")

    def report() -> str:
        fig = vf.frontier_figure(table, chosen_id, a, c, line_pick=line.index)
        return vr.report_html(release, s, table, stage.pitman(population), fig, line.message)

    st.download_button(
        "Report (.html, works offline)", key="dl_report", data=report,
        file_name=f"neswap-report-{base}.html", mime="text/html", on_click="ignore",
        help="Settings, seeds, package versions, the interactive frontier chart, the chosen "
        "release, the Pitman table, the swap log and your review decisions.")
    config_toml = run_config(s, corpus="data/sample" if stage.source == "sample"
                             else "PATH/TO/YOUR/FILES").to_toml()
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
