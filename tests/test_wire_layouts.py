"""Wire-service transcripts and event briefs (issue 23 item 4), page furniture that is not people
(issue 20 item 3), and the sanity rule that never reports a tiny extraction as a success."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from neswap_core.corpus import Document
from neswap_core.prepare.pipeline import clean_corpus
from neswap_core.publish.leaks import leak_terms, scan_release
from neswap_core.text.furniture import furniture_lines
from neswap_core.text.layouts import detect_layout, parse_transcript
from neswap_core.text.loading import load_corpus
from neswap_core.text.people import names_in_title_context
from neswap_core.text.presentation import MIN_SHARE_KEPT, extract_presentation, text_participants
from tests.wire_fixtures import (
    ANALYSTS,
    BRIEF_KEPT,
    BRIEF_QA,
    EXECUTIVES,
    OPERATOR_INTRO,
    PRESENTATION,
    event_brief,
    transcript,
)

VARIANTS = {
    "as in the issue": {},
    "page furniture": {"furniture": True},
    "separators": {"separators": True},
    "headings in capitals": {"upper_headings": True},
    "company without its period": {"company_in_lines": "Halvorsen Marine Holdings Inc"},
    "everything": {"furniture": True, "separators": True, "upper_headings": True},
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_wire_transcripts_keep_exactly_the_presentation(variant):
    text = transcript(**VARIANTS[variant])
    assert detect_layout(text) == "streetevents"
    result = extract_presentation(Document("d", text))
    assert result.status == "extracted" and result.found
    assert result.text == PRESENTATION  # the headings found are used: no Q&A, no lists
    assert OPERATOR_INTRO[:30] not in result.text and "Research Division" not in result.text
    assert "[" not in result.text and "EDITED TRANSCRIPT" not in result.text
    assert result.marker.lower() == "questions and answers"
    assert "Research Division" in result.dropped and "Owen Faraday" in result.dropped


@pytest.mark.parametrize("variant", VARIANTS)
def test_both_participant_lists_give_executives_and_analysts(variant):
    people = {p.name: p.company_side for p in text_participants(transcript(**VARIANTS[variant]))}
    assert people == {**dict.fromkeys(EXECUTIVES, True), **dict.fromkeys(ANALYSTS, False)}


def test_speaker_lines_take_the_listed_person_and_side():
    parsed = parse_transcript(transcript(company_in_lines="Halvorsen Marine Holdings Inc"))
    speakers = [(t.speaker, t.company_side, t.section) for t in parsed.turns if t.speaker]
    assert speakers[1] == ("Carla Mendes", True, "presentation")
    assert ("Ingrid M. Solberg", True, "presentation") in speakers  # spoken "Ingrid Solberg"
    assert ("Owen Faraday", False, "qa") in speakers


def test_page_furniture_is_neither_speech_nor_a_person():
    """The defect of issue 20: the footer "EDITED TRANSCRIPT" became a participant (it stood
    inside the participant list at a page break) and stayed in the speech."""
    text = transcript(furniture=True, separators=True)
    lines = text.split("\n")
    found = {lines[i] for i in furniture_lines(text)}
    assert "EDITED TRANSCRIPT" in found and any(line.startswith("©2022") for line in found)
    assert any(line.startswith("AUG 04, 2022") for line in found)  # the running header
    assert not found & {"Presentation", "Operator    [1]", " * Tobias Renwick"}
    names = [p.name for p in text_participants(text)]
    assert names == [*EXECUTIVES, *ANALYSTS]
    assert "TRANSCRIPT" not in extract_presentation(Document("d", text)).text
    # people detected in title context: a footer is never a name
    sentence = "I'm joined by EDITED TRANSCRIPT today."
    assert names_in_title_context(sentence, [(14, 31)]) == []


def test_event_brief_keeps_its_sections_before_the_qa():
    text = event_brief()
    assert detect_layout(text) == "brief"
    result = extract_presentation(Document("d", text))
    assert result.status == "extracted" and result.layout == "brief"
    assert result.text == BRIEF_KEPT
    assert "OVERVIEW" not in result.text and "FINANCIAL DATA" not in result.text
    assert BRIEF_QA[0].strip() in result.dropped and "Kestrel" not in result.text
    assert "OVERVIEW" in result.message and "QUESTIONS AND ANSWERS" in result.message
    people = {p.name: p.company_side for p in text_participants(text)}
    assert people == {**dict.fromkeys(EXECUTIVES, True), **dict.fromkeys(ANALYSTS, False)}


def test_an_extraction_that_keeps_a_sliver_is_never_a_success():
    """The defect: an event brief kept 127 of 44,800 characters and called it "extracted"
    (a participant list at the top was taken for the end of the text)."""
    figures = "\n".join(f"Segment {k} revenue rose {k} percent on volume" for k in range(200))
    text = (
        "ACME EVENT SYNOPSIS\nCALL PARTICIPANTS\n * Jane Roe\n   Acme - CFO\n\n" + figures
        + "\n\nQUESTIONS AND ANSWERS\n" + "Q: What about pricing? A: It held.\n" * 40
    )
    result = extract_presentation(Document("d", text))
    share = len(result.text) / len(text)
    assert result.status != "extracted" or share >= MIN_SHARE_KEPT
    assert "Segment 150 revenue" in result.text  # the body is never lost
    assert "Jane Roe" not in result.text


def test_participant_lines_never_reach_a_prose_or_unknown_text():
    text = (
        "Welcome to the call. Revenue grew strongly this year and margins expanded.\n"
        "Jane Doe, Big Bank Securities, Research Division - Analyst\n"
        "Costs fell and cash flow was strong in every region we serve.\n"
    ) * 3
    result = extract_presentation(Document("d", text))
    assert "Research Division" not in result.text and "Costs fell" in result.text


# --- through the loader and the cleaning step ------------------------------------------------------
@pytest.fixture()
def wire_folder(tmp_path):
    docs = {
        "HMH_q2_2022": transcript(furniture=True),
        "HMH_brief_q2_2022": event_brief(),
        "HMH_q3_2022": transcript(separators=True, upper_headings=True),
    }
    (tmp_path / "docs").mkdir()
    for doc_id, text in docs.items():
        (tmp_path / "docs" / f"{doc_id}.txt").write_text(text)
    pd.DataFrame({"doc_id": list(docs), "company": "Halvorsen Marine Holdings Inc",
                  "ticker": "HMH"}).to_csv(tmp_path / "manifest.csv", index=False)
    return tmp_path


def test_listed_people_are_suppressed_and_the_release_scans_clean(wire_folder):
    corpus = load_corpus(wire_folder)
    for doc in corpus.documents:
        assert set(doc.executives) == set(EXECUTIVES) and set(doc.analysts) == set(ANALYSTS)
    clean = clean_corpus(corpus, detect_people=False)
    assert set(clean.presentation["status"]) == {"extracted"}
    for doc in clean.corpus.documents:
        assert not re.search(r"Solberg|Renwick|Mendes|Faraday|Anand|Halvorsen", doc.text)
        assert "Research Division" not in doc.text and "TRANSCRIPT" not in doc.text
    full = next(d for d in clean.corpus.documents if d.doc_id == "HMH_q2_2022")
    assert "[Executive 2]" in full.text  # Ingrid Solberg, listed second
    texts = {d.doc_id: [d.text] for d in clean.corpus.documents}
    hits = scan_release(texts, leak_terms(clean.corpus), {d: d for d in texts})
    assert hits == []


def test_found_headings_are_used_even_when_no_speaker_reads_as_management():
    """The defect of issue 23: headings "found" in the message, then the whole text kept."""
    text = "Presentation\n" + transcript().split("Presentation\n", 1)[1]  # no participant lists
    text = re.sub(r"^(\S[^,\n]*), [^\n]*?(\s+\[\d+\])$", r"\1, Somebody - Analyst\2", text,
                  flags=re.M)  # every speaker line reads as an outsider's
    result = extract_presentation(Document("d", text))
    assert result.status == "extracted" and result.text == PRESENTATION
    assert "'Presentation' section" in result.message
