"""The reading attacker's corpus (attacker/ folder) and the CLI's attack files (SPEC §8)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from neswap_core.cli import main
from neswap_core.corpus import Chunk
from neswap_core.measure.reading import reading_units, sentence_windows, sentences_per_chunk
from neswap_core.text.loading import load_attacker, load_corpus

from .chat_endpoint import chat_endpoint
from .test_llm_attacker import CLUES

ROOT = Path(__file__).resolve().parents[1]


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def test_reading_is_suppressed_like_the_corpus(tmp_path):
    _write(
        tmp_path,
        {
            "docs/ACME_q3_2021.txt": "Welcome to Acme. Wile Coyote will speak.\n",
            "docs/GLBX_q3_2021.txt": "Globex had a good quarter.\n",
            "manifest.csv": "doc_id,ticker,company,quarter\nACME_q3_2021,ACME,Acme Corporation,q3_2021\n"
            "GLBX_q3_2021,GLBX,Globex Inc,q3_2021\n",
            "aliases.csv": "ticker,company_name,aliases\nACME,Acme Corporation,Acme|acme.com|ACME\n",
            "executives.csv": "ticker,quarter,name,role\nACME,q3_2021,Wile E. Coyote,Chief Executive Officer\n",
            "attacker/ACME_q2_2021.txt": "Thanks, Wile. Acme sold anvils.\nVisit acme.com today.\n"
            "Wile Coyote closed. Acme grew.\n",
            "attacker/GLBX_q2_2021.txt": "Globex built reactors.\nGlobex Inc grew.\n",
            "attacker/manifest.csv": "doc_id,ticker,company,quarter\nACME_q2_2021,ACME,Acme Corporation,q2_2021\n"
            "GLBX_q2_2021,GLBX,Globex Inc,q2_2021\n",
        },
    )
    corpus = load_corpus(tmp_path)
    reading = load_attacker(tmp_path)
    assert reading is not None and len(reading) == 2
    assert load_attacker(tmp_path / "attacker") is None  # no attacker/ inside attacker/
    texts, labels, ids = reading_units(reading, 2, corpus)
    joined = " ".join(texts)
    assert "Acme" not in joined and "Globex" not in joined and "acme.com" not in joined
    assert "Wile" not in joined and "Coyote" not in joined  # executive of another quarter
    assert "[Company Name]" in joined and "[Executive 1]" in joined and "[URL]" in joined
    assert (
        labels.count("Acme Corporation") == 3
        and labels.count("Globex Inc") == 1
        and set(ids) == {"ACME_q2_2021", "GLBX_q2_2021"}
    )


def test_training_units_have_the_corpus_chunk_size():
    assert sentence_windows("One. Two. Three. Four. Five.", 2) == [
        "One. Two.",
        "Three. Four.",
        "Five.",
    ]
    chunks = [Chunk(f"d#{i}", "d", i, "A b. C d. E f.", "X") for i in range(3)]
    assert sentences_per_chunk(chunks) == 3 and sentences_per_chunk([]) == 1


@pytest.fixture
def sample_with_reading(tmp_path, monkeypatch):
    """The bundled sample plus an attacker/ reading made of each call's other half, reordered."""
    monkeypatch.chdir(ROOT)  # share the embedding/NER caches with the other tests
    corpus = tmp_path / "corpus"
    shutil.copytree(ROOT / "data" / "sample", corpus)
    manifest = pd.read_csv(corpus / "manifest.csv")
    rows = []
    for row in manifest.to_dict("records"):
        lines = (corpus / "docs" / f"{row['doc_id']}.txt").read_text(encoding="utf-8").splitlines()
        other = f"{row['ticker']}_q2_2021"
        _write(corpus / "attacker", {f"{other}.txt": "\n".join(lines[::-1]) + "\n"})
        rows.append({**row, "doc_id": other, "quarter": "q2_2021"})
    pd.DataFrame(rows).to_csv(corpus / "attacker" / "manifest.csv", index=False)
    return corpus


