"""View helpers of the Check page's attacker panel (SPEC §12, issue 22).

Attackers of several kinds, all trained on the attacker reading (``choose/attack_columns``:
words, characters, sentence meaning, whole-document retrieval; evaluation-only kinds when the
settings list them), measure the chosen release at passage and document level. The fitted panel
is cached per pre-swap data, roles and reading (and on disk by the core); a release re-scores
only its changed passages. Everything on screen is in plain words (``publish/labels``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from neswap_core.choose.attack_columns import panel_members
from neswap_core.measure.explain import naming_terms
from neswap_core.publish.labels import ATTACKER_NAMES

from . import views_check as vc
from .pipeline import CACHE_DIR, digest, embedder


@st.cache_resource(show_spinner="Training the attacker panel (once per corpus, roles and reading; "
                   "about a minute the first time)…", max_entries=2)
def _panel_scorers(key: str, families: tuple[str, ...], backend: str, _chunks, _x, _reading,
                   _corpus, lineup: int | None = None) -> dict:
    from neswap_core.choose.scorers import build_scorers
    from neswap_core.measure.reading import reading_attacker

    reading = reading_attacker(_reading, _chunks, _corpus, cache_dir=CACHE_DIR, lineup=lineup)
    return build_scorers(_chunks, reading, in_corpus=False, families=families,
                         embed=embedder(backend).encode, vectors=_x, cache_dir=str(CACHE_DIR),
                         lineup=lineup)


@dataclass(frozen=True)
class Panel:
    """The panel's scorers of the pre-swap data (attacker name -> ReleaseScorer), trained or read
    back only when a figure is not kept on disk (a restarted server's Check page, issue 21)."""

    key: str
    train: Callable[[], dict] = field(repr=False, compare=False)

    @functools.cached_property
    def scorers(self) -> dict:
        return self.train()

    @property
    def members(self) -> list[str]:
        return panel_members(self.scorers)


def panel(stage) -> Panel | None:
    """The attacker panel of this corpus, or None when there is no attacker reading."""
    if not vc.has_reading(stage):
        return None
    families = tuple(stage.config.sweep.panel_families)
    lineup = int(stage.config.sweep.lineup)
    key = digest([stage.roles_key, vc.reading_key_of(stage), families, lineup, stage.backend])

    def train() -> dict:
        reading, _ = vc.reading_of(stage)
        chunks, x = stage.pre_swap()
        return _panel_scorers(key, families, stage.backend, chunks, x, reading, stage.corpus(), lineup)

    return Panel(key, train)


@st.cache_data(show_spinner="Measuring the release with every attacker of the panel…", max_entries=16)
def _measures(key: str, changes: str, _panel: Panel, _changed: dict[int, str]) -> dict:
    """Kept on disk as well (``key`` names the panel by content): a restarted server's Check
    page does not load the panel to show figures it measured before."""
    from .pipeline import kept

    def measure() -> dict:
        found = _panel.scorers
        return {n: (found[n].pre_release(), found[n].score(_changed)) for n in _panel.members}

    return kept("panel_measures", [key, changes], measure)


def measures(p: Panel, changed: dict[int, str]) -> dict:
    """{attacker: (before, after) AttackMeasures} of a release, panel members only."""
    return _measures(p.key, vc.changes_key(changed), p, changed)


def name_of(attacker: str) -> str:
    return ATTACKER_NAMES.get(attacker, attacker)


def worst(measured: dict, level: str, when: int = 1) -> str:
    """The attacker naming most passages (``level`` "chunk") or documents, after (``when`` 1)."""
    key = "chunk_top1" if level == "chunk" else "document_accuracy"
    return max(measured, key=lambda n: getattr(measured[n][when], key))


def panel_frame(measured: dict) -> pd.DataFrame:
    """One row per attacker: passages and documents named before and after (plain headers)."""
    rows = [{"attacker": name_of(n), "passages named before": vc.pct(b.chunk_top1),
             "passages named after": vc.pct(a.chunk_top1),
             "documents named before": vc.pct(b.document_accuracy),
             "documents named after": vc.pct(a.document_accuracy)}
            for n, (b, a) in measured.items()]  # fmt: skip
    return pd.DataFrame(rows)


def panel_styled(measured: dict):
    """``panel_frame`` with the worst case after the release highlighted (passages, documents)."""
    frame = panel_frame(measured)
    names = list(measured)
    marks = {("passages named after", names.index(worst(measured, "chunk"))),
             ("documents named after", names.index(worst(measured, "document")))}

    def style(col: pd.Series) -> list[str]:
        return ["background-color: #f8d7da; font-weight: 600" if (col.name, i) in marks else ""
                for i in range(len(col))]

    return frame.style.apply(style, axis=0)


def panel_sentence(measured: dict) -> str:
    """The worst case over the panel in one sentence."""
    d, c = worst(measured, "document"), worst(measured, "chunk")
    db, da = measured[d]
    cb, ca = measured[c]
    return (f"Worst case over {len(measured)} attackers: the **{name_of(d)}** names "
            f"**{vc.pct(da.document_accuracy)} of documents** after this release "
            f"({vc.pct(db.document_accuracy)} before), and the **{name_of(c)}** names "
            f"**{vc.pct(ca.chunk_top1)} of passages** ({vc.pct(cb.chunk_top1)} before); chance is "
            f"{vc.pct(ca.chance)}.")


def named_by_any(measured: dict) -> pd.DataFrame:
    """Documents still named after the release by at least one attacker, most attackers first."""
    by_doc: dict[str, list[str]] = {}
    company: dict[str, str] = {}
    for n, (_, after) in measured.items():
        docs = after.documents
        for row in docs[docs["named"]].itertuples():
            by_doc.setdefault(row.doc_id, []).append(name_of(n))
            company[row.doc_id] = row.company
    rows = [{"document": d, "company": company[d], "attackers naming it": len(who),
             "named by": ", ".join(who)} for d, who in by_doc.items()]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["document", "company", "attackers naming it", "named by"])
    return frame.sort_values(["attackers naming it", "document"], ascending=[False, True],
                             ignore_index=True)


def naming_words(p: Panel, measured: dict, changed: dict[int, str], doc_id: str,
                 n_words: int = 8) -> pd.DataFrame:
    """For each attacker that names ``doc_id``: the words and phrases of its released text that
    point most to its company (retrieval: the n-grams adding most to the cosine with the
    company's other texts; word/character models: the largest positive weights)."""
    from .pipeline import kept

    named = [n for n, (_, after) in measured.items()
             if bool(after.documents.set_index("doc_id").loc[doc_id, "named"])]  # fmt: skip
    # kept on disk (the panel's key, the changes, the document): a restarted server's Check page
    # showed them after loading the panel and sorting each vocabulary again (0.3 s on dev)
    terms = kept("naming_terms", [p.key, vc.changes_key(changed), doc_id, n_words, named],
                 lambda: {n: naming_terms(p.scorers[n], changed, doc_id, n_words) for n in named})
    rows = []
    for n in named:
        weights = terms[n]
        if not len(weights):
            rows.append({"attacker": name_of(n), "words and phrases that name it":
                         "(reads the meaning of whole passages, not single words)"})
            continue
        rows.append({"attacker": name_of(n),
                     "words and phrases that name it": ", ".join(f"“{w}”" for w in weights.index)})
    return pd.DataFrame(rows, columns=["attacker", "words and phrases that name it"])
