"""Direct-identifier suppression: companies, URLs, executives (SPEC §2.3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neswap_core.config import COMPANY_PLACEHOLDER, PLACEHOLDER_PATTERN, URL_PLACEHOLDER
from neswap_core.corpus import Corpus, Document
from neswap_core.text.identifiers import (
    derive_aliases,
    document_aliases,
    suppress_corpus,
    suppress_identifiers,
)
from neswap_core.text.loading import load_corpus
from neswap_core.text.presentation import extract_presentations

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "corpus"
APH = ("Amphenol Corporation", "Amphenol", "amphenol.com", "APH")
APH_EXECS = ("Craig A. Lampo", "R. Adam Norwitt")


def _whole_word(term: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text) is not None


def _suppressed_sample():
    corpus = load_corpus(ROOT / "data" / "sample")
    presented, _ = extract_presentations(corpus)
    return presented, *suppress_corpus(presented)


# --- every bundled document -------------------------------------------------------------------
def test_no_alias_of_the_own_company_survives_in_any_bundled_document():
    _, suppressed, _ = _suppressed_sample()
    for doc in suppressed.documents:
        assert len(doc.aliases) >= 3, doc.doc_id  # name, derived forms / aliases.csv, ticker
        for alias in doc.aliases:
            assert not _whole_word(alias, doc.text), (doc.doc_id, alias)


def test_no_executive_surname_or_full_name_survives_in_any_bundled_document():
    _, suppressed, _ = _suppressed_sample()
    for doc in suppressed.documents:
        assert doc.executives, doc.doc_id
        for name in doc.executives:
            tokens = [t for t in name.split() if not re.fullmatch(r"[A-Z]\.", t)]
            for term in (name, " ".join(tokens), tokens[-1]):
                assert not _whole_word(term, doc.text), (doc.doc_id, term)


def test_report_counts_equal_the_placeholders_written():
    before, suppressed, report = _suppressed_sample()
    assert list(report.columns) == ["doc_id", "company", "url", "executive", "analyst"]
    assert report["doc_id"].tolist() == suppressed.doc_ids
    for (_, row), doc, raw in zip(
        report.iterrows(), suppressed.documents, before.documents, strict=True
    ):
        assert not re.search(PLACEHOLDER_PATTERN, raw.text)
        assert doc.text.count(COMPANY_PLACEHOLDER) == row["company"]
        assert doc.text.count(URL_PLACEHOLDER) == row["url"]
        assert len(re.findall(r"\[Executive \d+\]", doc.text)) == row["executive"]
        assert len(re.findall(r"\[Analyst \d+\]", doc.text)) == row["analyst"]
        indices = {int(i) for i in re.findall(r"\[Executive (\d+)\]", doc.text)}
        assert indices <= set(range(1, len(doc.executives) + 1))
    assert report["company"].sum() > 100 and report["executive"].sum() > 50


# --- companies --------------------------------------------------------------------------------
def test_amphenol_example_exactly():
    text = (
        "This is Craig Lampo Amphenol's CFO, and I'm here together with Adam Norwitt. "
        "And then, Adam will give an overview. Visit amphenol.com or https://www.amphenol.com/ir. "
        "AMPHENOL grew. Amphenolic resins are not us."
    )
    result = suppress_identifiers(text, APH, APH_EXECS)
    assert result.text == (
        "This is [Executive 1] [Company Name]'s CFO, and I'm here together with [Executive 2]. "
        "And then, [Executive 2] will give an overview. Visit [URL] or [URL]. "
        "[Company Name] grew. Amphenolic resins are not us."
    )
    assert result.counts == {"company": 2, "url": 2, "executive": 3, "analyst": 0}


def test_longest_alias_first_and_case_rules():
    aliases = ("Booz Allen Hamilton", "Booz Allen", "The Times", "ServiceNow", "TE")
    text = (
        "Booz Allen Hamilton and Booz Allen. The Times and the Times, but at the times we met. "
        "SERVICENOW, Servicenow and servicenow. TE grew; te and Te did not."
    )
    result = suppress_identifiers(text, aliases, ())
    assert result.text == (
        "[Company Name] and [Company Name]. [Company Name] and [Company Name], but at the times "
        "we met. [Company Name], [Company Name] and [Company Name]. [Company Name] grew; te and "
        "Te did not."
    )
    assert result.counts["company"] == 8


def test_placeholders_are_never_touched_and_suppression_is_idempotent():
    aliases = ("Company", "Name", "URL", "Executive")
    text = "[Company Name] and [URL] and [Executive 2] stay; Company and Name go."
    result = suppress_identifiers(text, aliases, ("Exec Utive",))
    assert (
        result.text
        == "[Company Name] and [URL] and [Executive 2] stay; [Company Name] and [Company Name] go."
    )
    again = suppress_identifiers(result.text, aliases, ("Exec Utive",))
    assert again.text == result.text and sum(again.counts.values()) == 0


@pytest.mark.parametrize(
    ("company", "expected", "absent"),
    [
        (
            "Dolby Laboratories, Inc.",
            ["Dolby Laboratories, Inc.", "Dolby Laboratories", "Dolby"],
            [],
        ),
        ("The New York Times Company", ["New York Times"], ["New York Times Company"]),
        ("Global Payments Inc.", ["Global Payments"], ["Global"]),
        ("3D Systems Corporation", ["3D Systems"], ["3D"]),
        ("Gannett Co., Inc.", ["Gannett"], []),
        ("The Interpublic Group of Companies, Inc.", ["Interpublic Group", "Interpublic"], []),
        (
            "Hewlett Packard Enterprise Company",
            ["Hewlett Packard Enterprise", "Hewlett Packard"],
            ["Hewlett"],
        ),
        ("World Wrestling Entertainment, Inc.", ["World Wrestling"], ["World"]),
    ],
)
def test_derived_aliases(company, expected, absent):
    aliases = derive_aliases(company)
    assert aliases[0] == company
    assert set(expected) <= set(aliases) and not set(absent) & set(aliases)


def test_document_aliases_skip_word_like_tickers_unless_listed():
    assert "IT" not in document_aliases({"company": "Gartner, Inc.", "ticker": "IT"})
    assert "A" not in document_aliases({"company": "Agilent Technologies", "ticker": "A"})
    assert "IT" in document_aliases({"ticker": "IT"}, ["IT"])
    assert document_aliases({"company": "Jabil Inc.", "ticker": "JBL"}) == (
        "Jabil Inc.",
        "Jabil",
        "JBL",
    )


# --- URLs -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("See https://ir.example.com/q3?x=1.", "See [URL]."),
        ("Visit www.example.org, then", "Visit [URL], then"),
        ("Mail ir@example.co.uk today", "Mail [URL] today"),
        ("on investors.quillfeather.com and dolby.io.", "on [URL] and [URL]."),
        ("Slides at jabil.com/investors/q3.", "Slides at [URL]."),
        (
            "U.S. sales rose 2.5% e.g. in revenue.Net terms",
            "U.S. sales rose 2.5% e.g. in revenue.Net terms",
        ),
    ],
)
def test_urls_emails_and_domains(text, expected):
    assert suppress_identifiers(text, (), ()).text == expected


def test_domain_aliases_are_urls_even_with_an_unusual_tld():
    result = suppress_identifiers("Go to dxc.technology or DXC.com.", ("dxc.technology", "DXC"), ())
    assert result.text == "Go to [URL] or [URL]."
    assert result.counts == {"company": 0, "url": 2, "executive": 0, "analyst": 0}


# --- executives -------------------------------------------------------------------------------
def test_executive_forms_and_indices():
    execs = ("Vincent K. McMahon", "Nick Khan", "Stephanie McMahon", "Dr.Gerald Paul", "Lewis Chew")
    text = (
        "Leading are Vince McMahon, Nick Khan; Stephanie McMahon and Vincent K. McMahon. "
        "As Nick mentioned, McMahon agreed. Gerald Paul spoke. Yes, Mr. Chew, your line is open. "
        "Thanks, Lewis."
    )
    result = suppress_identifiers(text, (), execs)
    assert result.text == (
        "Leading are [Executive 1], [Executive 2]; [Executive 3] and [Executive 1]. "
        "As [Executive 2] mentioned, [Executive 1] agreed. [Executive 4] spoke. Yes, "
        "Mr. [Executive 5], your line is open. Thanks, [Executive 5]."
    )
    assert result.counts["executive"] == 9


def test_first_names_ambiguity_rules():
    execs = ("Michael Nelson", "Mike Hayford", "Mark Mondello", "Ken Sharp")
    text = (
        "Mike said so. Michael agreed. Mark my words. As Mark said, Adam Tindle and "
        "Mark Delaney asked. Sharp declines hit. Mr. Sharp joined. Ken returns."
    )
    result = suppress_identifiers(text, (), execs)
    assert result.text == (
        "[Executive 2] said so. [Executive 1] agreed. Mark my words. As [Executive 3] said, Adam "
        "Tindle and Mark Delaney asked. Sharp declines hit. Mr. [Executive 4] joined. "
        "[Executive 4] returns."
    )


def test_michael_alone_is_not_taken_for_an_executive_called_mike():
    result = suppress_identifiers(
        "With the additions of Ken and Michael.", (), ("Mike Salvino", "Ken Sharp")
    )
    assert result.text == "With the additions of [Executive 2] and Michael."


def test_names_across_line_breaks():
    result = suppress_identifiers("with Adam\nNorwitt and Booz\nAllen", ("Booz Allen",), APH_EXECS)
    assert result.text == "with [Executive 2] and [Company Name]"


# --- property ---------------------------------------------------------------------------------
WORDS = st.sampled_from(["revenue", "grew", "the", "quarter", "Strong", "margins", "in", "Ohio"])
MENTIONS = st.sampled_from(
    ["Amphenol", "Amphenol's", "APH", "Craig Lampo", "Lampo", "amphenol.com"]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(WORDS, MENTIONS), min_size=1, max_size=30))
def test_every_inserted_identifier_becomes_exactly_one_placeholder(tokens):
    text = " ".join(tokens)
    result = suppress_identifiers(text, APH, APH_EXECS)
    n_company = sum(t in ("Amphenol", "Amphenol's", "APH") for t in tokens)
    n_exec = sum(t in ("Craig Lampo", "Lampo") for t in tokens)
    n_url = tokens.count("amphenol.com")
    assert result.counts == {"company": n_company, "url": n_url, "executive": n_exec, "analyst": 0}
    for alias in APH + ("Lampo",):
        assert not _whole_word(alias, result.text)


def test_suppress_corpus_uses_metadata_when_aliases_are_missing():
    doc = Document(
        "x",
        "Jabil Inc. and Jabil grew; JBL too.",
        metadata={"company": "Jabil Inc.", "ticker": "JBL"},
    )
    suppressed, report = suppress_corpus(Corpus((doc,)))
    assert (
        suppressed.documents[0].text
        == "[Company Name] and [Company Name] grew; [Company Name] too."
    )
    assert suppressed.documents[0].aliases == ("Jabil Inc.", "Jabil", "JBL")
    assert report.loc[0, "company"] == 3


# --- dev corpus (skipped when absent) ---------------------------------------------------------
@pytest.mark.skipif(not (SHARED / "dev").is_dir(), reason="shared dev corpus not available")
def test_no_alias_survives_in_the_dev_corpus():
    presented, _ = extract_presentations(load_corpus(SHARED / "dev"))
    suppressed, _ = suppress_corpus(presented)
    for doc in suppressed.documents:
        for alias in doc.aliases:
            assert not _whole_word(alias, doc.text), (doc.doc_id, alias)
