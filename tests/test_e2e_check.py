"""End-to-end: the Check page in a real headless Chromium (issue 11), screenshot under tests/artifacts/.

Same server and browser set-up as tests/test_e2e_browser.py (Debian's Chromium, a fresh
workspace, a local streamlit server started and stopped by the test); opens the dashboard and
goes straight to 7 · Check.
"""

from __future__ import annotations

import pytest

from tests.test_e2e_browser import (  # noqa: F401  (server is a fixture)
    ARTIFACTS,
    PAGE_TIMEOUT_MS,
    _open,
    _screenshot,
    _wait_for_traces,
    _wait_until_idle,
    chromium_page,
    server,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_check_page_in_chromium(server):  # noqa: F811
    url, log, *_ = server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with chromium_page() as page:
        page.goto(url, timeout=PAGE_TIMEOUT_MS)
        page.get_by_role("heading", name="Corpus").first.wait_for(timeout=PAGE_TIMEOUT_MS)
        _wait_until_idle(page)
        _open(page, "Check")
        chart = page.locator("[data-testid='stPlotlyChart'] .js-plotly-plot")
        _wait_for_traces(chart.first, 4)  # plotly draws its traces after the chart's div
        _screenshot(page, ARTIFACTS / "7_check.png")
        errors = page.locator("[data-testid='stException']")
        assert errors.count() == 0, errors.first.inner_text()
        body = page.inner_text("body")
        assert "names the company of" in body and "Corpus ε before" in body
        assert "stronger than an outside reader" in body
    assert "Traceback" not in log.read_text()
