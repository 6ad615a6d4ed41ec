"""End-to-end: clicking a point on the frontier chart in a real headless Chromium makes that
release the one in use (issue 13: "a point on the chart cannot be clicked to choose it").

Same server and browser set-up as tests/test_e2e_browser.py. The AppTest in
tests/test_app_explain.py sends the selection Streamlit's frontend would send; this test checks
that the frontend really sends it (customdata included) for a mouse click.
"""

from __future__ import annotations

import pytest

from neswap_core.workspace.store import Workspace
from tests.test_e2e_browser import (  # noqa: F401  (server is a fixture)
    ARTIFACTS,
    PAGE_TIMEOUT_MS,
    _open,
    _poll,
    _screenshot,
    _settled,
    _wait_for_traces,
    _wait_until_idle,
    chromium_page,
    server,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: The release id and screen position of one marker that is neither the star nor the line's
#: pick, and far from every other release's marker (customdata[0] is the release id).
FIND_POINT = """() => {
  const gd = document.querySelector("[data-testid='stPlotlyChart'] .js-plotly-plot");
  const traces = Array.from(gd.querySelectorAll('.scatterlayer .trace'));
  const all = [];
  for (let k = 0; k < gd.data.length; k++) {
    const t = gd.data[k];
    if (!t.customdata) continue;
    traces[k].querySelectorAll('.points path').forEach((p, j) => {
      const box = p.getBoundingClientRect();
      if (box.width > 0) all.push({id: t.customdata[j][0], x: box.x + box.width / 2,
                                   y: box.y + box.height / 2,
                                   plain: t.mode === 'markers' && !/chosen|pick/.test(t.name)});
    });
  }
  // A release marker far (> 14 px) from every marker of another release, so the click is unambiguous.
  return all.find(p => p.plain && all.every(q => q.id === p.id
                                            || Math.hypot(p.x - q.x, p.y - q.y) > 14)) || null;
}"""


def _steady_point(page):
    """The point of ``FIND_POINT`` once two looks, two animation frames apart, agree (the chart
    has stopped moving after the scroll); None when the chart has no such point."""
    previous = None
    for _ in range(200):
        _settled(page)
        point = page.evaluate(FIND_POINT)
        if point is None or point == previous:
            return point
        previous = point
    return previous


def test_clicking_a_frontier_point_uses_that_release(server):  # noqa: F811
    url, log, folder = server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with chromium_page() as page:
        page.goto(url, timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Corpus").first.wait_for(timeout=PAGE_TIMEOUT_MS)
        _wait_until_idle(page)
        _open(page, "Risk–utility frontier")
        chart = page.locator("[data-testid='stPlotlyChart'] .js-plotly-plot").first
        _wait_for_traces(chart, 3)
        chart.scroll_into_view_if_needed()
        point = _steady_point(page)
        assert point, "no clickable release point on the chart"
        assert Workspace.open(folder).get_setting("chosen_release") != point["id"]
        page.mouse.click(point["x"], point["y"])
        # the conditions the click must bring about: the choice stored, then said on the page
        chosen = _poll(lambda: Workspace.open(folder).get_setting("chosen_release") == point["id"])
        assert chosen, "the click did not choose the release"
        page.get_by_text("In use on the Swaps and Export pages").first.wait_for()
        _wait_until_idle(page)
        _screenshot(page, ARTIFACTS / "5_frontier_clicked.png")
    assert "Traceback" not in log.read_text()
