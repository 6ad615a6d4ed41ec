"""The leak scan without false blocks on common words, still catching true leaks (issue 23 item 3,
issue 20 item 3): company names that are English words, handles, placeholder residue, analyst
participant lines, and the grouping the leak gate shows."""

from __future__ import annotations

import pytest

from neswap_core.corpus import Corpus, Document
from neswap_core.publish.leaks import LeakTerm, group_hits, leak_terms, scan_release
from neswap_core.text.identifiers import suppress_corpus, suppress_identifiers
from neswap_core.text.words import is_common_word

META = {
    "RF_q1": {"company": "Regions Financial Corporation", "ticker": "RF"},
    "TRV_q1": {"company": "The Travelers Companies, Inc.", "ticker": "TRV"},
    "APH_q1": {"company": "Amphenol Corporation", "ticker": "APH"},
}
ALIASES = {"RF_q1": ("Regions",), "TRV_q1": ("Travelers",), "APH_q1": ()}


def corpus() -> Corpus:
    docs = tuple(
        Document(d, "Revenue grew.", dict(META[d]), (), ALIASES[d], analysts=("Pat Smith",) if d == "RF_q1" else ())
        for d in META
    )
    return Corpus(docs, protect="company")


def scan(*chunks: str, owner: str = "APH_q1"):
    """Hits of the corpus's identifiers in one released document of ``owner``'s company."""
    terms = leak_terms(suppress_corpus(corpus())[0])
    return scan_release({"doc_x": list(chunks)}, terms, {"doc_x": owner})


def found(hits) -> list[tuple[str, str]]:
    return [(h.identifier, h.found) for h in hits]


def test_common_nouns_that_are_company_names_pass():
    """The false blocks of issue 23: every release of a bank-and-insurer corpus stopped on these."""
    hits = scan(
        "We expanded in the Finger Lakes regions and other cat-prone regions.",
        "Demand from domestic travelers was strong; travelers' spending rose.",
        "Regions with high growth did well. Travelers returned in the summer.",  # sentence starts
        "GROWTH ACROSS ALL REGIONS",  # a heading in capitals
    )
    assert hits == []


@pytest.mark.parametrize(
    "text, identifier, found_text",
    [
        ("Our partner Regions Bank grew deposits.", "Regions", "Regions"),
        ("Regions Bank grew deposits.", "Regions", "Regions"),  # a corporate suffix follows
        ("Customers at Regions we surveyed were happy.", "Regions", "Regions"),  # mid-sentence
        ("Travelers' combined ratio improved.", "Travelers", "Travelers"),  # a possessive
        ("The Travelers’s results were strong.", "Travelers", "Travelers"),
        ("REGIONS FINANCIAL reported today.", "Regions Financial", "REGIONS FINANCIAL"),
        ("Regions Financial reported today.", "Regions Financial", "Regions Financial"),
    ],
)
def test_true_leaks_of_common_word_names_are_hits(text, identifier, found_text):
    assert (identifier, found_text) in found(scan(text))


def test_a_name_that_is_not_a_common_word_is_found_in_any_case():
    assert not is_common_word("Amphenol")
    assert found(scan("the amphenol team", "AMPHENOL grew")) == [
        ("Amphenol", "amphenol"),
        ("Amphenol", "AMPHENOL"),
    ]


@pytest.mark.parametrize(
    "name",
    ["Progressive", "Principal", "Citizens", "Discover", "Target", "Apple", "Visa", "Ball",
     "Gap", "Crown", "Hershey"],
)
def test_the_rule_is_general_not_a_list(name):
    """Decided by word frequencies (wordfreq), for every company name that is an English word."""
    assert is_common_word(name)
    terms = [LeakTerm(name, "alias", frozenset({"own"}))]
    lower = name.lower()
    passing = [f"The {lower} was there.", f"{name} was the first word.", f"a {lower}'s edge"]
    hitting = [f"We work with {name} on it.", f"{name}'s sales rose.", f"{name} Inc. said so."]
    hits = scan_release({"d": passing + hitting}, terms, {"d": "own"})
    assert sorted({h.chunk for h in hits}) == [3, 4, 5]


