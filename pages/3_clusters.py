"""Step 3 · Clusters: fit the spherical mixture whose clusters decide which chunks may swap."""

import numpy as np
import plotly.express as px
import streamlit as st

from appkit.corpus_checks import show_corpus_problems
from appkit.state import bind, current, save_settings
from appkit.views_prep import (
    cached_map,
    chunk_label,
    cluster_descriptions,
    cluster_table,
    document_numbers,
    fit_with_warnings,
    kept_figure,
    map_sample,
    memberships,
    typical_chunks,
)
from appkit.widgets import fmt_number, highlight, md_text, progress_display, user_errors
from neswap_core.config import PAPER_MIN_WEIGHTS

FAMILIES = {"pkb": "PKB (Poisson kernel-based)", "scauchy": "Spherical Cauchy"}
MIN_WEIGHTS = sorted({*PAPER_MIN_WEIGHTS, 1e-6, 1e-2})

st.title("3 · Clusters")
st.markdown(
    "Chunks are grouped by meaning: a mixture of distributions on the sphere is fitted to their "
    "sentence embeddings, and each chunk belongs to its most likely cluster. Swaps only pair "
    "chunks of the same cluster from different companies, so good clusters are topical (e.g. "
    "guidance, segment results) and mix several companies."
)

stage = current()
ws, s = stage.workspace, stage.settings
show_corpus_problems(stage)
with user_errors():
    chunks, x = stage.pre_swap()  # prepared with progress by show_corpus_problems
n = len(chunks)
numbers = document_numbers(chunks)
FIT_FIELDS = {"family": s["family"], "n_components": int(s["n_components"]),
              "min_weight": float(s["min_weight"]), "mixture_seed": int(s["mixture_seed"]),
              "n_init": int(s["n_init"]), "max_iter": int(s["max_iter"])}
for field, value in FIT_FIELDS.items():  # the workspace's values (other tabs, undo)
    bind(field, value)


def request_fit() -> None:
    """Submit callback: save the form's settings first (so the rerun shows them), then fit."""
    values = {f: st.session_state[f] for f in FIT_FIELDS}
    if int(values["n_components"]) > n:
        st.session_state["fit_error"] = int(values["n_components"])
        return
    save_settings(ws, family=values["family"], n_components=int(values["n_components"]),
                  min_weight=float(values["min_weight"]),
                  mixture_seed=int(values["mixture_seed"]), n_init=int(values["n_init"]),
                  max_iter=int(values["max_iter"]))
    st.session_state["fit_requested"] = True


# --- settings and fit ------------------------------------------------------------------------------
with st.form("fit_form"):
    c1, c2, c3 = st.columns(3)
    family = c1.selectbox(
        "Distribution family",
        list(FAMILIES),
        format_func=FAMILIES.get,
        key="family",
        help="Shape of each cluster on the unit sphere. PKB and spherical Cauchy are the two "
        "families of the paper; Cauchy has heavier tails (tolerates outlying chunks).",
    )
    k = c2.number_input(
        f"Number of clusters K (1–{n})",
        min_value=1,
        max_value=1000,
        step=1,
        key="n_components",
        help="More clusters → smaller, more homogeneous groups, but fewer possible swaps. The "
        "paper uses 10 and 30.",
    )
    eps = c3.selectbox(
        "Minimum cluster weight ε (proportion)",
        sorted({*MIN_WEIGHTS, float(s["min_weight"])}),
        format_func=lambda v: fmt_number(v, 1),
        key="min_weight",
        help="Clusters whose share of the chunks falls below ε during fitting are dropped. The "
        "paper uses 10⁻³ and 10⁻¹⁰.",
    )
    c4, c5, c6 = st.columns(3)
    seed = c4.number_input(
        "Random seed",
        min_value=0,
        max_value=2**31 - 1,
        step=1,
        key="mixture_seed",
        help="Same seed and settings → the same clusters.",
    )
    restarts = c5.number_input(
        "Restarts (1–50)",
        min_value=1,
        max_value=50,
        step=1,
        key="n_init",
        help="The fit is run from this many random starts and the one "
        "with the highest likelihood is kept.",
    )
    max_iter = c6.number_input(
        "Max. iterations per restart (10–5000)",
        min_value=10,
        max_value=5000,
        step=10,
        key="max_iter",
        help="Upper bound on EM steps; raise it if the fit does not converge.",
    )
    st.form_submit_button("Fit clusters", type="primary", on_click=request_fit)

