"""The released bundle and its leak scan (SPEC §11) on small hand-made corpora (no models)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from neswap_core.corpus import Chunk, Corpus, Document
from neswap_core.errors import ConfigError, LeakError
from neswap_core.publish.annotations import changed_mentions
from neswap_core.publish.bundle import build_bundle, pseudonym_map
from neswap_core.publish.leaks import (
    LeakTerm,
    hits_csv,
    leak_terms,
    read_accepted,
    scan_release,
)
from neswap_core.text.identifiers import suppress_corpus

TEXTS = {
    "ACME_q1": "Welcome to the Acme Corporation call. I am Jane Q. Doe, our CEO. Revenue grew. "
    "Visit acme.com for slides. Our target market expanded.",
    "BOLT_q1": "Welcome to the Bolt Industries call. Jim Smith speaking. Demand was firm. "
    "Margins improved in Europe.",
    "CRUX_q1": "Welcome to the Crux Systems call. Thanks, everyone. We expanded in Asia. "
    "Cash flow was strong.",
}
META = {
    "ACME_q1": {"company": "Acme Corporation", "ticker": "ACME", "quarter": "q1"},
    "BOLT_q1": {"company": "Bolt Industries", "ticker": "BOLT", "quarter": "q1"},
    "CRUX_q1": {"company": "Crux Systems", "ticker": "CRX", "quarter": "q1"},
}
ALIASES = {"ACME_q1": ("acme.com",)}  # as listed in aliases.csv
EXECS = {"ACME_q1": ("Jane Q. Doe",), "BOLT_q1": ("James Smith",), "CRUX_q1": ()}


def corpus() -> Corpus:
    docs = tuple(
        Document(d, TEXTS[d], dict(META[d]), EXECS[d], ALIASES.get(d, ()), source=f"{d}.txt")
        for d in TEXTS
    )
    return Corpus(docs, protect="company")


def chunks_of(clean: Corpus) -> list[Chunk]:
    out = []
    for doc in clean.documents:
        for i, sentence in enumerate(re.split(r"(?<=\.) ", doc.text)):
            out.append(Chunk(f"{doc.doc_id}#{i:04d}", doc.doc_id, i, sentence,
                             doc.metadata["company"]))
    return out


def scan(texts: dict[str, list[str]], owners: dict[str, str] | None = None):
    terms = leak_terms(suppress_corpus(corpus())[0])
    return scan_release(texts, terms, owners or {d: "ACME_q1" for d in texts})


def test_terms_cover_company_ticker_domain_and_executives():
    kinds = {t.text: t.kind for t in leak_terms(suppress_corpus(corpus())[0])}
    assert kinds["Acme Corporation"] == "protected" and kinds["ACME"] == "ticker"
    assert kinds["acme.com"] == "domain" and kinds["Acme"] == "alias"
    assert kinds["Jane Doe"] == "executive" and kinds["Jane Q. Doe"] == "executive"
    assert kinds["Jim Smith"] == "executive"  # nickname + surname of James Smith
    assert kinds["Doe"] == "surname"


def test_scan_reports_exact_and_other_case_separately():
    hits = scan({"doc_a": ["the ACME results", "ACME CORPORATION grew", "visit ACME.COM now"]})
    found = {(h.chunk, h.identifier, h.case) for h in hits}
    assert (0, "ACME", "exact case") in found
    assert (1, "Acme Corporation", "any case") in found
    assert (2, "acme.com", "any case") in found  # a domain has no case


def test_scan_is_whole_word_skips_placeholders_and_common_words():
    terms = [LeakTerm("Target", "alias", frozenset({"T"})), LeakTerm("Acme", "alias", frozenset({"A"}))]
    texts = ["our target grew", "Acmeville and [Company Name]", "Target grew", "we sold at Target"]
    hits = scan_release({"d": texts}, terms, {"d": "T"})
    # "target" is a common word: never in lower case, and capitalised only where it names (a
    # sentence's first word says nothing; mid-sentence it does)
    assert [(h.chunk, h.found) for h in hits] == [(3, "Target")]


def test_surname_alone_counts_only_in_its_own_company_documents():
    texts = {"own": ["Ms. Doe said so"], "other": ["Frost & Doe ranked us first"]}
    hits = scan(texts, {"own": "ACME_q1", "other": "BOLT_q1"})
    assert [(h.document, h.identifier, h.own_company) for h in hits] == [("own", "Doe", True)]


def test_full_executive_name_counts_in_any_document():
    hits = scan({"other": ["As Jane Doe said"]}, {"other": "BOLT_q1"})
    assert [(h.identifier, h.own_company) for h in hits] == [("Jane Doe", False)]


def test_accept_file_round_trip(tmp_path):
    hits = scan({"doc_a": ["the ACME results", "Jane Doe"]})
    path = tmp_path / "accept.csv"
    path.write_text(hits_csv(hits[:1]))
    accepted = read_accepted(path)
    assert hits[0].key in accepted and hits[1].key not in accepted
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ConfigError, match="columns"):
        read_accepted(bad)


def test_pseudonyms_are_random_seeded_and_not_in_id_order():
    ids = [f"T{i}_q1" for i in range(20)]
    a = pseudonym_map(ids, np.random.default_rng(0))
    assert a == pseudonym_map(ids, np.random.default_rng(0))
    assert a != pseudonym_map(ids, np.random.default_rng(1))
    assert all(re.fullmatch(r"doc_[0-9a-f]{6}", p) for p in a.values())
    assert len(set(a.values())) == 20
    assert sorted(ids, key=a.get) != ids  # the pseudonym order is not the corpus order
    renamed = pseudonym_map([f"X{i}" for i in range(20)], np.random.default_rng(0))
    assert list(renamed.values()) == list(a.values())  # independent of the ids themselves


def bundle(**kwargs):
    raw = corpus()
    clean, _ = suppress_corpus(raw)
    return build_bundle(raw, clean, chunks_of(clean), **kwargs)


def test_released_folder_holds_no_company_metadata(tmp_path):
    b = bundle(seed=3, publishable_columns=["quarter"])
    assert not b.hits, [h.sentence() for h in b.hits]
    b.write(tmp_path)
    released = {p.relative_to(tmp_path / "released").as_posix(): p.read_text()
                 for p in (tmp_path / "released").rglob("*") if p.is_file()}
    names = sorted(released)
    assert names[-1] == "manifest.csv" and all(re.fullmatch(r"docs/doc_[0-9a-f]{6}\.txt", n)
                                               for n in names[:-1])
    manifest = released["manifest.csv"].splitlines()
    assert manifest[0] == "doc_id,quarter" and len(manifest) == 4
    everything = " ".join(released) + " ".join(released.values())
    for doc, meta in META.items():
        for value in (doc, meta["company"], meta["ticker"], f"{doc}.txt"):
            assert value not in everything
    key = {p.name for p in (tmp_path / "key").iterdir()}
    assert {"pseudonyms.csv", "chunks.csv", "leaks.csv", "tab_annotations.json"} <= key
    back = (tmp_path / "key" / "pseudonyms.csv").read_text()
    assert all(doc in back for doc in META)


def test_protected_and_identifying_columns_cannot_be_published():
    with pytest.raises(ConfigError, match="protected column"):
        bundle(publishable_columns=["company"])
    with pytest.raises(ConfigError, match="cannot be published"):
        bundle(publishable_columns=["ticker"])
    with pytest.raises(ConfigError, match="not in the corpus"):
        bundle(publishable_columns=["sector"])


def test_unaccepted_hits_block_released_until_accepted(tmp_path):
    raw = corpus()
    clean, _ = suppress_corpus(raw)
    chunks = chunks_of(clean)
    chunks[1] = Chunk(chunks[1].chunk_id, "ACME_q1", 1, "The ACME team met Jane Doe.", "Acme Corporation")
    b = build_bundle(raw, clean, chunks)
    assert {h.identifier for h in b.hits} == {"ACME", "Jane Doe"}
    (tmp_path / "released").mkdir()
    (tmp_path / "released" / "stale.txt").write_text("old release")
    with pytest.raises(LeakError, match="2 identifier"):
        b.write(tmp_path)
    assert not (tmp_path / "released").exists()  # nothing released, no stale release either
    listing = tmp_path / "key" / "leaks.csv"
    assert len(listing.read_text().splitlines()) == 3
    b.write(tmp_path, read_accepted(listing))  # every listed hit accepted
    assert (tmp_path / "released" / "manifest.csv").exists()


def test_shuffled_chunks_keep_every_chunk_once():
    plain, shuffled = bundle(seed=5), bundle(seed=5, shuffle_chunks=True)
    assert plain.pseudonyms == shuffled.pseudonyms
    for name, text in plain.released.items():
        if name.endswith(".txt"):
            a, b = text.decode().strip().split("\n\n"), shuffled.released[name].decode().strip().split("\n\n")
            assert sorted(a) == sorted(b)
    assert plain.released != shuffled.released


def test_tab_annotations_mark_direct_and_quasi_changes():
    original = "Welcome to Acme. Jane Doe met Globex in Paris during the Summit."
    released = "Welcome to [Company Name]. [Executive 1] met Initech in Paris during the [Event]."
    mentions = changed_mentions(original, released, {"Globex": "Organization"})
    got = [(m["span_text"], m["entity_type"], m["identifier_type"]) for m in mentions]
    assert got == [("Acme", "ORG", "DIRECT"), ("Jane Doe", "PERSON", "DIRECT"),
                   ("Globex", "ORG", "QUASI"), ("Summit", "MISC", "QUASI")]
    for m in mentions:
        assert original[m["start_offset"]:m["end_offset"]] == m["span_text"]


def test_tab_file_in_key_has_one_record_per_document():
    b = bundle()
    records = json.loads(b.key["tab_annotations.json"])
    assert sorted(r["doc_id"] for r in records) == sorted(b.pseudonyms.values())
    acme = next(r for r in records if r["original_doc_id"] == "ACME_q1")
    spans = {m["span_text"] for m in acme["annotations"]["neswap"]["entity_mentions"]}
    assert {"Acme Corporation", "acme.com"} <= spans


def test_tab_records_diffed_on_every_core_are_the_serial_ones(monkeypatch):
    """Issue 21: the TAB diff of every document was 100 s of a 100k release's key tables on one
    core. Past ``PARALLEL_CHARS`` the documents are diffed in two spawned workers: the same
    records, in the same order, as diffing them here."""
    import neswap_core.publish.annotations as annotations
    from neswap_core.models import fit_processes

    rng = np.random.default_rng(3)
    words = ["Acme", "revenue", "grew", "Paris", "the", "margin", "Globex", "quarter", ","]
    originals = {f"D{i}": " ".join(rng.choice(words, size=int(rng.integers(50, 400))))
                 for i in range(24)}  # fmt: skip
    released = {d: t.replace("Acme", "[Company Name]").replace("Paris", "Berlin")
                for d, t in list(originals.items())[:-1]}  # one document without a release
    pseudonyms = {d: f"P{(7 * i) % 24:02d}" for i, d in enumerate(originals)}
    categories = {d: {"Paris": "Location"} for d in originals}
    serial = annotations.tab_documents(originals, released, pseudonyms, categories, processes=1)
    monkeypatch.setattr(annotations, "PARALLEL_CHARS", 1_000)
    calls = []
    real = fit_processes.run_in_processes
    monkeypatch.setattr(annotations, "run_in_processes",
                        lambda fns, n: calls.append((len(fns), n)) or real(fns, n))
    parallel = annotations.tab_documents(originals, released, pseudonyms, categories, processes=2)
    assert calls == [(2, 2)] and parallel == serial
    assert [r["doc_id"] for r in serial] == sorted(pseudonyms.values())
    assert any(r["annotations"]["neswap"]["entity_mentions"] for r in serial)
