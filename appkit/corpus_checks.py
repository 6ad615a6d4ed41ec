"""Corpus problems every page states in a sentence (issue 10): too few documents, near-identical
documents, K larger than the distinct chunks, nothing to swap.

One call at the top of a page (``show_corpus_problems(stage)``) shows them as ``st.warning``
before any fit runs into them; a ``NeswapError`` raised while checking becomes ``st.error``.
The checks reuse the core's own (``check_swappable``, ``check_swap_entities``), so the app and
the CLI say the same thing.
"""

from __future__ import annotations

import streamlit as st

from neswap_core import NeswapError
from neswap_core.generate.releases import check_swap_entities
from neswap_core.text.duplicates import cluster_count_advice, duplicates_message
from neswap_core.text.loading import check_swappable

from .pipeline import _Memo, corpus_digest, digest, kept


def _message(check, *args) -> str | None:
    try:
        check(*args)
    except NeswapError as exc:
        return str(exc)
    return None


def duplicate_problem(passages: dict[str, list[str]], k: int) -> str | None:
    """Which documents repeat each other and what to do (``text.duplicates``), when chunks
    repeat enough to matter for the mixture; None otherwise."""
    texts = [t for ts in passages.values() for t in ts]
    n, distinct = len(texts), len(set(texts))
    if n == 0 or distinct == n or (distinct >= max(2, n // 2) and k <= distinct):
        return None
    message = duplicates_message(passages, k)
    if message:
        return message.replace("\n", "  \n")  # one line each on the page (Markdown line breaks)
    return (
        f"Only {distinct} of the {n} chunks are distinct. Clusters: "
        f"{cluster_count_advice(n, distinct, k + 1 if k <= distinct else k)}."
    )


def corpus_problems(stage, entities: bool = True, documents: bool = True) -> list[str]:
    """Sentences for the problems of the stage's corpus (empty when there is none), checked once
    per corpus, chunks and settings in a server process (every page runs this first: at 100,000
    passages the checks took about 2 s of each run) and kept on disk (a restarted server cut
    every document's passages again for each page's first draw: 2.6 s at 100,000)."""
    s = stage.settings
    key = digest([stage.chunks_key, stage.corrections_key, s["roles"], int(s["n_components"]),
                  entities, documents])
    return list(_PROBLEMS.get(key, lambda: kept(
        "problems", [key, corpus_digest(stage.clean().corpus)], lambda: _problems(stage, entities, documents))))


_PROBLEMS = _Memo(16)


def _problems(stage, entities: bool, documents: bool) -> list[str]:
    out = []
    if documents and (m := _message(check_swappable, stage.corpus())):
        out.append(m)
    chunked = stage.chunked()
    passages = dict(chunked.chunk_texts(float(stage.settings["threshold"])))
    texts = [t for ts in passages.values() for t in ts]
    if not texts:
        out.append("No text is left after presentation extraction: there is nothing to chunk. "
                   "Check the documents on **1 · Corpus** (the Q&A marker may be at the start).")
        return out
    if m := duplicate_problem(passages, int(stage.settings["n_components"])):
        out.append(m)
    if entities:
        swap = [c for c, r in stage.settings["roles"].items() if r == "S"]
        if m := _message(check_swap_entities, stage.chunks(), swap):
            out.append(m)
    return out


def show_corpus_problems(stage, entities: bool = True, documents: bool = True,
                         upto: str = "pre_swap") -> list[str]:
    """Prepare the corpus up to step ``upto`` of ``pipeline.LOAD_STEPS`` with one progress
    display (stage, percent, time left), then show ``corpus_problems`` as warnings (errors
    while checking as ``st.error``)."""
    try:
        stage.load(upto)
        problems = corpus_problems(stage, entities=entities, documents=documents)
    except NeswapError as exc:
        st.error(str(exc))
        return [str(exc)]
    for message in problems:
        st.warning(message)
    return problems
