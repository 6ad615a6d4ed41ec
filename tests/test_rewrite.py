"""Defects of issue 10 item 6 in text rewriting: punctuation edges and corpus-wide role C."""

from __future__ import annotations

from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.generate.rewrite import apply_roles, rewrite_chunk, swap_pair


def make(cid: str, text: str, *entities: tuple[str, str], protected: str = "A") -> Chunk:
    """A chunk whose spans are the first occurrence of each (category, string) in ``text``."""
    spans, pos = [], 0
    for category, value in entities:
        start = text.index(value, pos)
        spans.append(EntitySpan(start, start + len(value), category[:3].upper(), category, value))
        pos = start + len(value)
    return Chunk(f"{cid}#0000", cid, 0, text, protected, tuple(spans))


def test_an_entity_ending_with_a_dot_is_not_found_inside_a_longer_abbreviation():
    c = make("a", "Sales in the U.S. grew; the U.S.A. and U.S. too.", ("Location", "U.S."))
    new = rewrite_chunk(c, {("Location", "U.S."): "India"})
    assert new.text == "Sales in the India grew; the U.S.A. and India too."


def test_an_entity_starting_with_a_dot_is_not_found_inside_a_word():
    c = make("a", "We ship .NET tools; ASP.NET and .NET again.", ("Product", ".NET"))
    new = rewrite_chunk(c, {("Product", ".NET"): "Java"})
    assert new.text == "We ship Java tools; ASP.NET and Java again."
    plain = make("b", "NET sales rose; ASP.NET did not.", ("Product", "NET"))
    assert rewrite_chunk(plain, {("Product", "NET"): "Java"}).text == (
        "Java sales rose; ASP.NET did not."
    )


def test_a_swap_does_not_corrupt_abbreviations():
    a = make("a", "Growth in the U.S. beat the U.S.A. index.", ("Location", "U.S."))
    b = make("b", "Growth in India was flat.", ("Location", "India"), protected="B")
    new_a, new_b, _ = swap_pair(a, b, ["Location"])
    assert new_a.text == "Growth in the India beat the U.S.A. index."
    assert new_b.text == "Growth in U.S. was flat."


def test_role_c_replaces_mentions_ner_missed_in_other_chunks():
    tagged = make("a", "At the Analyst Day we spoke.", ("Event", "Analyst Day"))
    missed = make(
        "b", "Since the Analyst Day, the Analyst Days and Acme grew.", ("Organization", "Acme")
    )
    untouched = make("c", "Nothing to see.")
    out = apply_roles([tagged, missed, untouched], {"Event": "C", "Organization": "S"})
    assert out[0].text == "At the [Event] we spoke."
    assert out[1].text == "Since the [Event], the Analyst Days and Acme grew."
    assert [s.text for s in out[1].entities] == ["Acme"]
    assert out[1].entities[0].start == out[1].text.index("Acme")
    assert out[2] is untouched


def test_role_c_leaves_a_string_kept_as_another_categorys_span():
    event = make("a", "The Paris show.", ("Event", "Paris"))
    place = make("b", "Our Paris office and Paris again.", ("Location", "Paris"))
    out = apply_roles([event, place], {"Event": "C", "Location": "S"})
    assert out[0].text == "The [Event] show."
    assert out[1].text == "Our Paris office and Paris again."


def test_a_placeholder_takes_the_legal_suffix_after_it():
    """"[Organization] Group" says what kind of firm it was and blocks the release's leak scan
    as residue: a placeholder takes the legal suffix words after it; a swap does not, and a
    suffix that is an entity of its own stays one."""
    from neswap_core.publish.leak_context import shape_hits

    c = make("a", "We met ANZ Banking Group and Acme, Inc; ANZ Banking Group Limited grew in Ohio.",
             ("Organization", "ANZ Banking"), ("Organization", "Acme"), ("Location", "Ohio"))  # fmt: skip
    new = rewrite_chunk(c, {("Organization", "ANZ Banking"): "[Organization]",
                            ("Organization", "Acme"): "[Suppressed]"})  # fmt: skip
    assert new.text == "We met [Organization] and [Suppressed]; [Organization] grew in Ohio."
    assert [(s.text, new.text[s.start : s.end]) for s in new.entities] == [("Ohio", "Ohio")]
    assert not shape_hits(new.text)
    swapped = rewrite_chunk(c, {("Organization", "ANZ Banking"): "Westpac"})
    assert swapped.text.startswith("We met Westpac Group and Acme, Inc; Westpac Group Limited")
    group = make("b", "We met ANZ Banking Group today.", ("Organization", "ANZ Banking"), ("Organization", "Group"))
    kept = rewrite_chunk(group, {("Organization", "ANZ Banking"): "[Organization]"})
    assert kept.text == "We met [Organization] Group today."
    assert [s.text for s in kept.entities] == ["Group"]
