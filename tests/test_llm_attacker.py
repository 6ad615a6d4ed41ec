"""The LLM attacker against a small OpenAI-like server on 127.0.0.1 started by the test (SPEC §8)."""

from __future__ import annotations

import pytest

from neswap_core.errors import AttackError, ConfigError
from neswap_core.measure.llm import PROMPT, LLMAttacker, LLMSettings, llm_accuracy, match_answer
from tests.chat_endpoint import chat_endpoint

CANDIDATES = {"Acme Corporation": ("ACME", "Acme"), "Globex Inc": ("GLBX", "Globex")}
CLUES = {"anvils": "ACME", "reactors": "glbx."}  # the fake model answers with a clue's ticker


@pytest.fixture
def server():
    with chat_endpoint(lambda text: next((t for clue, t in CLUES.items() if clue in text),
                                         "I am not sure")) as srv:
        yield srv


def _settings(server, tmp_path, **kw) -> LLMSettings:
    host, port = server.server_address
    return LLMSettings(url=f"http://{host}:{port}/v1", model="fake-1", api_key="k",
                       backoff=0.0, cache_path=str(tmp_path / "llm.jsonl"), **kw)  # fmt: skip


def test_nothing_is_sent_unless_enabled_and_confirmed(server, tmp_path, monkeypatch):
    for var in ("NESWAP_LLM_URL", "NESWAP_LLM_MODEL", "NESWAP_LLM_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match="is off"):
        LLMAttacker(LLMSettings.from_env(), CANDIDATES, confirm=True)
    with pytest.raises(ConfigError, match="confirm"):
        LLMAttacker(_settings(server, tmp_path), CANDIDATES)
    monkeypatch.setenv("NESWAP_LLM_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("NESWAP_LLM_MODEL", "m")
    assert LLMSettings.from_env().enabled and LLMSettings.from_env(model="x").model == "x"
    assert server.requests == []


def test_answers_are_matched_retried_and_cached(server, tmp_path):
    server.fail = {2, 3}  # the second text needs two retries
    sleeps: list[float] = []
    attacker = LLMAttacker(
        _settings(server, tmp_path), CANDIDATES, confirm=True, sleep=sleeps.append
    )
    texts = ["We sold anvils.", "Our reactors ran.", "A quiet quarter."]
    assert attacker.predict(texts) == ["Acme Corporation", "Globex Inc", None]
    assert len(server.requests) == 5 and attacker.requests_sent == 5
    first = server.requests[0]
    assert first["model"] == "fake-1" and first["messages"][0] == {
        "role": "system",
        "content": PROMPT,
    }
    assert first["messages"][1]["content"] == texts[0] and server.auth[0] == "Bearer k"
    # resumable: a new attacker on the same cache file sends nothing for texts already asked
    again = LLMAttacker(_settings(server, tmp_path), CANDIDATES, confirm=True, sleep=sleeps.append)
    assert (
        llm_accuracy(again, texts, ["Acme Corporation", "Globex Inc", "Acme Corporation"]) == 2 / 3
    )
    assert again.requests_sent == 0 and len(server.requests) == 5


def test_persistent_errors_become_a_clear_error(server, tmp_path):
    server.fail = set(range(1, 10))
    attacker = LLMAttacker(_settings(server, tmp_path, max_retries=2), CANDIDATES, confirm=True,
                           sleep=lambda s: None)  # fmt: skip
    with pytest.raises(AttackError, match="after 3 tries"):
        attacker.answer("anvils")
    assert len(server.requests) == 3
    server.fail, server.fail_code = set(range(1, 10)), 401
    with pytest.raises(AttackError, match="HTTP 401"):
        attacker.answer("reactors")
    assert len(server.requests) == 4  # no retry on a client error


def test_rate_limit_spaces_requests():
    now = [0.0]
    sleeps: list[float] = []

    def sleep(s: float) -> None:
        sleeps.append(s)
        now[0] += s

    settings = LLMSettings(url="http://127.0.0.1:9", model="m", requests_per_minute=30)
    attacker = LLMAttacker(settings, CANDIDATES, confirm=True, sleep=sleep, clock=lambda: now[0])
    for _ in range(3):
        attacker._wait_turn()
        now[0] += 0.5  # each request takes half a second
    assert sleeps == [pytest.approx(1.5), pytest.approx(1.5)]


def test_match_answer_is_case_and_punctuation_insensitive():
    assert match_answer(" acme. ", CANDIDATES) == "Acme Corporation"
    assert match_answer("NYSE: GLBX", CANDIDATES) == "Globex Inc"
    assert match_answer("Globex Inc.", CANDIDATES) == "Globex Inc"
    assert match_answer("IBM", CANDIDATES) is None


def test_release_measures_send_only_changed_chunks_and_documents(server, tmp_path):
    from neswap_core.measure.llm import llm_release_measures

    attacker = LLMAttacker(
        _settings(server, tmp_path), CANDIDATES, confirm=True, sleep=lambda s: None
    )
    pre = ["We sold anvils.", "Our reactors ran.", "Anvils again.", "A quiet quarter."]
    labels = ["Acme Corporation", "Globex Inc", "Acme Corporation", "Globex Inc"]
    changed = {0: "We sold reactors.", 1: "Our reactors ran."}  # position 1 is unchanged
    docs = {"a": ("anvils and more anvils", "Acme Corporation"), "g": ("quiet", "Globex Inc")}
    m = llm_release_measures(attacker, pre, changed, labels, docs)
    assert m["n_changed"] == 1 and m["changed_pre_top1"] == 1.0 and m["changed_post_top1"] == 0.0
    assert m["table"] == [[0, 1], [0, 0]] and m["mcnemar_p"] == 1.0
    assert m["document_accuracy"] == 0.5 and m["n_documents"] == 2
    assert len(server.requests) == 4  # 1 pre + 1 post chunk + 2 documents


@pytest.mark.parametrize("url, local", [
    ("http://127.0.0.1:8000/v1", True), ("http://localhost:8000/v1", True),
    ("http://[::1]:8000/v1", True), ("http://127.0.0.2/v1", True),
    ("https://api.example.com/v1", False), ("http://10.0.0.5:8000/v1", False), ("", False),
])
def test_the_app_warns_unless_the_endpoint_is_this_machine(url, local):
    assert LLMSettings(url=url, model="m").stays_on_this_machine is local
