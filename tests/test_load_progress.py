"""The first load's progress (issue 13: "the first page load took 78 s behind two near-identical
spinners"): one display with the step, percent and time left; cached steps take no share."""

from __future__ import annotations

import time

import pytest

from appkit.pipeline import LOAD_STEPS, load_steps
from appkit.widgets import progress_text


class SlowStage:
    """Stands in for ``Stage``: every step sleeps unless it is 'cached'; embedding steps tick."""

    def __init__(self, cached: set[str]) -> None:
        self.cached, self.calls = cached, []

    def _work(self, name: str, progress=None) -> None:
        self.calls.append(name)
        if name in self.cached:
            return
        for i in range(4):
            time.sleep(0.09)
            if progress is not None:
                progress((i + 1) / 4, f"{i + 1} of 4 new")

    def __getattr__(self, name: str):
        return lambda progress=None: self._work(name, progress)


def test_one_bar_over_every_step_with_sub_progress():
    stage = SlowStage(cached={"corpus"})
    steps = LOAD_STEPS[:3]  # page 1: up to the sentence-group embeddings
    reports: list[tuple[float, str]] = []
    load_steps(stage, steps, lambda f, m: reports.append((f, m)))
    fractions = [f for f, _ in reports]
    assert stage.calls == ["corpus", "clean", "chunked"]
    assert fractions[-1] == 1.0 and all(f < 1.0 for f in fractions[:-1])
    assert fractions == sorted(fractions), "the bar never goes back"
    messages = [m for _, m in reports[:-1]]
    assert any(m.startswith("step 3 of 3, embedding sentence groups") and "4 of 4 new" in m
               for m in messages)
    assert any(m.startswith("step 2 of 3, extracting the prepared remarks") for m in messages)
    # The cached first step took no share: the last step ran from 13/51 to ~51/51 of the bar.
    last = [f for f, m in reports if m.startswith("step 3 of 3")]
    assert last[0] == pytest.approx(13 / 51, abs=0.01) and last[-1] == pytest.approx(0.99)


def test_progress_text_names_the_stage_percent_and_time_left():
    assert progress_text("Preparing the corpus", "step 5 of 8, embedding", 0.25, 10.0) == (
        "Preparing the corpus: step 5 of 8, embedding — 25 % · about 30 s left")
    assert progress_text("Fit", "EM iteration 3", 0.5, 300.0).endswith("about 5 min left")
    assert "left" not in progress_text("Fit", "starting", 0.01, 0.2)  # too early to tell


def test_tagging_steps_report_a_percent_and_keep_the_cache_key():
    """The spaCy steps of the first load (executives' names, passages) showed the step only;
    the reporting wrapper ticks as texts are tagged and changes nothing the cache keys on."""
    from appkit.pipeline import _ReportingNer
    from neswap_core.config import DEFAULT_LABEL_MAP
    from neswap_core.text.entities import extract_entities
    from neswap_core.text.entity_cache import pipeline_fingerprint
    from neswap_core.text.lazy_ner import LazyNer

    nlp = LazyNer()
    ticks: list[tuple[float, str]] = []
    wrapped = _ReportingNer(nlp, lambda f, m: ticks.append((f, m)), "passages tagged")
    assert pipeline_fingerprint(wrapped, DEFAULT_LABEL_MAP) == pipeline_fingerprint(
        nlp, DEFAULT_LABEL_MAP)
    texts = [f"Apple sold {i} phones in Paris." for i in range(40)]
    assert extract_entities(texts, wrapped) == extract_entities(texts, nlp)
    fractions = [f for f, _ in ticks]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(ticks) == 3
    assert ticks[0][1] == "passages tagged (16 of 40 not in the cache yet)"
