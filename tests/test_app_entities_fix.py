"""Click an entity in a passage to fix it there (issue 20 item 8): another category or not an
entity, scoped to that passage; a category change is one correction, not two."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from appkit.views_entities import correction_count
from tests.app_workspace import small_workspace

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def entities_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    at.switch_page("pages/2_entities.py")
    at.run()
    assert not at.exception
    return at


def sidebar_corrections() -> str:
    home = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    home.run()
    return next(m.value for m in home.sidebar.markdown if "Entity corrections" in m.value)


def test_click_an_entity_in_a_passage_to_change_its_category_there(tmp_path, monkeypatch):
    ws = small_workspace(tmp_path, monkeypatch)
    at = entities_page()
    pills = next(p for p in at.pills if p.key and p.key.startswith("fix_")
                 and any(o.endswith(" · Organization") for o in p.options))
    chunk_id = pills.key.removeprefix("fix_")
    option = next(o for o in pills.options if o.endswith(" · Organization"))
    text = option.rsplit(" · ", 1)[0]
    pills.set_value(option).run()
    assert not at.exception
    at.selectbox(key=f"fixcat_{chunk_id}").set_value("Product").run()
    at.button(key=f"fixgo_{chunk_id}").click().run()
    assert not at.exception
    stored = [(c["action"], c["category"], c["text"], c["chunk_id"]) for c in ws.corrections()]
    assert stored == [("drop", "Organization", text, chunk_id), ("add", "Product", text, chunk_id)]
    assert correction_count(ws.corrections()) == 1  # one change, not two
    assert any(s.value.startswith("Done:") for s in at.success)
    pills = at.pills(key=f"fix_{chunk_id}")
    assert f"{text} · Product" in pills.options and option not in pills.options
    assert "Entity corrections: 1 " in sidebar_corrections()


def test_not_an_entity_here_drops_it_in_that_passage_only(tmp_path, monkeypatch):
    ws = small_workspace(tmp_path, monkeypatch)
    at = entities_page()
    pills = next(p for p in at.pills if p.key and p.key.startswith("fix_"))
    chunk_id = pills.key.removeprefix("fix_")
    option = pills.options[0]
    text, category = option.rsplit(" · ", 1)
    pills.set_value(option).run()
    at.button(key=f"fixdrop_{chunk_id}").click().run()
    assert not at.exception
    assert [(c["action"], c["text"], c["chunk_id"]) for c in ws.corrections()] == [
        ("drop", text, chunk_id)]
    assert option not in at.pills(key=f"fix_{chunk_id}").options
