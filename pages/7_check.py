"""Step 7 · Check: the chosen release's measured protection — the re-identification attack
(the paper's Tables 2 and 3) and the divergence audit with its (ε, δ) (SPEC §8, §9)."""

import os

import streamlit as st

from appkit import choice_view as cv
from appkit import views_check as vc
from appkit import views_frontier as vf
from appkit import views_llm as vl
from appkit import views_panel as vp
from appkit import views_release as vr
from appkit.corpus_checks import show_corpus_problems
from appkit.state import current
from appkit.widgets import delta, fmt_number, user_errors
from neswap_core.measure.audit import epsilon_reading
from neswap_core.measure.llm import ENV_KEY, ENV_MODEL, ENV_URL

st.title("7 · Check")
st.markdown(
    "Does the chosen release actually protect the companies? Two kinds of evidence, both on the "
    "release you picked on **5 · Risk–utility frontier** with your review from **4 · Swaps**: "
    "an **attacker** that tries to name the company of each passage and of each whole document, "
    "and a **divergence audit** that measures how far each document's passages still are from "
    "all the others, turned into a differential-privacy style (ε, δ)."
)

stage = current()
ws, s = stage.workspace, stage.settings
show_corpus_problems(stage)
population, a, c = float(s["population"]), float(s["trade_off_a"]), float(s["trade_off_c"])

sweep, table = vr.sweep_table_or_stop(stage, population, "check")

chosen_id, not_in_use = cv.release_in_use(stage, table)  # the core's choice (choice_view)
if not_in_use:
    st.info(not_in_use, icon=":material/info:")
release = vr.reviewed_release(sweep, stage.sweep_key, table, chosen_id, ws.decisions, population)
changed = vc.changed_chunks(release)
st.success(f"**Release checked:** {vf.choice_sentence(table, chosen_id)}  \n"
           f"{len(release.accepted_positions)} of {len(release.records)} pairs kept after your "
           f"review; {len(changed)} of {len(release.sweep.ctx.chunks)} passages changed.")

# --- the re-identification attack (SPEC §8) -------------------------------------------------------------
st.subheader("Re-identification attack: can the company still be named?")
with st.expander("Attacker reading (optional): other texts of the same companies"):
    st.markdown(
        "Upload what an outside reader may have read about these companies — e.g. their calls "
        "from other quarters — as `.txt` files with a `manifest.csv` (same columns as your "
        "corpus, including the protected column), or one CSV/JSONL table. Names are suppressed "
        "the same way as in your corpus. Without it, the in-corpus attacker is used.")
    reading_files = st.file_uploader("Attacker reading files", accept_multiple_files=True,
                                     key="ck_reading_files")
    use_col, drop_col = st.columns(2)
    if use_col.button("Use these texts as the attacker reading", key="ck_reading_use",
                      disabled=not reading_files):
        with user_errors(stop=False):
            n_read = vc.store_reading(stage, [(f.name, f.getvalue()) for f in reading_files])
            st.success(f"The attacker now reads {n_read} document(s) of other texts.")
    if vc.uploaded_reading(stage) is not None and drop_col.button(
            "Stop using the uploaded reading", key="ck_reading_drop"):
        vc.forget_reading(stage)
        st.rerun()
