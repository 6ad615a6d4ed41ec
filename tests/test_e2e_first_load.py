"""End-to-end: the first load of a fresh server in headless Chromium shows one progress bar with
the step, percent and time left, while the corpus choice is already on the page (issue 13: "the
first page load took 78 s behind two near-identical spinners").

Same server and browser set-up as tests/test_e2e_browser.py. The server process is new and is given
an empty ``NESWAP_CACHE_DIR``, so the whole load is cold (models, entities, embeddings): with
warm disk caches the load can finish between two looks at the page, and time left never shows
(CI run of 2026-11-23 saw one bar text only).
"""

from __future__ import annotations

import re
import time

import pytest

from tests.test_e2e_browser import PAGE_TIMEOUT_MS, _wait_until_idle, chromium_page, running_server

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
BAR = re.compile(r"Preparing the corpus: step (\d) of (\d), .+ — (\d+) %")


@pytest.fixture
def cold_server(tmp_path):
    with running_server(tmp_path, NESWAP_CACHE_DIR=str(tmp_path / "cold-cache")) as running:
        yield running


def test_first_load_shows_step_percent_and_time_left_with_the_page_usable(cold_server):
    url, log, _ = cold_server
    seen: list[tuple[str, bool]] = []  # (bar text, corpus choice visible at that moment)
    with chromium_page() as page:
        page.goto(url, timeout=PAGE_TIMEOUT_MS)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            bars = page.locator("[data-testid='stProgress']")
            if bars.count():
                text = bars.first.inner_text()
                usable = page.get_by_text("Use your own transcripts").count() > 0
                if text and (not seen or seen[-1][0] != text):
                    seen.append((text, usable))
            elif seen and page.locator(
                    "[data-testid='stApp'][data-test-script-state='notRunning']").count():
                break
            page.wait_for_timeout(100)
        _wait_until_idle(page)
        assert page.get_by_role("heading", name="Documents and chunks").count() == 1
    matches = [BAR.search(t) for t, _ in seen]
    assert any(matches), seen
    assert all(usable for _, usable in seen), "the corpus choice was not on the page during the load"
    percents = [int(m.group(3)) for m in matches if m]
    assert percents == sorted(percents), seen
    assert any(" s left" in t or " min left" in t for t, _ in seen), seen  # time left
    assert "Traceback" not in log.read_text()
