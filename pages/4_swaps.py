"""Step 4 · Swaps: every swapped pair of a release side by side, to accept or reject (SPEC §3)."""

import streamlit as st

from appkit import choice_view as cv
from appkit import views_plans as vp
from appkit import views_release as vr
from appkit.corpus_checks import show_corpus_problems
from appkit.state import current, plain_message, save_decision, save_settings, undo_button
from appkit.widgets import confirm_button, delta, legend, md_text, user_errors

PAIRS_PER_PAGE = 10
CLEARED = "clear all review decisions"  # the store's label of that action in the undo history

st.title("4 · Swaps")
st.markdown(
    "A release exchanges named entities between **pairs of similar passages** (same cluster) "
    "from **different companies**. Read each pair before and after the swap: swapped entities "
    "are outlined. **Reject** a pair that reads wrongly (e.g. an entity detected by mistake); it "
    "is left out of the release and the risk and utility numbers update. Pairs you do not "
    "review stay in the release."
)

stage = current()
ws, s = stage.workspace, stage.settings
show_corpus_problems(stage)
population = float(s["population"])

sweep, table = vr.sweep_table_or_stop(
    stage, population, "review", "and give more categories the role S, or use fewer clusters")

# --- plans (SPEC §10) ------------------------------------------------------------------------------
with st.expander("Plans: several rounds, distinctive terms, redaction (beyond the paper)",
                 expanded=int(s.get("plan_rounds", 0)) > 0):
    st.caption("A plan swaps in several rounds (a chunk once per round, never the same pair twice), "
               "moves leftover entities to further partners, can swap words distinctive of one "
               "company, and can mask a share of each chunk's words. Each round is a candidate.")
    with st.form("plans_form"):
        c1, c2, c3 = st.columns(3)
        rounds = c1.number_input("Rounds (0 = paper's single round only)", 0, 10,
                                 int(s.get("plan_rounds", 0)), key="plan_rounds")
        terms = c2.checkbox("Also try swapping distinctive terms",
                            value=True in s.get("plan_terms", [False, True]), key="plan_terms")
        levels = c3.multiselect("Redaction levels (share of words masked)", [0.0, 0.05, 0.1, 0.2],
                                default=s.get("plan_redaction_levels", [0.0]), key="plan_levels")
        floor = c1.slider("Pair similarity floor (cosine)", -1.0, 1.0,
                          float(s.get("plan_similarity_floor", 0.3)), 0.05, key="plan_floor")
        if st.form_submit_button("Build plan candidates"):
            save_settings(ws, plan_rounds=int(rounds), plan_terms=[False, True] if terms else [False],
                          plan_redaction_levels=sorted(set(levels)) or [0.0],
                          plan_similarity_floor=float(floor))
            st.rerun()
plans = None
if int(s.get("plan_rounds", 0)) > 0:
    with user_errors():
        plans = stage.candidates(vr.progress_bar("Building plan candidates")).plans

# --- which release ---------------------------------------------------------------------------------
chosen_id, not_in_use = cv.release_in_use(stage, table)  # the core's choice (choice_view)
chosen_id = vp.pinned_plan(stage, plans) or chosen_id  # a pinned plan release (Export writes it)
if not_in_use and chosen_id in table.index:
    st.info(not_in_use, icon=":material/info:")
ids = list(table.index) + (list(plans.table.index) if plans is not None else [])
if st.session_state.get("swaps_release") not in ids:
    st.session_state["swaps_release"] = chosen_id
release_id = st.selectbox(
    "Release to review (★ = the release chosen on 5 · Risk–utility frontier)", ids,
    key="swaps_release",
    format_func=lambda r: (vr.release_label(table.loc[r]) if r in table.index
                           else vp.plan_label(plans.table.loc[r])) + ("  ★" if r == chosen_id else ""),
    help="A release is named by its category combination and its number of swaps t: it "
    "contains the first t pairs of the swap sequence.",
)
if plans is not None and release_id in plans.table.index:
    vp.render_plan_review(plans, release_id, stage, ws)
    st.stop()
if release_id != chosen_id:
    st.button("Use this release for export", key="swaps_use", on_click=save_settings, args=(ws,),
              kwargs={"chosen_release": release_id},
              help="Make it the chosen release (also shown on the frontier page).")

release = vr.reviewed_release(sweep, stage.sweep_key, table, release_id, ws.decisions, population)
du0, dr0 = release.as_generated()
du1, dr1 = release.after_review()
kept = len(release.accepted_positions)
cols = st.columns(5)
cols[0].metric("Pairs kept", f"{kept} of {len(release.records)}",
               help="Pairs you rejected are left out; pairs not reviewed stay in.")
cols[1].metric("DU as generated", f"{du0:.5f}",
               help="Utility: 1 = the cluster structure of the text is fully kept; higher is better.")
cols[2].metric("DU after your review", f"{du1:.5f}",
               delta=delta(du1 - du0, 5) if kept < len(release.records) else None)