with user_errors(stop=False):
    att = vc.attack(stage)
    before, after = vc.measures(att, changed)
    st.markdown(att.note)
    st.info(vc.accuracy_sentence(att, before, after))
    cols = st.columns(4)
    cols[0].metric("Passages named", vc.pct(after.chunk_top1),
                   delta=delta(after.chunk_top1 - before.chunk_top1, 1, " points", 100), delta_color="inverse",
                   help="Share of all released passages whose company the attacker names first; "
                   "the change is against the same attacker on the original text.")
    cols[1].metric("Changed passages named", vc.pct(after.changed_post_top1),
                   delta=(delta(after.changed_post_top1 - after.changed_pre_top1, 1, " points", 100)
                          if after.n_changed else None), delta_color="inverse",
                   help="The same, only over the passages this release changed (the paper's "
                   "Table 2): before → after the swaps.")
    cols[2].metric("Documents named", f"{after.documents_named} of {after.n_documents}",
                   delta=delta(after.documents_named - before.documents_named, 0), delta_color="inverse",
                   help="Documents whose company the attacker names when it reads all their "
                   "released passages together, as an LLM reading a whole transcript would.")
    cols[3].metric("McNemar p", fmt_number(after.mcnemar_p),
                   help="Exact McNemar test on the changed passages: a p below 0.05 means the "
                   "release really changed what the attacker gets right.")
    left, right = st.columns([3, 2])
    with left:
        st.markdown("**Accuracy before and after the release** (the paper's Table 2)")
        st.dataframe(vc.accuracy_table(before, after), hide_index=True, width="stretch")
    with right:
        st.markdown("**Changed passages, before × after** (the paper's Table 3)")
        st.dataframe(vc.mcnemar_table(after), width="stretch")
        st.caption(vc.mcnemar_sentence(after))

    st.subheader("To do: documents the attacker still names")
    todo = vc.todo_list(after)
    if len(todo) == 0:
        st.success("After this release the attacker names none of the documents.")
    else:
        st.markdown(f"Reading all released passages of a document, the attacker still names "
                    f"**{len(todo)} of {after.n_documents}** documents. The surest first; pick one "
                    "to see the passages that gave it away and the words that weighed most.")
        st.dataframe(todo, hide_index=True, width="stretch",
                     column_config={todo.columns[2]: st.column_config.NumberColumn(format="%.1f")})
        doc_id = st.selectbox("Document to inspect", todo["document"].tolist(), key="check_todo_document")
        passages, words = vc.document_evidence(att, changed, [c.chunk_id for c in release.sweep.ctx.chunks],
                                               doc_id)
        left, right = st.columns([3, 1])
        with left:
            st.markdown("**Passages that gave it away** (released text, most telling first)")
            st.dataframe(passages, hide_index=True, width="stretch", column_config={
                "probability of the true company": st.column_config.ProgressColumn(
                    format="%.2f", min_value=0.0, max_value=1.0),
                "text": st.column_config.TextColumn(width="large")})
        with right:
            st.markdown("**Words that weighed most**")
            st.dataframe(words, hide_index=True, width="stretch",
                         column_config={"weight": st.column_config.NumberColumn(format="%.2f")})
        st.caption("Weight: over the document's released passages, the sum of each term's tf-idf "
                   "times the attacker's coefficient for the true company. Candidates for a "
                   "term swap or redaction on **4 · Swaps**.")

# --- the attacker panel (SPEC §12) -----------------------------------------------------------------
st.subheader("Every kind of attacker: the attacker panel")
with user_errors(stop=False):
    panel = vp.panel(stage)
    if panel is None:
        st.info("The attacker panel needs an attacker reading (other texts of the same companies, "
                "uploaded above). Without one, only the in-corpus attacker measures this release.")
    else:
        st.markdown(
            "Protection that fools one kind of model may not fool another. These attackers all "
            "read the same other texts of the companies but look at different things: the words, "
            "the character sequences, the meaning of each passage, or the whole document at once "
            "(retrieval). The release is only as safe as the **worst** of them (highlighted).")
        measured = vp.measures(panel, changed)
        st.warning(vp.panel_sentence(measured))
        st.dataframe(vp.panel_styled(measured), hide_index=True, width="stretch")
        named = vp.named_by_any(measured)
        if len(named) == 0:
            st.success("After this release no attacker of the panel names any document.")
        else:
            st.markdown(f"**{len(named)} documents are still named by at least one attacker.** "
                        "Pick one to see the words and phrases that give it away.")
            st.dataframe(named, hide_index=True, width="stretch")
            panel_doc = st.selectbox("Document named by the panel", named["document"].tolist(),
                                     key="check_panel_document")
            st.dataframe(vp.naming_words(panel, measured, changed, panel_doc), hide_index=True,
                         width="stretch")
            st.caption("Retrieval: the words and two-word phrases that add most to the document's "
                       "similarity with its company's other texts. Word and character models: "
                       "the features with the largest weight for the true company.")

