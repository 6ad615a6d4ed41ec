"""Step 5 · Risk–utility frontier: all candidate releases, the trade-off line, the chosen release,
the Pitman risk model per combination and the hyperparameter grid (SPEC §5, §7, §8)."""

from functools import partial

import numpy as np
import streamlit as st

from appkit import choice_view as cv
from appkit import verdict_view as vv
from appkit import views_check as vc
from appkit import views_explain as ve
from appkit import views_export as vexp
from appkit import views_frontier as vf
from appkit import views_release as vr
from appkit.corpus_checks import show_corpus_problems
from appkit.pipeline import AUTO_LINE, pitman_table, release_table
from appkit.state import corpus_fingerprint, current, plain_message, save_settings
from appkit.widgets import fmt_number, md_text, user_errors
from neswap_core.choose.chosen import PINNED
from neswap_core.choose.frontier import choose_release, default_offset, frontier_mask
from neswap_core.config import PAPER_POPULATIONS

st.title("5 · Risk–utility frontier")
st.markdown(
    "Each point is a **candidate release**: the corpus after the first *t* swaps of one "
    "combination of entity categories. Further **right** keeps more of the text's meaning "
    "(utility DU); further **down** leaves fewer unique, re-identifiable passages (risk DR). "
    "Draw your **trade-off line**: the release used is the most useful frontier release on or "
    "below it. Moving the sliders never refits or re-embeds anything."
)

stage = current()
ws, s = stage.workspace, stage.settings
show_corpus_problems(stage)

with user_errors():
    sweep = vr.ensure_sweep(stage)

# --- population size N ---------------------------------------------------------------------------
CUSTOM = "custom"


def save_population() -> None:
    """Store the new N; a default line (never moved by the analyst) follows it, so that it stays
    reached: N moves every DR (issue 13)."""
    label = st.session_state["frontier_population"]
    if label == CUSTOM:
        exponent = st.session_state.get("frontier_population_exp", np.log10(float(s["population"])))
        n = float(10.0 ** float(exponent))
    else:
        n = vf.POPULATION_LABELS[label]
    values = {"population": n}
    if ws.get_setting(AUTO_LINE) and float(ws.get_setting("trade_off_a", 0.0)) == 0:
        with user_errors(stop=False):
            values |= {"trade_off_c": default_offset(stage.table(n)), AUTO_LINE: True}
    save_settings(ws, **values)


population = float(s["population"])
labels = {v: k for k, v in vf.POPULATION_LABELS.items()}
controls = st.columns([1.2, 1, 1])
with controls[0]:
    paper_label = labels.get(population, CUSTOM)
    if st.session_state.get("frontier_population") != CUSTOM or paper_label == CUSTOM:
        st.session_state["frontier_population"] = paper_label  # else: keep "custom" just picked
    choice_n = st.radio(
        "Population size N (number of chunks the sample is drawn from)",
        [*vf.POPULATION_LABELS, CUSTOM], key="frontier_population", horizontal=True,
        on_change=save_population,
        help="N enters the estimate of how many sample-unique passages are unique in the whole "
        "population (p̂ scales like N^(α̂−1)). The paper uses 10^10, 10^20 and 10^30.",
    )
    if choice_n == CUSTOM:
        st.session_state["frontier_population_exp"] = float(np.log10(population))
        st.number_input("log₁₀ N (exponent, 2–100)", min_value=2.0, max_value=100.0, step=1.0,
                        key="frontier_population_exp", on_change=save_population)

st.markdown("**Your goal** — the release must not let the strongest attacker name more than "
            "this (the verdict below is green only when it is met; it is also run.toml's goal).")
vv.goal_inputs(ws, s, save_settings)

with user_errors():
    table = release_table(stage.sweep_key, population, sweep)  # the sweep in hand: no re-read
if len(table) == 0:
    st.warning("There are no candidate releases: no combination had a valid pair to swap. "
               + plain_message(" ".join(d.run.message for d in sweep.draws if d.draw == 0))
               + " Go back to **2 · Entities & roles** or **3 · Clusters** and give more "
               "categories the role S, or use fewer clusters.")
    st.stop()

# --- trade-off line DR = c + a·DU -----------------------------------------------------------------
A_MAX = 100.0


def save_slope(pivot: float, digits: int) -> None:
    """Rotate the line around the chart's centre: keep its height at the pivot DU."""
    a_new = float(st.session_state["frontier_a"])
    a_old, c_old = float(s["trade_off_a"]), float(s["trade_off_c"])
    c_new = max(round(c_old + (a_old - a_new) * pivot, digits), 0.0)  # a risk bound is never < 0
    save_settings(ws, trade_off_a=a_new, trade_off_c=c_new, **{AUTO_LINE: False})


def save_offset() -> None:
    save_settings(ws, trade_off_c=float(st.session_state["frontier_c"]), **{AUTO_LINE: False})


