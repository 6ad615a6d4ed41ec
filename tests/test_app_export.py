"""Export page (SPEC §11): leak-scan hits block released/ until the analyst ticks each one."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_workspace import small_workspace

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    # bundle_seed 7: a bundle of its own (the page caches bundles by release and options)
    return small_workspace(tmp_path, monkeypatch, bundle_seed=7)


def test_each_hit_must_be_accepted_before_released_can_be_downloaded(workspace, monkeypatch):
    from neswap_core.publish import bundle as bundle_mod
    from neswap_core.publish.leaks import LeakTerm, leak_terms

    def with_extra(corpus, people=None):  # "sequentially" stands in for a surviving identifier
        # (not a common word by wordfreq, so it is searched in any case: issue 23 item 3)
        return [*leak_terms(corpus, people), LeakTerm("sequentially", "alias", frozenset({"x"}))]

    monkeypatch.setattr(bundle_mod, "leak_terms", with_extra)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    at.switch_page("pages/6_export.py")
    at.run()
    assert not at.exception and not at.error
    boxes = [b for b in at.checkbox if b.key and b.key.startswith("leak_")]
    assert boxes and any("leak scan found" in w.value for w in at.warning)
    released = next(b for b in at.get("download_button") if b.key == "dl_released")
    assert released.proto.disabled

    def hit_key(box) -> tuple[str, str]:  # "Accept: doc_x, chunk 3: alias 'x' (…, any case) in …"
        return box.label.split(": ")[1], "exact" if ", exact case)" in box.label else "any"

    for box in boxes:  # every hit but the last (hits of one word, chunk and case share a key)
        if hit_key(box) != hit_key(boxes[-1]):
            box.check()
    at.run()
    assert next(b for b in at.get("download_button") if b.key == "dl_released").proto.disabled
    next(b for b in at.checkbox if b.key == boxes[-1].key).check()
    at.run()
    assert not next(b for b in at.get("download_button") if b.key == "dl_released").proto.disabled
    assert len(set(workspace.get_setting("accepted_leaks"))) == len({hit_key(b) for b in boxes})
    page = " ".join(m.value for m in at.markdown)
    assert "Only `released/` may go to an LLM" in page
