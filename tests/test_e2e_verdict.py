"""End-to-end (issue 20): the protection verdict in a real headless Chromium, on the sample with
a goal it cannot meet (at most 5 % of passages named).

Asserts, after each page's actions: the verdict box on Frontier and Export is the red one and
names documents and passages, no page shows a green verdict; the sidebar (drawn after the page)
says the same verdict about the same release; no page's text shows a setting's field name, an
e-notation number or "None" as a value; no request leaves 127.0.0.1. With
``NESWAP_DOCS_SCREENSHOTS=1`` it also saves each page (light theme, 1440 px wide) into
``docs/screenshots/`` for the README's stakeholder tour. Waits are for conditions only (the run
state, the verdict's box), never a fixed time.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from neswap_core.workspace.store import Workspace
from tests.test_app_plain_language import E_NOTATION, FIELD, NONE_VALUE
from tests.test_e2e_browser import (
    LOCAL_SCHEMES,
    PAGE_TIMEOUT_MS,
    PAGES,
    _open,
    _screenshot,
    _wait_until_idle,
    chromium_page,
    running_server,
)

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "docs" / "screenshots"
pytestmark = [pytest.mark.e2e, pytest.mark.slow]
#: The page's text without code blocks (run.toml and commands name settings on purpose).
PAGE_TEXT = """() => {
  const main = document.querySelector("[data-testid='stMain']").cloneNode(true);
  main.querySelectorAll("pre, code, [data-testid='stCode']").forEach(n => n.remove());
  return main.innerText;
}"""
SIDEBAR_TEXT = "() => document.querySelector(\"[data-testid='stSidebar']\").innerText"


def _verdict(page, key: str) -> tuple[str, bool]:
    """(text, is the red box) of the verdict container ``key``, once it is drawn."""
    box = page.locator(f".st-key-{key}")
    box.wait_for(timeout=PAGE_TIMEOUT_MS)
    _wait_until_idle(page)
    text = box.locator("[data-testid='stMarkdownContainer']").first.inner_text()  # not the icon
    return text.strip(), box.locator("[data-testid='stAlertContentError']").count() == 1


def _plain(text: str) -> list[str]:
    return [f"{what}: {m.group(0)!r}" for pattern, what in
            ((FIELD, "field name"), (E_NOTATION, "e-notation"), (NONE_VALUE, "None shown"))
            for m in pattern.finditer(text)]


def test_verdict_sidebar_and_plain_text_in_chromium(tmp_path):
    shots = os.environ.get("NESWAP_DOCS_SCREENSHOTS") == "1"
    with running_server(tmp_path, STREAMLIT_THEME_BASE="light") as (url, log, folder):
        Workspace.open(folder).update_settings({"max_chunk_accuracy": 0.05})
        with chromium_page() as page:
            requests: list[str] = []
            page.on("request", lambda req: requests.append(req.url))
            page.goto(url, timeout=PAGE_TIMEOUT_MS)
            page.get_by_role("heading", name="Corpus").first.wait_for(timeout=PAGE_TIMEOUT_MS)
            _wait_until_idle(page)
            problems: dict[str, list[str]] = {}
            for title, name in PAGES:
                if title != "Corpus":
                    _open(page, title)
                if name in ("5_frontier", "6_export"):
                    key = "frontier_verdict" if name == "5_frontier" else "export_verdict"
                    text, red = _verdict(page, key)
                    assert red and text.startswith("Goal missed:"), (name, text)
                    assert re.search(r"\d+ of \d+ documents \(\d+ %\)", text), text
                    assert "% of passages" in text and "5 %" in text
                    sidebar = page.evaluate(SIDEBAR_TEXT)
                    assert "Goal missed:" in sidebar and text.split(": ", 1)[1][:60] in sidebar
                assert page.locator("[data-testid='stAlertContentSuccess']",
                                    has_text="Goal met").count() == 0
                assert "Traceback" not in page.evaluate(PAGE_TEXT)
                found = _plain(page.evaluate(PAGE_TEXT))
                if found:
                    problems[name] = found
                if shots:
                    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                    _screenshot(page, SCREENSHOTS / f"{name}.png")
            assert not problems, problems
    assert "Traceback" not in log.read_text()
    outside = sorted({u for u in requests if not u.startswith((url, *LOCAL_SCHEMES))})
    assert not outside, f"requests left 127.0.0.1: {outside[:10]}"