a = float(s["trade_off_a"])
c = float(s["trade_off_c"])
step = vf.offset_step(table)  # the sliders follow the releases' spread (issue 20)
digits = vf.step_digits(step)
low, high, pivot = vf.slider_bounds(table, a)
low = max(low, round(float(np.ceil(-a * pivot / step) * step), digits))  # height at pivot ≥ 0
low, high = min(low, c), max(high, c)
# Steeper than the line's height at the pivot over the pivot would send c below 0.
a_top, a_step = vf.slope_range(table)
a_keep = float(np.floor((c + a * pivot) / max(pivot, 1e-9) / a_step) * a_step)
a_max = max(a, min(A_MAX, a_top, a_keep), a_step)
with controls[1]:
    st.session_state["frontier_a"] = a
    st.slider("Slope a of the line (≥ 0)", 0.0, a_max, step=a_step, key="frontier_a",
              format=f"%.{vf.step_digits(a_step) if a_step < 1 else 1}f",
              on_change=save_slope, args=(pivot, digits + 2),
              help="a = 0: accept any release whose risk DR is at most c (the paper's choice). "
              "a > 0: accept more risk for more utility. Changing a turns the line around the "
              "centre of the chart. The range follows the releases' spread of DR over DU.")
with controls[2]:
    st.session_state["frontier_c"] = c
    st.slider("Offset c of the line", low, high, step=step, format=f"%.{digits}f",
              key="frontier_c", on_change=save_offset,
              help="With a = 0, c is the highest risk DR you accept. Lower c → a safer release "
              "with more swaps (and less utility). The step follows the releases' spread of DR.")

st.caption("Trade-off line **DR = c + a·DU**: releases on or below it are acceptable. With a = 0 "
           "(the paper's choice), c is simply the highest risk DR you accept.")

line_pick = choose_release(table, a, c)
with user_errors():  # the core's one chooser (pinned, goal or line), as the CLI's release
    app = cv.app_choice(stage, vr.progress_bar("Measuring the candidates for your goal"))
chosen_id = app.release_id

# --- measured protection: the attacker's accuracy as a risk axis (SPEC §8) ------------------------------
attack = None
with user_errors(stop=False):
    attack = vc.attack(stage)
    table = vc.measured_table(stage, attack, table)
axes = vf.risk_axes(table)
if st.session_state.get("frontier_risk") not in axes:  # measured risk first when there is one
    st.session_state["frontier_risk"] = vf.default_risk_axis(axes)
risk = st.radio("Risk shown on the chart", axes, key="frontier_risk", horizontal=True,
                format_func=lambda k: vf.RISK_AXES[k][1],
                help="DR is the paper's model-based risk; the measured accuracies are what an "
                "attacker actually gets right on each release (draw 0). The trade-off line is "
                "drawn in DR units, so it shows with DR only.")


def use_clicked(clickable) -> None:
    """A point clicked on the chart becomes the release in use (the gold star)."""
    release_id = ve.clicked_release(st.session_state.get("frontier_chart"), clickable, risk)
    if release_id is not None:
        save_settings(ws, chosen_release=release_id)
        st.toast(f"Release in use: {md_text(release_id)}")


st.plotly_chart(vf.frontier_figure(table, chosen_id, a, c, line_pick=line_pick.index, risk=risk),
                width="stretch", config={"displaylogo": False}, key="frontier_chart",
                on_select=partial(use_clicked, table), selection_mode="points")
st.caption("**Click a point** to use that release on the Swaps, Export and Check pages.")
if chosen_id is not None and chosen_id not in table.index:
    st.caption(f"The release in use, {md_text(chosen_id)}, is not a swap round of the paper, so "
               "it is not on this chart (it is listed on **4 · Swaps** and written by "
               "**6 · Export**).")
changed = None
if chosen_id is not None:  # the verdict of the release in use: every attacker of the CLI
    with user_errors(stop=False):
        changed = cv.changed_texts(stage, app)
        verdict = vv.verdict_of(vexp.release_figures(stage, changed), s)
        vv.show(verdict, key="frontier_verdict")
        vv.remember(ws, corpus_fingerprint(s), chosen_id, verdict, "5 · Frontier, after your review")
if attack is not None and changed is not None:
    with user_errors(stop=False):
        before, after = vc.measures(attack, changed)
        st.markdown(vc.accuracy_sentence(attack, before, after))
        st.caption(("Outside reader: trained on other texts of the same companies. "
                    if attack.kind == vc.READING else
                    "No attacker reading for this corpus: the in-corpus attacker is used, which has "
                    "read the rest of each document and so is stronger than an outside reader. ")
                   + "See **7 · Check** for the details.")

# --- the chosen release -----------------------------------------------------------------------------
sentence = vf.choice_sentence(table, line_pick.index)
if line_pick.line_reached:
    st.success(f"**Your line picks:** {sentence}")
else:
    st.warning(f"**Line not reached.** {line_pick.message}  \n**Lowest-risk release:** {sentence}")
st.caption("Read: the categories swapped, the number of swapped pairs, the share r of chunks "
           "changed (2 per pair), the risk DR (1 = no protection) and the utility DU "
           "(1 = the cluster structure of the text is fully kept).")

