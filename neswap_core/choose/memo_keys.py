"""The keys under which a run's measured candidates are kept on disk (issue 21: warm re-runs).

``run_key`` hashes everything a candidate's text and measured row depend on: the pre-swap data
(chunks with their entities, vectors, the fitted mixture), every setting but those that act
only after the candidates are built (``out``, the bundle's layout, the analyst's review), the
attacker's reading, the embedding model and backend, and the library's code
(``disk_memo.code_fingerprint``). It is None — nothing is kept — when the vectors come from an
encoder it cannot name (a test's function, the app's own wrapper): a memo never guesses.
"""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from ..disk_memo import content_key, texts_digest
from ..generate.document_terms import DOCTERMS_LAYOUT

#: Settings that act only after the candidates exist (module docstring): sections, and
#: (section, setting) pairs. The goal and the trade-off line only choose among the candidates
#: (``search_for_goal`` acts through the plan settings, which are in the key): moving the line
#: measured every candidate again.
AFTER_CANDIDATES = ("out", "bundle", "review", "goal")
#: The population size N enters only p̂ and so DR (SPEC §5): no text, utility or attack depends on
#: it, and ``Candidates.at_population`` / ``with_risk_columns`` give a kept table its DR at any N
#: (a change of N measured every candidate again: 22 s on the dev corpus's Frontier page).
AFTER_CANDIDATES_SETTINGS = (("document", "document_adaptive_check"), ("sweep", "population"))


_FIELD_DIGESTS: OrderedDict[tuple, tuple] = OrderedDict()
_FIELD_LOCK = threading.Lock()


def chunk_field_digests(chunks: Sequence) -> tuple[str, str, str, str, str]:
    """Digests of the chunks' ids, documents, texts, companies and entities, made once per
    sequence of chunk objects in a process (issue 21: a page's run and the release hash the
    same 10,000 passages three times, 0.5 s at 10k, the entities most of it), or told by whoever
    kept them with the chunks (``remember_field_digests``). A hit is a list of the very same
    chunk objects, in order (chunks are frozen): a copy of the list hits too."""
    members = tuple(map(id, chunks))
    with _FIELD_LOCK:
        hit = _FIELD_DIGESTS.get(members)
        if hit is not None:
            _FIELD_DIGESTS.move_to_end(members)
            return hit[1]
    value = (texts_digest(c.chunk_id for c in chunks), texts_digest(c.doc_id for c in chunks),
             texts_digest(c.text for c in chunks), texts_digest(c.protected for c in chunks),
             texts_digest(_spans_text(c.entities) for c in chunks))  # fmt: skip
    _remember(members, chunks, value)
    return value


def remember_field_digests(chunks: Sequence, value: tuple[str, str, str, str, str]) -> None:
    """Record ``value`` as ``chunk_field_digests(chunks)``: chunks read back with the digests
    made when they were kept (the app's pre-swap chunks: 0.5 s of each page's first draw after
    a restart at 100k passages)."""
    _remember(tuple(map(id, chunks)), chunks, tuple(value))


def _remember(members: tuple, chunks: Sequence, value: tuple) -> None:
    with _FIELD_LOCK:
        # holding the chunks keeps their ids from being reused by other objects
        _FIELD_DIGESTS[members] = (tuple(chunks), value)
        _FIELD_DIGESTS.move_to_end(members)
        while len(_FIELD_DIGESTS) > 8:
            _FIELD_DIGESTS.popitem(last=False)


def _spans_text(spans) -> str:
    """A chunk's entity spans as one string for its digest (2.4× faster than their ``repr`` at
    100k passages): the fields joined by ASCII unit and record separators, which neither the NER
    labels and categories (fixed names) nor the spans' offsets contain; a span's text is its
    chunk's text between its offsets, which the digest holds apart."""
    return "\x1e".join(f"{s.start}\x1f{s.end}\x1f{s.label}\x1f{s.category}\x1f{s.text}" for s in spans)


def embed_identity(embed) -> tuple[str, str] | None:
    """(model, resolved backend) of an ``Embedder.encode`` bound method, else None."""
    owner = getattr(embed, "__self__", None)
    model, backend = getattr(owner, "model_name", None), getattr(owner, "backend", None)
    if not isinstance(model, str) or not isinstance(backend, str):
        return None
    return model, backend


def units_digest(units: tuple | None) -> str:
    """Digest of an attacker reading's (texts, labels, doc ids), "" without one."""
    if units is None:
        return ""
    return texts_digest(str(part) for column in units for part in (*column, "\x00"))


def candidate_settings(config) -> dict:
    """``config``'s sections without the settings that act only after the candidates exist
    (``AFTER_CANDIDATES``): what a run's candidates, and the texts they embed, depend on."""
    settings = {k: v for k, v in config.to_dict().items() if k not in AFTER_CANDIDATES}
    for section, name in AFTER_CANDIDATES_SETTINGS:
        settings[section] = {k: v for k, v in settings[section].items() if k != name}
    return settings


def mixture_state(mixture) -> bytes:
    """The fitted mixture's parameters and fitted attributes (its public attributes, by name),
    pickled: the key's part for the mixture. Not the estimator pickled whole, whose class makes
    pickle import scikit-learn (1.5 s) where the app keeps only the attributes (issue 21)."""
    public = sorted((k, v) for k, v in vars(mixture).items() if not k.startswith("_"))
    return pickle.dumps(public, protocol=4)


def run_key(ctx, config, reading_units: tuple | None = None) -> str | None:
    """The key of ``ctx``'s candidates under ``config`` (module docstring), or None."""
    identity = embed_identity(ctx.embed)
    if identity is None:
        return None
    settings = candidate_settings(config)
    return content_key(
        "run", list(identity), repr(sorted(settings.items(), key=lambda kv: kv[0])),
        *chunk_field_digests(ctx.chunks), ctx.embeddings, mixture_state(ctx.mixture),
        units_digest(reading_units),
    )


def build_key(chunks, config, reading_units: tuple | None = None) -> str:
    """The key of what is built from the pre-swap chunks alone, with no vector (the document
    defence's levels, choose/document_candidates.py): ``run_key`` without the embedder, the
    vectors and the mixture, so a walk whose embedder only records (choose/prefetch.py) and the
    real pass share it."""
    settings = candidate_settings(config)
    return content_key(
        f"build {DOCTERMS_LAYOUT}", repr(sorted(settings.items(), key=lambda kv: kv[0])),
        *chunk_field_digests(chunks), units_digest(reading_units),
    )


def derived_key(key: str | None, kind: str, *parts) -> str | None:
    """A key of something computed from the run ``key`` and ``parts`` (None stays None)."""
    return None if key is None else content_key(kind, key, *parts)


def changed_parts(changed: Mapping[int, str]) -> list:
    """A changed-text mapping as key parts (positions and texts, in order)."""
    return [sorted(changed), texts_digest(changed[p] for p in sorted(changed))]


def draws_parts(draws: Sequence[Mapping[int, str]]) -> list:
    return [changed_parts(d) for d in draws]
