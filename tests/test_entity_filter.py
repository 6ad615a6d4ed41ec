"""The entity filter (issue 10 item 6): periods, job titles, diseases are never swappable."""

from __future__ import annotations

import pytest

from neswap_core.config import RunConfig
from neswap_core.corpus import Chunk, EntitySpan
from neswap_core.errors import ConfigError
from neswap_core.prepare.pipeline import tag_entities
from neswap_core.text.entities import EntityFilter, load_ner


def span(text: str, category: str) -> EntitySpan:
    return EntitySpan(0, len(text), category[:3].upper(), category, text)


@pytest.mark.parametrize(
    "text, category",
    [
        ("Q3", "Location"),
        ("FY", "Location"),
        ("FY2021", "Organization"),
        ("fiscal 2021", "Organization"),
        ("third quarter", "Event"),
        ("Q4 2021", "Organization"),
        ("CFO", "Organization"),
        ("CEO", "Organization"),
        ("Chief Financial Officer", "Organization"),
        ("COVID", "Person"),
        ("COVID-19", "Organization"),
        ("pandemic", "Event"),
        ("EBITDA", "Organization"),
    ],
)
def test_default_filter_drops_words_that_are_not_names(text, category):
    assert EntityFilter().is_excluded(span(text, category))


@pytest.mark.parametrize(
    "text, category",
    [
        ("Q3", "Date"),
        ("fiscal 2021", "Date"),
        ("Q3 Holdings", "Organization"),
        ("Acme", "Organization"),
        ("Covidien", "Organization"),
        ("Paris", "Location"),
    ],
)
def test_default_filter_keeps_real_entities_and_dated_periods(text, category):
    assert not EntityFilter().is_excluded(span(text, category))


def test_analyst_extends_or_switches_off_the_filter():
    config = RunConfig.of(not_entities=["Global One"], not_entity_patterns=[r"Project \w+"])
    mine = EntityFilter.from_config(config)
    assert mine.is_excluded(span("global one", "Organization"))
    assert mine.is_excluded(span("Project Falcon", "Product"))
    assert not EntityFilter(defaults=False).is_excluded(span("CFO", "Organization"))
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        RunConfig.of(not_entity_patterns=["("])
    assert RunConfig.from_dict(config.to_dict()) == config


def test_ner_spans_of_periods_titles_and_diseases_never_reach_the_chunks(tmp_path):
    text = (
        "In Q3 our CFO said COVID-19 and the pandemic hurt FY2021 sales of Acme Corp in Germany, "
        "and the CEO met Jane Porter in Paris."
    )
    chunk = Chunk("a#0000", "a", 0, text, "A")
    (tagged,) = tag_entities([chunk], load_ner(), RunConfig().prepare.label_map, tmp_path)
    found = {(s.category, s.text) for s in tagged.entities}
    swappable = {t for c, t in found if c != "Date"}
    assert not swappable & {"Q3", "CFO", "CEO", "COVID-19", "pandemic", "FY2021"}
    assert ("Location", "Germany") in found and ("Location", "Paris") in found
    (raw,) = tag_entities(
        [chunk], load_ner(), RunConfig().prepare.label_map, tmp_path, EntityFilter(defaults=False)
    )
    assert len(raw.entities) > len(tagged.entities)
