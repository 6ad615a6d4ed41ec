"""People without a list (issue 10 item 3): executives detected in the text, and their variants."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from neswap_core.corpus import Corpus, Document
from neswap_core.prepare.pipeline import clean_corpus
from neswap_core.text.entities import load_ner
from neswap_core.text.identifiers import near_miss_surnames, suppress_identifiers
from neswap_core.text.loading import load_corpus
from neswap_core.text.nicknames import FORMAL, NICKNAMES
from neswap_core.text.people import add_detected_people, detect_names, merge_people, same_person
from neswap_core.text.presentation import extract_presentations

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def nlp():
    return load_ner()


def test_names_in_title_context_are_detected(nlp):
    texts = [
        "Joining me today is our CEO, Margaret Ellison. Revenue grew 18%.",
        "Thomas Raskin, our Chief Financial Officer, will review the numbers.",
        "With that, I'll turn it over to Priyanka Desai.",
        "I'm joined today by Dana Whitlock and Robert Okafor.",
        "Good morning. I'm Harold Finch, head of investor relations.",
        "As Jagtar mentioned, margins improved. Before Heath and I get into the slides, thanks.",
        "Sales in Paris grew. Analysts at Goldman Sachs were pleased. Our teams in Ohio did well.",
    ]
    found = detect_names(texts, nlp)
    assert "Margaret Ellison" in found[0]
    assert "Thomas Raskin" in found[1]
    assert "Priyanka Desai" in found[2]
    assert {"Dana Whitlock", "Robert Okafor"} <= set(found[3])
    assert "Harold Finch" in found[4]
    assert {"Jagtar", "Heath"} <= set(found[5])  # spaCy tags these ORG / nothing
    assert found[6] == []


def test_a_given_name_alone_is_completed_from_the_text(nlp):
    (found,) = detect_names(
        ["Jagtar Narula, Executive Vice President, joins me. As Jagtar will discuss, we grew."], nlp
    )
    assert found == ["Jagtar Narula"]


def test_same_person_and_merge_keep_listed_names_first():
    assert same_person("Margaret Ellison", "Meg Ellison")
    assert same_person("Robert Okafor", "Bob Okafor") and same_person("Bob Okafor", "Robert Okafor")
    assert same_person("Kevin J. Yeaman", "Kevin") and not same_person("Kevin Yeaman", "Kevin Lee")
    merged = merge_people(
        ("Margaret Ellison",), ["Meg Ellison", "Tom Raskin", "Kevin", "Kevin Yeaman"]
    )
    assert merged == ("Margaret Ellison", "Tom Raskin", "Kevin Yeaman")


def test_nickname_table_is_one_large_table_with_the_usual_pairs():
    assert len(NICKNAMES) >= 150
    for formal, nick in [
        ("Robert", "Bob"),
        ("Robert", "Rob"),
        ("William", "Bill"),
        ("William", "Will"),
        ("Elizabeth", "Liz"),
        ("Elizabeth", "Beth"),
        ("James", "Jim"),
        ("James", "Jimmy"),
        ("Martin", "Marty"),
        ("Randal", "Randy"),
        ("Randall", "Randy"),
        ("Michael", "Mike"),
    ]:
        assert nick in NICKNAMES[formal] and formal in FORMAL[nick]


def test_variants_nicknames_possessives_and_near_miss_spellings():
    execs = ("Martin Kowalczyk", "Randal Whitfield", "Adam Norwitt")
    text = (
        "Marty and Randy spoke. Whitfield's team and Adam Norwit agreed; Norwit's plan holds. "
        "Marty Kowalczyk signed."
    )
    result = suppress_identifiers(text, (), execs)
    assert result.text == (
        "[Executive 1] and [Executive 2] spoke. [Executive 2]'s team and [Executive 3] agreed; "
        "[Executive 3]'s plan holds. [Executive 1] signed."
    )
    assert ("Adam Norwit", "[Executive 3]") in result.executive_mentions


def test_near_misses_need_the_first_letter_and_are_never_words_of_the_text():
    assert near_miss_surnames("Sales rose; sales of Salen products.", ("Kristina Salen",)) == ()
    assert near_miss_surnames("Thanks, Tsoumis.", ("Ron Tsoumas",)) == ((0, "Tsoumis"),)
    assert near_miss_surnames("Hello Pitts.", ("Heath Mitts",)) == ()  # first letter differs
    assert near_miss_surnames("Hello Shaw.", ("Sujal Shah",)) == ()  # surname under 5 letters


def test_detected_people_extend_the_listed_ones(nlp):
    doc = Document(
        "d",
        "Joining me is our CFO, Tom Raskin. As Meg mentioned, revenue grew. Tom will review it.",
        executives=("Margaret Ellison",),
        aliases=("Brightwater",),
    )
    corpus, report = add_detected_people(Corpus((doc,)), nlp)
    assert corpus.documents[0].executives == ("Margaret Ellison", "Tom Raskin")
    assert report.loc[0, "detected"] == "Tom Raskin"


def test_bundled_sample_without_executives_csv_suppresses_names(tmp_path, nlp):
    """The defect: without executives.csv the sample kept every executive name."""
    for entry in (ROOT / "data" / "sample").iterdir():
        if entry.name != "executives.csv":
            (shutil.copytree if entry.is_dir() else shutil.copy)(entry, tmp_path / entry.name)
    corpus = load_corpus(tmp_path)
    assert all(not d.executives for d in corpus.documents)
    clean = clean_corpus(corpus, nlp=nlp)
    assert clean.identifiers["executive"].sum() >= 50
    text = "\n".join(d.text for d in clean.corpus.documents)
    for name in ("Norwitt", "Lampo", "Salvino", "Mondello", "McMahon", "Kopit Levien", "Neri"):
        assert name not in text


def test_a_name_that_starts_a_contraction_is_left_alone():
    result = suppress_identifiers(
        "Don that concludes it. Don't worry. Thanks, Don.", (), ("Don Duda",)
    )
    assert result.text == "[Executive 1] that concludes it. Don't worry. Thanks, [Executive 1]."


DEV = ROOT.parent / "shared" / "corpus" / "dev"


@pytest.mark.slow
@pytest.mark.skipif(not (DEV / "executives.csv").is_file(), reason="shared dev corpus absent")
def test_dev_executives_are_found_without_executives_csv(tmp_path, nlp):
    """Issue 10: with the file withheld, >= 98 % of the listed executives' name mentions go."""
    import pandas as pd

    for entry in DEV.iterdir():
        if entry.name not in ("executives.csv", "attacker"):
            (tmp_path / entry.name).symlink_to(entry.resolve())
    clean = clean_corpus(load_corpus(tmp_path), nlp=nlp)
    raw = {d.doc_id: d.text for d in extract_presentations(load_corpus(tmp_path))[0].documents}
    listed = pd.read_csv(DEV / "executives.csv", dtype=str, keep_default_na=False)
    before = after = 0
    for doc in clean.corpus.documents:
        rows = listed[(listed["ticker"] == doc.metadata["ticker"]) & (listed["role"] != "")]
        for name in rows["name"]:
            parts = name.replace("Dr.", "").split()
            for form in {name, f"{parts[0]} {parts[-1]}", parts[-1]}:
                pattern = rf"(?<![\w\[]){re.escape(form)}(?!\w)"
                before += len(re.findall(pattern, raw[doc.doc_id]))
                after += len(re.findall(pattern, doc.text))
    assert before > 30 and 1 - after / before >= 0.98
