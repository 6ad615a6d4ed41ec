"""View helpers of the Export page: the released bundle of the reviewed release (SPEC §11).

The bundle is built by ``neswap_core.release.bundle.build_bundle``, the same function the CLI's
``release`` command uses; this module only gathers the app's key/ files (swap log with review
notes, decisions, tables, report, run.toml, entity corrections) and keeps the analyst's
accepted leak-scan hits in the workspace.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
import streamlit as st

from neswap_core.config import IDENTIFYING_COLUMNS
from neswap_core.corpus import Corpus
from neswap_core.release.bundle import Bundle, build_bundle
from neswap_core.release.leaks import LeakHit

from . import views_release as vr
from .pipeline import digest

ACCEPTED_SETTING = "accepted_leaks"


def publishable_options(corpus: Corpus) -> list[str]:
    """Metadata columns the analyst may mark publishable (never the protected or identifying ones)."""
    columns = dict.fromkeys(k for d in corpus.documents for k in d.metadata)
    return [c for c in columns if c != corpus.protect and c.lower() not in IDENTIFYING_COLUMNS
            and "path" not in c.lower()]


def hit_id(hit: LeakHit) -> str:
    """Workspace key of one hit: document|chunk|identifier|case."""
    return "|".join(hit.key)


def accepted_keys(stored: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(s.split("|", 3)) for s in stored}


def hits_frame(hits: Sequence[LeakHit]) -> pd.DataFrame:
    return pd.DataFrame([{"document": h.document, "chunk": h.chunk, "identifier": h.identifier,
                          "kind": h.kind, "case": h.case, "own company": h.own_company,
                          "context": h.context} for h in hits])


def key_files(release: vr.ReviewedRelease, stage, table: pd.DataFrame, pitman: pd.DataFrame,
              report_html: str, config_toml: str) -> dict[str, bytes]:
    """The app's key/ files besides those build_bundle adds (pseudonyms, chunks, leaks, TAB)."""
    corrections = [dict(c) for c in stage.workspace.corrections()]
    return {
        "swap_log.csv": vr.swap_log_frame(release).to_csv(index=False).encode(),
        "decisions.csv": vr.review_frame(release).to_csv(index=False).encode(),
        "releases.csv": table.to_csv(index=False).encode(),
        "pitman.csv": pitman.to_csv(index=False).encode(),
        "report.html": report_html.encode(),
        "config.toml": config_toml.encode(),
        "corrections.json": (json.dumps(corrections, indent=2, default=str) + "\n").encode(),
    }


def release_bundle(release: vr.ReviewedRelease, stage, settings: dict) -> Bundle:
    """The bundle of the reviewed release (no key/ extras: add them with ``with_key_files``).

    Cached on the release, its decisions and the bundle settings: the leak scan and the TAB
    diff run once per change, not on every rerun of the page.
    """
    options = (int(settings.get("bundle_seed", 0)), bool(settings.get("shuffle_chunks", False)),
               tuple(settings.get("publishable_columns", [])))
    key = digest([release.key, sorted(release.decisions.items()), options])
    return _bundle(key, release, stage, options)


@st.cache_resource(show_spinner="Scanning the release for leaks…", max_entries=8)
def _bundle(key: str, _release: vr.ReviewedRelease, _stage, options: tuple) -> Bundle:
    seed, shuffle, columns = options
    return build_bundle(_stage.corpus(), _stage.clean().corpus, _release.released_chunks(),
                        seed=seed, shuffle_chunks=shuffle, publishable_columns=list(columns))