# --- the optional LLM attacker (SPEC §8) ------------------------------------------------------------
with st.expander("LLM attacker (optional): ask a chat model to name the company"):
    st.markdown(
        "Sends passages to an OpenAI-compatible chat endpoint with the paper's prompt (\"guess "
        "the company… reply only with the ticker\") and counts how often its answer is right. "
        "**The text leaves this machine** unless the endpoint runs here (e.g. a local model "
        "server on 127.0.0.1). Nothing is sent until you confirm; answers are cached, so asking "
        "again sends nothing new. The API key stays in this browser session and is never saved.")
    url_col, model_col = st.columns(2)
    llm_url = url_col.text_input("Endpoint URL", key="ck_llm_url",
                                 value=os.environ.get(ENV_URL, ""),
                                 placeholder="http://127.0.0.1:8000/v1")
    llm_model = model_col.text_input("Model", key="ck_llm_model",
                                     value=os.environ.get(ENV_MODEL, ""))
    key_col, rate_col = st.columns(2)
    llm_key = key_col.text_input("API key (if the endpoint needs one)", type="password",
                                 key="ck_llm_key", value=os.environ.get(ENV_KEY, ""))
    llm_rate = rate_col.number_input("Requests per minute", min_value=1, max_value=6000,
                                     value=60, step=10, key="ck_llm_rate")
    llm = vl.llm_settings(llm_url, llm_model, llm_key, llm_rate)
    n_documents = len(stage.clean().corpus.documents)
    if llm.enabled and not llm.stays_on_this_machine:
        st.warning(f"{llm.endpoint} is not on this machine: the passages will leave it.")
    confirmed = st.checkbox(f"Send {vl.what_is_sent(changed, n_documents)} to "
                            f"{llm.endpoint if llm.enabled else 'the endpoint'}",
                            key="ck_llm_confirm", disabled=not llm.enabled)
    release_key = vc.changes_key(changed)
    if st.button("Run the LLM attacker", key="ck_llm_run", disabled=not (llm.enabled and confirmed),
                 help="Fill in the endpoint and the model, then tick the box above."):
        with user_errors(stop=False), st.spinner("Asking the LLM…"):
            st.session_state["ck_llm_result"] = (release_key, vl.run_llm_attack(
                stage, release, changed, llm))
    stored = st.session_state.get("ck_llm_result")
    if stored is not None and stored[0] == release_key:
        result = stored[1]
        st.info(vl.llm_sentence(result))
        llm_cols = st.columns(3)
        llm_cols[0].metric("Changed passages named by the LLM", vc.pct(result["changed_post_top1"]),
                           help=f"Before the release: {vc.pct(result['changed_pre_top1'])}.")
        llm_cols[1].metric("Documents named by the LLM", vc.pct(result.get("document_accuracy")))
        llm_cols[2].metric("McNemar p (LLM)", fmt_number(result["mcnemar_p"]))
    elif stored is not None:
        st.caption("The last LLM answers were for another release: run it again for this one.")

# --- the divergence audit ------------------------------------------------------------------------------
st.subheader("Divergence audit: how far is each document from the rest?")
st.markdown(
    "For every document, the passages' sentence embeddings (P₀) are compared with all other "
    "passages (P₁) by a nearest-neighbour estimate of the Rényi divergence D_α at orders α from "
    "1 (KL) to 50; identical passages (e.g. fully masked ones) count as one point with its "
    "multiplicity. A line D = ξ + ρ·α above the curve gives (ξ, ρ)-concentrated DP and so "
    "ε = ξ + ρ + 2√(ρ·log 1/δ) with δ = 1/(number of passages). Lower is better. The grey band is "
    "the **permutation floor**: what the estimator reports when the document labels are shuffled, "
    "i.e. when there is no difference at all — values near it mean the document blends in."
)
with user_errors():
    pair = vc.audit_pair(stage, changed, progress=vr.progress_bar)
st.info(vc.audit_sentence(pair))
cols = st.columns(3)
cols[0].metric("Corpus ε before", fmt_number(pair.before.epsilon_, 5),
               help="ε of the most distinguishable document before the release (lower is better).")
cols[1].metric("Corpus ε after", fmt_number(pair.after.epsilon_, 5),
               delta=delta(pair.after.epsilon_ - pair.before.epsilon_, 2), delta_color="inverse",
               help="The same after the release: a fall means documents blend in better.")
cols[2].metric("Permutation floor (largest)",
               fmt_number(pair.before.documents_["epsilon_floor"].max(), 5),
               help="What the estimator reports when nothing differs: ε near it means no evidence.")
st.caption(f"**ε = {fmt_number(pair.after.epsilon_, 3)} after the release:** "
           f"{epsilon_reading(pair.after.epsilon_, pair.before.documents_['epsilon_floor'].max())}.")

comparison = vc.comparison_view(pair)
documents = comparison["document"].tolist()
document = st.selectbox("Document to plot (most distinguishable after the release first)",
                        documents, key="check_document")
st.plotly_chart(vc.divergence_figure(pair, document), width="stretch",
                config={"displaylogo": False}, key="check_divergence_chart")
st.caption("Points: the estimate on all passages, with the bootstrap standard deviation "
           f"({pair.before.n_bootstrap} resamples) as error bars. Dashed: the optimal zCDP line "
           "above each curve, whose (ξ, ρ) give ε.")
st.dataframe(vc.comparison_styled(comparison), hide_index=True, width="stretch")