too_many = st.session_state.pop("fit_error", None)
if too_many is not None:
    st.error(
        f"K = {too_many} clusters but only {n} chunks: choose K of at most {n}; clusters of "
        f"a few chunks each (e.g. K ≤ {max(1, n // 5)}) leave room for swaps."
    )
    st.stop()
if st.session_state.pop("fit_requested", False):
    with st.status(
        f"Fitting {k} clusters ({FAMILIES[family]}, {restarts} restarts)…", expanded=True
    ) as status:
        show = progress_display("Fitting the clusters")
        with user_errors():
            _, fit_warnings = fit_with_warnings(stage, show)
        status.update(
            label="Clusters fitted and saved in the workspace", state="complete", expanded=False
        )
    st.session_state[f"fit_warnings_{stage.mixture_key}"] = fit_warnings

if int(s["n_components"]) > n:
    st.error(
        f"The saved K = {s['n_components']} is larger than the number of chunks ({n}). "
        "Choose a smaller K above and press Fit clusters."
    )
    st.stop()
if ws.get_artifact("mixture", stage.mixture_key) is None:
    st.info("No clusters fitted for these settings yet: press **Fit clusters**.")
    st.stop()
with user_errors():
    mixture, _ = fit_with_warnings(stage)
labels, proba = memberships(stage.mixture_key, mixture, x)

# --- convergence ---------------------------------------------------------------------------------
st.subheader("Fit")
trace = np.asarray(getattr(mixture, "loglik_trace_", []), dtype=float)
dropped = int(getattr(mixture, "n_dropped_", int(s["n_components"]) - mixture.n_components_))
m1, m2, m3, m4 = st.columns(4)
m1.metric("Converged", "yes" if mixture.converged_ else "no")
m2.metric("EM iterations", int(mixture.n_iter_))
m3.metric(
    "Clusters kept",
    f"{mixture.n_components_} of {s['n_components']}",
    help="Clusters whose weight fell below ε were dropped.",
)
m4.metric(
    "Final log-likelihood",
    f"{trace[-1]:,.1f}" if len(trace) else "–",
    help="Of the best restart; higher is better.",
)
if not mixture.converged_:
    st.warning(
        f"The fit did not converge within {s['max_iter']} iterations: the clusters may "
        "change with another seed. Raise the maximum iterations or the restarts, or lower K."
    )
if dropped:
    st.info(
        f"{dropped} cluster(s) fell below the minimum weight ε = {fmt_number(s['min_weight'], 1)} and were "
        "dropped. Lower ε to keep small clusters, or lower K."
    )
collapsed = int(np.sum(getattr(mixture, "collapsed_", [])))
if collapsed:
    st.info(
        f"{collapsed} cluster(s) collapsed onto near-identical chunks (ρ at its maximum). "
        "Such clusters rarely allow swaps; try another seed or a smaller K."
    )
for text in st.session_state.get(f"fit_warnings_{stage.mixture_key}", []):
    st.caption(f"Note from the fit: {md_text(text)}")
def trace_figure():
    fig = px.line(
        x=np.arange(len(trace)),
        y=trace,
        markers=len(trace) < 60,
        labels={"x": "EM iteration (0 = starting values)", "y": "log-likelihood"},
        title="Log-likelihood per iteration (best restart)",
    )
    fig.update_layout(height=280, margin=dict(l=10, r=10, t=40, b=10))
    return fig


if len(trace):
    st.plotly_chart(kept_figure(stage.mixture_key, "trace", trace_figure), key="loglik_trace")

# --- clusters -------------------------------------------------------------------------------------
st.subheader("Clusters")
table = cluster_table(mixture, labels, chunks, stage.protect)
described = cluster_descriptions(stage.mixture_key, [ch.text for ch in chunks], x, labels,
                                 mixture.means_)
