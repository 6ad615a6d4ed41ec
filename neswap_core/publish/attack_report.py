"""attack.json / attack.csv of a release (SPEC §8), and matching a released folder back to chunks.

``attack_report(scorers, changed, chunk_ids, draws)`` gives, per attacker, the pre-release
figures, the written release's figures (every family of the attacker panel is an attacker; with a
panel, ``panel`` holds the worst case over it before and after, and which family reaches it) (Tables 2 and 3 of the paper: accuracy on changed chunks
pre/post, the 2×2 table, McNemar p), mean ± s.d. over the M draws when given, and one CSV row
per (attacker, document): named before/after, the chunks that gave it away, the words that
weighed most. ``released_changes`` maps the documents of an existing ``released/`` folder back
onto the corpus's chunks for ``evaluate``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..choose.attack_columns import ATTACKER_NOTES, PANEL, panel_members, primary_name, summarise
from ..errors import CorpusError
from ..measure.attack_scores import ReleaseScorer
from ..measure.explain import release_views, views_frame

#: Columns of attack.csv, one row per (attacker, document).
CSV_COLUMNS = [
    "attacker", "doc_id", "company", "named_before", "named_after", "predicted_after",
    "margin_after", "n_chunks", "n_changed", "telling_chunks", "top_words",
]  # fmt: skip


def attack_report(
    scorers: Mapping[str, ReleaseScorer],
    changed: Mapping[int, str],
    chunk_ids: Sequence[str] | None = None,
    draws: Sequence[Mapping[int, str]] = (),
) -> tuple[dict, pd.DataFrame]:
    """(JSON-ready summary, per-document table) of the release ``changed`` for every attacker."""
    summary: dict = {"primary": primary_name(scorers), "attackers": {}}
    frames = []
    for name, scorer in scorers.items():
        # the release measured and explained from one scoring of its changed passages
        pre, (post, views) = scorer.pre_release(), release_views(scorer, changed)
        entry = {
            "note": ATTACKER_NOTES.get(name, ""),
            "pre_release": pre.to_dict(),
            "release": post.to_dict(),
        }
        if len(draws) > 1:
            entry["over_draws"] = {
                "draws": len(draws),
                **summarise([scorer.score(d) for d in draws]),
            }
        summary["attackers"][name] = entry
        summary["chance"] = post.chance
        before = pre.documents.set_index("doc_id")["named"]
        frame = views_frame(views, list(chunk_ids) if chunk_ids else None)
        frame.insert(0, "attacker", name)
        frame.insert(4, "named_before", frame["doc_id"].map(before).astype(bool))
        frame = frame.rename(columns={"named": "named_after", "predicted": "predicted_after"})
        docs = post.documents.set_index("doc_id")
        frame["margin_after"] = frame["doc_id"].map(docs["margin"])
        frame["n_chunks"] = frame["doc_id"].map(docs["n_chunks"])
        frame["n_changed"] = frame["doc_id"].map(docs["n_changed"])
        frames.append(frame[CSV_COLUMNS])
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=CSV_COLUMNS)
    if summary["primary"] == PANEL:
        summary["panel"] = panel_summary(summary["attackers"], panel_members(scorers))
    return _clean(summary), table


def panel_summary(attackers: Mapping[str, dict], members: Sequence[str]) -> dict:
    """The attacker panel's worst case before and after the release: per level, the highest
    figure over ``members`` and which attacker reaches it (``ATTACKER_NOTES[PANEL]``)."""
    out: dict = {"members": list(members), "note": ATTACKER_NOTES[PANEL]}
    for when in ("pre_release", "release"):
        for level, key in (("chunk", "chunk_top1"), ("document", "document_accuracy")):
            values = {m: attackers[m][when].get(key) for m in members}
            known = {m: v for m, v in values.items() if v is not None}
            worst = max(known, key=lambda m: known[m]) if known else None
            out[f"{when}_{level}_accuracy"] = known.get(worst) if worst else None
            out[f"{when}_{level}_attacker"] = worst
    return out


def _clean(value):
    """NaN/inf → None and numpy scalars → Python numbers, recursively (strict JSON)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    return value


_WORDS = re.compile(r"\w+")


def _similarity(a: str, b: str) -> float:
    x, y = set(_WORDS.findall(a.lower())), set(_WORDS.findall(b.lower()))
    return len(x & y) / max(len(x | y), 1)


def released_changes(
    pre_texts: Sequence[str], doc_ids: Sequence[str], released: Mapping[str, str]
) -> dict[int, str]:
    """{chunk position: released text} from released documents keyed by original doc id.

    A released document is its chunks joined by blank lines (bundle layout). Its paragraphs are
    matched to the document's pre-release chunks one-to-one by word overlap (Jaccard, optimal
    assignment), so shuffled chunk order is undone; a paragraph count that differs from the
    chunk count is a ``CorpusError`` (other chunking settings than the release's).
    """
    # here: SciPy's optimizers cost 0.2–0.5 s to import, which the app's pages never need
    from scipy.optimize import linear_sum_assignment

    positions: dict[str, list[int]] = {}
    for p, d in enumerate(doc_ids):
        positions.setdefault(str(d), []).append(p)
    changed: dict[int, str] = {}
    for doc, text in released.items():
        if doc not in positions:
            raise CorpusError(f"The released document of {doc!r} has no chunks in the corpus.")
        parts = [p.strip() for p in re.split(r"\n[^\S\n]*\n", text) if p.strip()]
        mine = positions[doc]
        if len(parts) != len(mine):
            raise CorpusError(
                f"{doc!r}: the released text has {len(parts)} paragraphs but the corpus gives "
                f"{len(mine)} chunks. Evaluate with the configuration of the release "
                "(key/config.toml: same threshold and roles)."
            )
        sim = np.array([[_similarity(pre_texts[q], part) for part in parts] for q in mine])
        rows, cols = linear_sum_assignment(-sim)
        for r, c in zip(rows, cols, strict=True):
            if parts[c] != pre_texts[mine[r]].strip():
                changed[mine[r]] = parts[c]
    return changed