def test_a_ticker_that_is_a_word_counts_only_as_a_ticker():
    terms = [LeakTerm("ALL", "ticker", frozenset({"own"})), LeakTerm("TRV", "ticker", frozenset({"own"}))]
    texts = ["ALL RIGHTS RESERVED", "We are ALL in.", "Allstate (NYSE: ALL) grew", "(ALL) rose", "TRV rose"]
    hits = scan_release({"d": texts}, terms, {"d": "own"})
    assert [(h.chunk, h.identifier) for h in hits] == [(2, "ALL"), (3, "ALL"), (4, "TRV")]


def test_a_common_surname_counts_where_it_names_the_person():
    doc = Document("own", "x", {"company": "Acme Widgets"}, ("Jane Price",), ())
    terms = leak_terms(Corpus((doc,), protect="company"))
    texts = ["Price increases held.", "As Ms. Price said, we grew.", "thanks to Price and the team"]
    hits = scan_release({"d": texts}, terms, {"d": "own"})
    assert [(h.chunk, h.identifier) for h in hits] == [(1, "Price"), (2, "Price")]


def test_listed_analysts_are_suppressed_and_scanned_in_their_own_documents():
    result = suppress_identifiers("Thanks, Pat Smith, for the question.", (), (), ("Pat Smith",))
    assert result.text == "Thanks, [Analyst 1], for the question." and result.counts["analyst"] == 1
    assert [h.kind for h in scan("We thank Pat Smith.", owner="RF_q1")] == ["analyst"]
    assert scan("We thank Pat Smith.", owner="TRV_q1") == []  # covers several companies


# --- shapes ---------------------------------------------------------------------------------------
def test_handles_residue_and_analyst_lines_are_hits():
    hits = scan(
        "Follow us at @AMDNews and @MicronTech for updates.",
        "[Company Name] Inc reported results; see [Company Name].com for slides.",
        "Jane Doe, Big Bank Securities, Research Division - Analyst [10] Congrats on the quarter.",
        "Pat Smith - Big Bank Securities - Analyst",
    )
    kinds = [(h.kind, h.identifier) for h in hits]
    assert ("handle", "@AMDNews") in kinds and ("handle", "@MicronTech") in kinds
    assert ("residue", "[Company Name] Inc") in kinds and ("residue", "[Company Name].com") in kinds
    assert [k for k in kinds if k[0] == "participant line"] == [
        ("participant line", "Big Bank Securities, Research Division - Analyst"),
        ("participant line", "Big Bank Securities - Analyst"),
    ]


def test_plain_placeholders_and_e_mail_style_text_are_not_shapes():
    assert scan("[Company Name] reported growth; [Company Name]'s margin rose.", "ratio @ 3%") == []


def test_suppression_removes_handles_and_residue_at_the_source():
    text = "Acme Widgets Inc reported. Follow @AcmeNews or see Acme Widgets.Com; Acme Widgets, Inc., grew."
    result = suppress_identifiers(text, ("Acme Widgets",), ())
    assert result.text == "[Company Name] reported. Follow [URL] or see [URL]; [Company Name], grew."
    assert result.counts["company"] == 2 and result.counts["url"] == 2
    terms = leak_terms(suppress_corpus(corpus())[0])
    assert scan_release({"d": [result.text]}, terms, {"d": "APH_q1"}) == []


# --- grouping for the leak gate ---------------------------------------------------------------------
def test_hits_group_by_identifier_with_counts_and_examples():
    terms = leak_terms(suppress_corpus(corpus())[0])
    docs = {
        "doc_a": ["at Regions we grew", "Regions Bank again", "the AMPHENOL deal"],
        "doc_b": ["with Regions Bank", "Amphenol's plant"],
    }
    hits = scan_release(docs, terms, {"doc_a": "RF_q1", "doc_b": "APH_q1"})
    groups = group_hits(hits, examples=2)
    assert [(g.identifier, g.hits, g.documents) for g in groups] == [
        ("Regions", 3, 2),
        ("Amphenol", 2, 2),
    ]
    regions = groups[0]
    assert regions.own_company == 2 and regions.cases == {"exact case": 3}
    assert len(regions.examples) == 2 and "doc_b" not in regions.examples[0]
    assert "[[Regions]]" in regions.examples[0] and "[[Regions]]" in regions.examples[1]
    assert set(regions.keys) == {h.key for h in hits if h.identifier == "Regions"}
    assert groups[1].cases == {"any case": 1, "exact case": 1}
    assert "3 hit(s) in 2 document(s)" in regions.sentence()
