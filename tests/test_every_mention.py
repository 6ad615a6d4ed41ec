"""A swap treats every mention of the entity it changes in the passage (issue 20, item 8).

The passages are the bundled sample's, with the spans the NER gives them. In Booz Allen
Hamilton's ``BAH_q3_2021#0026`` "Tracepoint" is an Organization in the first sentence and a
Person in the second: a swap of Organizations changes the first only, because the Person span
keeps its category's role (which may be F: never altered, SPEC §3); the analyst's correction of
the mislabel (click-to-fix: drop the Person, add the Organization) makes both mentions change.
A value tagged more than once in its category, or mentioned again untagged, is one value: every
mention changes (WWE's "Spotify" passage, WWE_q3_2021#0017). Spellings of a distinctive term
("Cloud", "cloud") are still separate values: see tests/fixtures/golden/README.md.
"""

from __future__ import annotations

from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.generate.rewrite import swap_pair
from neswap_core.text.corrections import EntityCorrection, apply_corrections

#: Two sentences of the sample's BAH_q3_2021#0026, verbatim.
BAH = ("In the port of that, we made a minority investment in Tracepoint, a digital forensic rand "
       "incident response company serving clients in the public and private sectors.\nWe are "
       "excited to partner with Tracepoint and see a significant opportunity to cross-pollinate "
       "with [Company Name]'s own digital forensics expertise.")
OTHER = "This quarter we also closed our acquisition of Mandiant to extend our incident response."


def spans(text: str, found: list[tuple[str, str, str]]) -> tuple[EntitySpan, ...]:
    """The spans of ``found`` (string, NER label, category) at their successive occurrences."""
    out, start = [], {}
    for string, label, category in found:
        i = text.index(string, start.get(string, 0))
        start[string] = i + len(string)
        out.append(EntitySpan(i, i + len(string), label, category, string))
    return tuple(sorted(out, key=lambda s: s.start))


def chunk(chunk_id: str, text: str, found, company: str) -> Chunk:
    return Chunk(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], index=0, text=text,
                 protected=company, entities=spans(text, found))


def test_a_mislabelled_second_mention_changes_once_the_analyst_corrects_it():
    a = chunk("BAH#26", BAH, [("Tracepoint", "ORG", "Organization"),
                              ("Tracepoint", "PERSON", "Person")], "BAH")
    b = chunk("MSFT#3", OTHER, [("Mandiant", "ORG", "Organization")], "MSFT")
    new_a, _, (exchange,) = swap_pair(a, b, ["Organization"])
    assert exchange.pairs == (("Tracepoint", "Mandiant"),)
    assert new_a.text.count("Tracepoint") == 1  # the Person span keeps its role (may be F)
    fixed, = apply_corrections([a], [EntityCorrection("drop", "Person", "Tracepoint", "BAH#26"),
                                     EntityCorrection("add", "Organization", "Tracepoint",
                                                      "BAH#26")])
    new_a, new_b, _ = swap_pair(fixed, b, ["Organization"])
    assert "Tracepoint" not in new_a.text and new_a.text.count("Mandiant") == 2
    assert new_a.text == BAH.replace("Tracepoint", "Mandiant")
    assert new_b.text == OTHER.replace("Mandiant", "Tracepoint")
    assert [s.text for s in new_a.entities] == ["Mandiant", "Mandiant"]  # spans follow the text


#: Two sentences of the sample's WWE_q3_2021#0017, verbatim. The test tags "Spotify" as an
#: Organization at its first two mentions and leaves the third untagged (a mention NER missed).
WWE = ("This past quarter, we closed the deal with Spotify and The Ringer for Spotify to become the "
       "exclusive audio network of [Company Name].\nThe partnership jump starts us in this "
       "all-important space while allowing us to leverage the resources and reach of Spotify and "
       "its 165 million subscribers.")


def test_every_mention_of_a_swapped_value_in_its_category_changes():
    a = chunk("WWE#17", WWE, [("Spotify", "ORG", "Organization"), ("Spotify", "ORG", "Organization")],
              "WWE")
    b = chunk("MSFT#3", OTHER, [("Mandiant", "ORG", "Organization")], "MSFT")
    new_a, new_b, (exchange,) = swap_pair(a, b, ["Organization"])
    assert exchange.pairs == (("Spotify", "Mandiant"),)
    assert new_a.text == WWE.replace("Spotify", "Mandiant")  # both spans and the bare repeat
    assert "Spotify" not in new_a.text and new_a.text.count("Mandiant") == 3
    assert new_b.text == OTHER.replace("Mandiant", "Spotify")