why = st.success if app.choice.goal_met is not False else st.warning
why(f"**Why this release:** {app.why_sentence()}", icon=":material/star:")
if app.goal_missed:  # refused out loud, as the command line does
    st.warning(f"**Goal not met:** {md_text(cv.plain(app.choice.goal_sentence))}", icon=":material/flag:")
if app.note:
    st.caption(md_text(cv.plain(app.note)))
if sweep.ctx.sample is not None:  # a large corpus: the candidates were measured on a sample
    st.caption(md_text(sweep.ctx.sample.statement()))
if app.choice.why == PINNED:
    if chosen_id in table.index:
        st.info(f"**In use on the Swaps and Export pages:** {vf.choice_sentence(table, chosen_id)} "
                "(you pinned it; it is the gold star).")
    st.caption("✓ This release is in use on the Swaps and Export pages until you unpin it.")
    st.button("Unpin: let your goal and line choose", on_click=save_settings, args=(ws,),
              kwargs={"chosen_release": None}, key="frontier_unpin")
elif line_pick.index is not None:
    label = ("Pin the line's release instead" if line_pick.index != chosen_id else
             "Pin this release")
    st.button(label, on_click=save_settings, args=(ws,),
              kwargs={"chosen_release": line_pick.index}, key="frontier_use",
              help="Pin a release: it stays in use (4 · Swaps, 6 · Export) whatever the goal "
              "or the line would choose, and run.toml names it.")

# --- what the numbers say, in sentences (issue 13) ------------------------------------------------
explained = chosen_id if chosen_id in table.index else line_pick.index
if explained is not None:
    with user_errors(stop=False), st.container(border=True, key="frontier_explained"):
        row = table.loc[explained]
        fit = ve.pitman_row(pitman_table(stage.sweep_key, population, sweep), row["categories"])
        p_by_n = {}
        for n in sorted({*PAPER_POPULATIONS, population}) if fit is not None else ():
            other = ve.pitman_row(pitman_table(stage.sweep_key, n, sweep), row["categories"])
            if other is not None:
                p_by_n[n] = float(other["p_hat"])
        st.markdown(f"**What the numbers say** (release {md_text(explained)})")
        st.markdown(ve.dr_sentence(table, row, fit, population))
        st.markdown(ve.du_sentence(table, row))
        st.markdown(ve.population_sentence(population, fit, p_by_n))
        st.markdown(ve.line_sentence(table, line_pick, vf.choice_sentence(table, line_pick.index)))

with st.expander("Releases on the frontier (not dominated by any other release)"):
    front = table[frontier_mask(table["du"].to_numpy(float), table["dr"].to_numpy(float))]
    st.dataframe(vf.release_view(front), hide_index=True, width="stretch")

# --- Pitman table ------------------------------------------------------------------------------------
st.subheader("Risk model per category combination (the paper's Table 1)")
st.markdown(
    "For each combination, the entity values of every chunk form a cell; a chunk alone in its "
    "cell is a **sample unique**. The Ewens–Pitman model (θ̂ strength, α̂ discount) estimates "
    "how many of them are also unique in a population of N chunks, as the share **p̂**. Swapping "
    "a sample unique removes that risk: DR = 1 − (swapped uniques / s₁) · min(p̂, 1)."
)
with user_errors():
    pitman, pitman_config = vf.pitman_view(pitman_table(stage.sweep_key, population, sweep))
    st.dataframe(pitman, column_config=pitman_config, hide_index=True, width="stretch")

# --- hyperparameter grid -------------------------------------------------------------------------------
st.subheader("Robustness: which combination wins across hyperparameters")
st.markdown(
    "The paper checks whether the answer depends on the mixture settings: it refits the "
    "clusters for both families (PKB, spherical Cauchy), K = 10 and 30 clusters and minimum "
    "weights ε = 10⁻³ and 10⁻¹⁰ (8 fits), and recomputes every release for each population N."
)
populations = list(PAPER_POPULATIONS)  # the paper's 3 × 8 = 24 settings
grid = vf.stored_grid(stage, populations)
if grid is None and st.button("Run the hyperparameter grid (8 mixture fits; can take a few minutes)",
                              key="grid_run"):
    with user_errors():
        vf.compute_grid(stage, populations, progress=vr.progress_bar("Hyperparameter grid"))
    st.rerun()  # show the result in place of the button
if grid is not None:
    summary = vf.grid_summary(grid, a, c)
    colors = vf.combination_colors(table["combination"])
    st.markdown("**Combination with most releases on the frontier**, per setting and N")
    st.dataframe(vf.style_winners(vf.winner_pivot(summary, "frontier winner"), colors),
                 width="stretch")
    st.markdown(f"**Combination of the release your line picks** (a = {fmt_number(a)}, "
                f"c = {fmt_number(c, 6)})")
    st.dataframe(vf.style_winners(vf.winner_pivot(summary, "your line picks"), colors),
                 width="stretch")
    st.caption(vf.grid_verdict(summary) + " ⚠ = the mixture fit did not converge.")
    with st.expander("All grid settings"):
        st.dataframe(summary, hide_index=True, width="stretch")