cols[3].metric("DR as generated", f"{dr0:.4f}",
               help="Disclosure risk: 1 = no protection; lower is safer.")
cols[4].metric("DR after your review", f"{dr1:.4f}",
               delta=delta(dr1 - dr0, 4) if kept < len(release.records) else None,
               delta_color="inverse")
if release.sweep.n_draws > 1:
    st.caption(f"The frontier shows means over {release.sweep.n_draws} draws; the released text is "
               "draw 1, whose numbers are shown here.")
st.caption(plain_message(release.draw.run.message))


# --- bulk actions ----------------------------------------------------------------------------------
def accept_rest() -> None:
    ws.set_decisions(release.key, {vr.pair_key(r): ("accept", release.note(r))
                                   for r in release.records if not release.decision(r)})


def clear_all() -> None:
    cleared = ws.clear_decisions(release.key, release.pair_keys)
    st.toast(f"Cleared {cleared} decision(s). Undo brings them back.")


decided = sum(1 for r in release.records if release.decision(r))
bulk = st.columns([1.4, 1.2, 3])
bulk[0].button("Accept all not reviewed", on_click=accept_rest, key="swaps_accept_rest")
with bulk[1]:  # destructive: asks first, and Undo (here and in the sidebar) takes it back
    confirm_button("Clear all decisions", key="swaps_clear", on_confirm=clear_all,
                   question=f"Clear all {decided} decision(s) of this release? Every pair goes "
                   "back to *not reviewed* and stays in the release. You can undo this.",
                   disabled=decided == 0)
past = ws.history()
if past and past[0]["label"] == CLEARED:
    with bulk[2]:
        undo_button(ws, key="swaps_undo_clear")

# --- the pairs -------------------------------------------------------------------------------------
DECISION_LABELS = {"": "not reviewed", "accept": "✓ accept", "reject": "✗ reject"}
STATUS = {"": "", "accept": ":green-badge[✓ accepted]",
          "reject": ":red-badge[✗ rejected — left out of the release]"}


views = vr.pair_views(release)
n_pages = max(1, -(-len(views) // PAIRS_PER_PAGE))
page = 1
if n_pages > 1:
    page = st.number_input(f"Page of pairs (1–{n_pages}, {PAIRS_PER_PAGE} per page)", 1, n_pages,
                           key="swaps_page")
st.markdown(legend(), unsafe_allow_html=True)
for view in views[(page - 1) * PAIRS_PER_PAGE: page * PAIRS_PER_PAGE]:
    rec, pair = view.record, vr.pair_key(view.record)
    decision_key, note_key = f"dec::{release.key}::{pair}", f"note::{release.key}::{pair}"
    with st.container(border=True, key=f"pair_{rec.step}"):
        status = STATUS[release.decision(rec)]
        st.markdown(f"**Pair {rec.step}** {status} · cluster {rec.cluster} · similarity "
                    f"{view.similarity:.2f} · swapped: {md_text(view.exchange_text())}",
                    help="Similarity: cosine of the two passages' embeddings before the swap "
                    "(1 = same meaning). Both passages are in the same cluster.")
        for side, column in enumerate(st.columns(2)):
            column.caption(f"Document **{md_text((rec.doc_a, rec.doc_b)[side])}** · "
                           f"{md_text(s['protect'])}: "
                           f"**{md_text((rec.protected_a, rec.protected_b)[side])}**")
        released = release.decision(rec) != "reject"
        after_label = "AFTER · as released" if released else "AFTER · rejected: not in the release"
        for after, label in ((False, "BEFORE"), (True, after_label)):
            st.markdown(f"<div style='font-size:0.8em;letter-spacing:0.06em;color:#555;"
                        f"border-top:1px solid #e3e6ea;padding-top:4px'>{label}</div>",
                        unsafe_allow_html=True)
            for side, column in enumerate(st.columns(2)):
                column.markdown(view.excerpt_html(side, after=after), unsafe_allow_html=True)
        with st.expander("Full passages"):
            for side, column in enumerate(st.columns(2)):
                before, after = column.tabs(["Before", "After"])
                before.markdown(view.full_html(side, after=False), unsafe_allow_html=True)
                after.markdown(view.full_html(side, after=True), unsafe_allow_html=True)
        st.session_state[decision_key] = release.decision(rec)
        st.session_state[note_key] = release.note(rec)
        left, right = st.columns([1, 2])
        left.radio("Decision", list(DECISION_LABELS), format_func=DECISION_LABELS.get,
                   key=decision_key, horizontal=True, on_change=save_decision,
                   args=(ws, release.key, pair, decision_key, note_key))
        right.text_input("Note (optional, saved with the decision)", key=note_key,
                         disabled=not release.decision(rec), on_change=save_decision,
                         args=(ws, release.key, pair, decision_key, note_key),
                         placeholder="e.g. 'Apple' here is the fruit, not the company")
