"""The attacker reading of the app's corpus: the analyst's upload or the sample's ``attacker/``
folder, its content key and its training passages (SPEC §12). Light on imports (no plotly, no
scikit-learn): the pipeline's keys and the candidates ask for it on every page."""

from __future__ import annotations

import hashlib

import streamlit as st

from .pipeline import CACHE_DIR, _Memo, digest

#: Workspace artifact holding the analyst's uploaded attacker reading, keyed by corpus source.
READING_ARTIFACT = "attacker_reading"


@st.cache_data(show_spinner=False, max_entries=4)
def _reading(source: str, protect: str, reading_key: str = "", _payload: bytes | None = None,
             _corpus_payload: bytes | None = None):
    """The attacker reading: the analyst's upload for this corpus, else the sample's
    ``attacker/`` folder, else None (``reading_key`` is the upload's content hash). An uploaded
    reading without its own aliases or executives takes the uploaded corpus's, as the CLI's
    ``attacker/`` folder takes its corpus folder's (it was parsed without them: another
    reading, another document defence than the CLI's for the same files)."""
    from neswap_core.text.loading import load_attacker, load_uploaded, with_corpus_side_files

    from .pipeline import SAMPLE_DIR, kept, unpack_uploads

    def parse():
        files = dict(unpack_uploads(_payload))
        if _corpus_payload:
            files = with_corpus_side_files(files, dict(unpack_uploads(_corpus_payload)))
        return load_uploaded(list(files.items()), protect=protect)

    if _payload:  # parsed once, then read back (0.4 s of a restarted server's page on dev)
        return kept("reading", [_payload, source, protect], parse)
    return load_attacker(SAMPLE_DIR, protect=protect) if source == "sample" else None


def uploaded_reading(stage) -> bytes | None:
    """The attacker reading uploaded for this corpus (packed files), or None."""
    return stage.workspace.get_artifact(READING_ARTIFACT, stage.source) or None


def store_reading(stage, files: list[tuple[str, bytes]]) -> int:
    """Check and keep an uploaded attacker reading for this corpus; its number of documents.

    Raises ``CorpusError`` (shown as a sentence) when the files are not a corpus with the
    protected column: the reading must name the same companies as the corpus.
    """
    from neswap_core.text.loading import load_uploaded

    from .pipeline import pack_uploads

    reading = load_uploaded(files, protect=stage.protect)
    _, payload = pack_uploads(files)
    stage.workspace.put_artifact(READING_ARTIFACT, stage.source, payload)
    return len(reading)


def forget_reading(stage) -> None:
    """Stop using the uploaded reading: the in-corpus attacker (or the sample's) takes over."""
    stage.workspace.put_artifact(READING_ARTIFACT, stage.source, b"")


def reading_of(stage):
    """(the attacker reading of this corpus or None, its content key)."""
    payload = uploaded_reading(stage)
    reading_key = _reading_key(payload)
    corpus = stage.workspace.get_artifact("upload", stage.source) if payload else None
    return _reading(stage.source, stage.protect, reading_key, payload, corpus), reading_key


def has_reading(stage) -> bool:
    """Whether ``reading_of`` gives a reading (an upload, or the sample's ``attacker/``),
    without parsing it (``_reading``'s rule)."""
    from neswap_core.text.loading import attacker_folder

    from .pipeline import SAMPLE_DIR

    if uploaded_reading(stage):
        return True
    return stage.source == "sample" and attacker_folder(SAMPLE_DIR) is not None


def reading_key_of(stage) -> str:
    """The content key of the attacker reading ``reading_of`` gives, without loading it."""
    return _reading_key(uploaded_reading(stage))


def _reading_key(payload: bytes | None) -> str:
    return "" if payload is None else hashlib.sha256(payload).hexdigest()[:16]


_UNITS = _Memo(4)


def reading_units_of(stage) -> tuple | None:
    """The reading's training passages (texts, labels, doc ids), or None without a reading: what
    the CLI's document defence cross-fits its defender on (the reading attacker's ``units_``,
    made by the same ``reading_units`` call). The app's candidates were built without them, so
    with a reading its document-defence levels were the corpus-only fallback's, not the CLI's.
    Made once per process and reading (cleaning the reading reads its people from the NER cache)."""
    if not has_reading(stage):
        return None
    from neswap_core.measure.reading_units import reading_units, sentences_per_chunk

    reading, key = reading_of(stage)
    chunks = stage.chunks()
    size = sentences_per_chunk(chunks)
    return _UNITS.get(digest([key, stage.source, stage.protect, size]),
                      lambda: reading_units(reading, size, stage.corpus(), CACHE_DIR))