keywords = [d.words for d in described]
table["characteristic words"] = [", ".join(w) for w in keywords]
distinct = f"distinct {stage.protect}"
st.dataframe(
    table,
    hide_index=True,
    key="cluster_table",
    column_config={
        "chunks": st.column_config.NumberColumn(help="Chunks whose most likely cluster this is"),
        "weight π": st.column_config.NumberColumn(
            format="%.3f", help="Mixture weight (proportion)"
        ),
        "concentration ρ": st.column_config.NumberColumn(
            format="%.3f",
            help="ρ in [0, 1): how tightly the cluster's chunks gather around its "
            "centre; near 1 = very similar chunks",
        ),
        distinct: st.column_config.NumberColumn(
            help=f"Different values of {stage.protect!r} in the cluster: swaps need at least 2"
        ),
        "characteristic words": st.column_config.TextColumn(
            help="Words much more frequent in this cluster's passages than in the others "
            "(log-odds ratio against the rest of the corpus, highest z-score first)"
        ),
    },
)
with st.expander("What each cluster is about: characteristic words and a typical passage",
                 expanded=True):
    st.caption("Words: the most characteristic of the cluster against the rest of the corpus "
               "(log-odds ratio). Passage: the one nearest the cluster's centre (mean direction).")
    for d in described:
        if d.typical is None:
            continue
        member = chunks[d.typical]
        typical = " ".join(member.text.split())
        typical = typical if len(typical) <= 220 else typical[:220].rstrip() + "…"
        st.markdown(f"**Cluster {d.cluster}** ({d.size} passages) — "
                    f"{md_text(', '.join(d.words)) or 'no distinctive words'}  \n"
                    f"Typical passage ({chunk_label(member.chunk_id, numbers)}): "
                    f"“{md_text(typical)}”")
lonely = int((table[distinct] < 2).sum())
if lonely:
    st.caption(
        f"{lonely} cluster(s) hold a single {stage.protect}: their chunks cannot be swapped."
    )
palette = px.colors.qualitative.D3 if mixture.n_components_ <= 10 else px.colors.qualitative.Dark24
b1, b2 = st.columns(2)
shown = table.assign(cluster=table["cluster"].astype(str))


def bar_figure(column: str, title: str, **options):
    fig = px.bar(shown, x="cluster", y=column, title=title, color="cluster",
                 color_discrete_sequence=palette, **options)
    fig.update_layout(
        height=260, margin=dict(l=10, r=10, t=40, b=10), xaxis_type="category", showlegend=False
    )
    return fig


b1.plotly_chart(kept_figure(stage.mixture_key, "sizes", lambda: bar_figure("chunks", "Chunks per cluster")),
                key="cluster_sizes")
b2.plotly_chart(kept_figure(stage.mixture_key, "rho", lambda: bar_figure(
    "concentration ρ", "Concentration ρ per cluster", range_y=[0, 1])), key="cluster_rho")

# --- map ----------------------------------------------------------------------------------------
st.subheader("Map of the chunks")
st.caption(
    "Each point is a chunk, placed by the first two principal components of its "
    "embedding (similar meaning → close together); colour = cluster. Hover for the text."
)
points = cached_map(stage.mixture_key, chunks, x, labels)
shown = map_sample(points)
if len(shown) < len(points):
    st.caption(f"Showing a random sample of {len(shown):,} of the {len(points):,} chunks (each cluster "
               "in proportion to its size, at least 20 of each): a map of every chunk would take "
               "seconds to draw on each change and could not be read.")
def map_figure():
    fig = px.scatter(
        shown,
        x="PC 1",
        y="PC 2",
        color="cluster",
        color_discrete_sequence=palette,
        category_orders={"cluster": [str(i) for i in range(int(mixture.n_components_))]},
        hover_data={"document": True, "preview": True, "PC 1": False, "PC 2": False},
    )
    fig.update_traces(marker=dict(size=7, opacity=0.8))
    fig.update_layout(height=480, margin=dict(l=10, r=10, t=10, b=10), legend_title_text="cluster")
    return fig


st.plotly_chart(kept_figure(stage.mixture_key, "map", map_figure), key="cluster_map")

# --- samples --------------------------------------------------------------------------------------
st.subheader("Sample chunks per cluster")
options = [int(c) for c, size in zip(table["cluster"], table["chunks"], strict=True) if size]
pick = st.selectbox(
    "Cluster",
    options,
    key="sample_cluster",
    format_func=lambda c: f"cluster {c} ({int(table.loc[c, 'chunks'])} passages): "
    f"{', '.join(keywords[c][:4])}",
)
st.caption(
    "The most typical chunks of the cluster (highest membership probability), one per "
    "document where possible."
)
for ch in typical_chunks(chunks, labels, proba, int(pick) if pick is not None else -1):
    with st.container(border=True):
        st.caption(f"**{chunk_label(ch.chunk_id, numbers)}** ({md_text(ch.doc_id)}) · "
                   f"{md_text(stage.protect)}: {md_text(ch.protected)}")
        st.markdown(highlight(ch.text, ch.entities), unsafe_allow_html=True)