@pytest.mark.slow
def test_release_writes_attack_files_and_evaluate_reproduces_them(
    sample_with_reading, tmp_path, capsys
):
    out = tmp_path / "out"
    config = tmp_path / "run.toml"
    # the paper's candidates only (no default goal, no document defence): this test is about the
    # attack files; the default release is test_default_release.py's
    config.write_text(f'corpus = "{sample_with_reading}"\nout = "{out}"\n\n[goal]\n'
                      'max_document_accuracy = 1.0\n\n[document]\ndocument_levels = []\n',
                      encoding="utf-8")
    assert main(["release", "--config", str(config)]) == 0
    key = out / "key"
    summary = json.loads((key / "attack.json").read_text())
    # the attacker panel (issue 22): the reading attacker is its word family, the others are
    # attackers of their own; the primary figures are the worst case over the panel
    panel = {"reading", "char", "embedding", "retrieval"}
    assert summary["primary"] == "panel" and set(summary["attackers"]) == panel | {"in-corpus"}
    assert "pessimistic" in summary["attackers"]["in-corpus"]["note"]
    worst = summary["panel"]
    assert worst["release_document_accuracy"] == max(
        summary["attackers"][n]["release"]["document_accuracy"] for n in panel)
    assert worst["release_chunk_attacker"] in panel
    table = pd.read_csv(key / "attack.csv")
    assert len(table) == 5 * 10 and set(table["attacker"]) == panel | {"in-corpus"}
    releases = pd.read_csv(key / "candidates.csv")
    for column in ("chunk_accuracy", "document_accuracy", "changed_accuracy_pre.reading",
                   "changed_accuracy_post.reading", "chunk_accuracy.in-corpus",
                   "chunk_accuracy.reading", "chunk_accuracy_mean.reading"):  # fmt: skip
        assert releases[column].notna().all(), column
    assert (releases["attacker"] == "panel").all()
    per_family = releases[[f"chunk_accuracy.{n}" for n in sorted(panel)]]
    assert (releases["chunk_accuracy"] == per_family.max(axis=1)).all()  # primary: worst case
    for n in ("char", "embedding", "retrieval"):
        assert releases[f"document_accuracy.{n}"].notna().all(), n
    assert releases["tone_kept"].between(0, 1).all() and releases["tone_correlation"].notna().all()
    report = json.loads((key / "report.json").read_text())
    chosen = releases.set_index("release_id").loc[report["written"]["release_id"]]
    release = summary["attackers"]["reading"]["release"]
    assert release["chunk_top1"] == pytest.approx(chosen["chunk_accuracy.reading"])
    assert worst["release_chunk_accuracy"] == pytest.approx(chosen["chunk_accuracy"])
    assert release["n_changed"] > 0 and release["chance"] == pytest.approx(0.1)
    # evaluate the written folder: the same figures, from released/ and key/ only
    capsys.readouterr()
    with chat_endpoint(lambda text: next((t for clue, t in CLUES.items() if clue in text),
                                         "I am not sure")) as server:
        host, port = server.server_address
        assert main(["evaluate", "--release", str(out), "--out", str(tmp_path / "eval"), "--llm",
                     "--llm-url", f"http://{host}:{port}/v1", "--llm-model", "fake",
                     "--llm-cache", str(tmp_path / "llm.jsonl"), "--confirm-llm"]) == 0  # fmt: skip
    again = json.loads((tmp_path / "eval" / "attack.json").read_text())
    for name in sorted(panel | {"in-corpus"}):
        a, b = summary["attackers"][name], again["attackers"][name]
        for part in ("pre_release", "release"):
            for key_ in ("chunk_top1", "document_accuracy", "n_changed", "changed_post_top1"):
                assert a[part][key_] == pytest.approx(b[part][key_]), (name, part, key_)
    llm = again["attackers"]["llm"]
    assert llm["n_changed"] == release["n_changed"] and llm["n_documents"] == 10
    assert len(server.requests) == llm["requests_sent"] <= 2 * llm["n_changed"] + 10
    assert "reading attacker: chunk accuracy" in capsys.readouterr().out


def test_evaluate_rejects_a_folder_that_is_not_a_release(tmp_path, capsys):
    assert main(["evaluate", "--release", str(tmp_path)]) == 2
    assert "not a release folder" in capsys.readouterr().err


def test_the_reading_is_parsed_once_per_content(sample_with_reading, tmp_path, monkeypatch):
    """Issue 21: every release parsed the attacker/ folder again (0.35 s of a 5-second warm
    re-run on dev); ``fit_reading`` keeps the parsed reading by the content of its files. A
    changed file is parsed again; without a cache folder nothing is kept."""
    from neswap_core.publish import evaluate

    parsed: list[str] = []
    real = evaluate.load_attacker
    monkeypatch.setattr(evaluate, "load_attacker", lambda *a, **k: parsed.append("parse") or real(*a, **k))
    monkeypatch.setattr(evaluate, "reading_attacker", lambda reading, *a, **k: reading)  # no fit

    def texts(reading) -> list[tuple[str, str]]:
        return [(d.doc_id, d.text) for d in reading.documents]

    cache = tmp_path / "cache"
    first = evaluate.fit_reading(sample_with_reading, [], None, "company", cache)
    again = evaluate.fit_reading(sample_with_reading, [], None, "company", cache)
    assert parsed == ["parse"] and texts(again) == texts(first)
    doc = sorted((sample_with_reading / "attacker").glob("*.txt"))[0]
    doc.write_text(doc.read_text(encoding="utf-8") + "Operator: a new closing line.\n", encoding="utf-8")
    changed = evaluate.fit_reading(sample_with_reading, [], None, "company", cache)
    assert parsed == ["parse", "parse"] and texts(changed) != texts(first)
    assert texts(changed) == texts(real(sample_with_reading, protect="company"))
    evaluate.fit_reading(sample_with_reading, [], None, "company", None)
    assert len(parsed) == 3  # no cache folder: parsed again
