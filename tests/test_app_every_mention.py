"""The Swaps page shows a swap changing every mention of the entity in the passage (issue 20,
item 8): on the bundled sample, a pair whose passage mentions the swapped value more than once
shows, after the swap, the partner's value at every one of those mentions and the original at
none (the core's rule: tests/test_every_mention.py)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_workspace import small_workspace

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def words(text: str, value: str) -> int:
    """Whole-word mentions of ``value`` in the page's HTML of a passage (tags stripped)."""
    plain = html.unescape(re.sub(r"<[^>]+>", "", text))
    return len(re.findall(r"(?<![\w.])" + re.escape(value) + r"(?!\w)", plain))


def test_a_value_mentioned_twice_is_changed_at_both_mentions(tmp_path, monkeypatch):
    from appkit import views_release as vr
    from appkit.pipeline import Stage, sweep
    from appkit.state import settings

    ws = small_workspace(tmp_path, monkeypatch)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    at.switch_page("pages/4_swaps.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    stage = Stage(settings(ws), ws)
    swept = sweep(stage.sweep_key, None, None, None, None)  # the page's (cached)
    table = swept.table(float(stage.settings["population"]))
    longest = table.sort_values("swaps").groupby("combination").tail(1).index
    for release_id in longest:  # the longest release of each combination: every pair it has
        release = vr.reviewed_release(swept, stage.sweep_key, table, release_id, ws.decisions, 1e20)
        for view in vr.pair_views(release):
            category, value_a, value_b = next(iter(view.record.exchanged), (None, None, None))
            if value_a is None or words(view.before[0].text, value_a) < 2:
                continue
            if words(view.before[0].text, value_b) or words(value_b, value_a):
                continue  # the partner's value already there or contains it: counts would not tell
            if any(s.text == value_a and s.category != category for s in view.before[0].entities):
                continue  # another category's span keeps its role (test_every_mention.py)
            at.selectbox(key="swaps_release").set_value(release_id).run()
            assert not at.exception
            shown = [m.value for m in at.markdown]
            before, after = view.full_html(0, after=False), view.full_html(0, after=True)
            assert before in shown and after in shown  # the page shows this pair's passages
            assert words(after, value_a) == 0  # no mention of the swapped value left in clear
            assert words(after, value_b) == words(before, value_a) >= 2
            return
    pytest.fail("no pair of the sample's releases swaps a value its passage mentions twice")
