"""The adaptive attacker on the written document-defence release (publish/adaptive_attack.py).

With no defence of the reading it is the attacker panel itself: its figures equal those of the
panel's own scorer (``measure/panel.py``, written independently of the release scorers). With a
defence, the reading keeps its companies and documents and loses words. A CLI release on sample
transcripts with an attacker reading writes key/adaptive.json and says it in the report;
switched off, it writes the same released/ without it (the measure never changes the text).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from neswap_core.cli import main
from neswap_core.config import RunConfig
from neswap_core.generate.document import DefenceParams
from neswap_core.measure.panel import AttackerPanel
from neswap_core.publish.adaptive_attack import (
    ADAPTIVE_FAMILIES,
    adaptive_figures,
    defended_reading,
)
from tests.test_document_defence import corpus

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def data():
    reading = corpus({"Acme": 3, "Bolt": 3, "Cres": 3, "Dyna": 3}, chunks_per_doc=5, seed=9, prefix="r")
    chunks = corpus({"Acme": 1, "Bolt": 1, "Cres": 1, "Dyna": 1}, chunks_per_doc=6, seed=3)
    units = ([c.text for c in reading], [c.protected for c in reading], [c.doc_id for c in reading])
    return units, chunks


def _changed(chunks, seed=4):
    rng = np.random.default_rng(seed)
    out = {}
    for p in rng.choice(len(chunks), size=len(chunks) // 2, replace=False):
        words = chunks[int(p)].text.split()
        out[int(p)] = " ".join(words[: len(words) // 2])
    return out


@pytest.mark.parametrize("lineup", [None, 2])
def test_without_a_defence_of_the_reading_it_is_the_panel(data, tmp_path, lineup):
    """The panel it equals is the run's: with line-ups of 2 (four companies), the line-up panel
    (before the fix the adaptive attacker fitted every company at once whatever the run's
    line-ups: quadratic, hours at 100k)."""
    units, chunks = data
    changed = _changed(chunks)
    # a level too small for any type: the defended reading is the reading
    assert defended_reading(units, DefenceParams(level=1e-9), 0)[0] == units[0]
    got = adaptive_figures(units, DefenceParams(level=1e-9), chunks, changed, 0, tmp_path, lineup)
    panel = AttackerPanel(ADAPTIVE_FAMILIES, random_state=0, lineup=lineup).fit(*units)
    texts = [c.text for c in chunks]
    expected = panel.scorer(texts, [c.protected for c in chunks], [c.doc_id for c in chunks],
                            None, None).score(changed)  # fmt: skip
    assert set(got["families"]) == set(ADAPTIVE_FAMILIES)
    for name in ADAPTIVE_FAMILIES:
        assert got["families"][name]["chunk_accuracy"] == pytest.approx(
            expected.families[name].chunk_accuracy), name
        assert got["families"][name]["document_accuracy"] == pytest.approx(
            expected.families[name].document_accuracy), name
        assert got["families"][name]["chance"] == pytest.approx(1 / (lineup or 4)), name  # four companies
    for level in ("chunk", "document"):
        values = [f[f"{level}_accuracy"] for f in got["families"].values()]
        assert got["worst"][level]["accuracy"] == max(values)
        assert got["families"][got["worst"][level]["attacker"]][f"{level}_accuracy"] == max(values)


def test_the_defended_reading_keeps_companies_and_documents_and_loses_words(data):
    units, _ = data
    texts, labels, ids = defended_reading(units, DefenceParams(level=0.2), 0)
    assert (labels, ids) == (list(units[1]), list(units[2]))
    changed = sum(a != b for a, b in zip(texts, units[0], strict=True))
    assert changed >= len(texts) // 2
    kept = sum(len(set(a.split()) & set(b.split())) for a, b in zip(texts, units[0], strict=True))
    assert kept < sum(len(set(b.split())) for b in units[0])


def _inline_defended_reading(units, params, seed):
    """The defended reading as the writer made it before its preparation could be made ahead:
    term model, preparation and defence in one go, the term model passed to ``defend``."""
    from neswap_core.corpus import Chunk
    from neswap_core.generate.document_budget import defend, prepare_defence
    from neswap_core.generate.document_terms import TermModel

    reading = [Chunk(f"{d}#{i:06d}", d, i, t, y)
               for i, (t, y, d) in enumerate(zip(*units, strict=True))]  # fmt: skip
    model = TermModel(random_state=seed).fit(reading)
    base = DefenceParams(level=0.0, min_z=params.min_z, rank=params.rank, fill=params.fill,
                         top_k=params.top_k, round_figures=params.round_figures)  # fmt: skip
    prep = prepare_defence(reading, model, base, np.random.default_rng([seed, 22]))
    return [c.text for c in defend(reading, model, params, prep).chunks]


@pytest.mark.parametrize("level", [0.1, 0.3])
def test_the_reading_prepared_ahead_in_a_worker_defends_the_same(data, tmp_path, level):
    """``run_release`` prepares the reading's defence in a worker while the candidate table is
    measured (issue 21); the writer's adaptive attacker then only applies its level. The
    defended reading is the same as the one-go computation's, from the worker's disk entry and
    from one made in this process, at two levels of the one preparation."""
    from neswap_core.models import fit_processes
    from neswap_core.publish import adaptive_attack

    units, _ = data
    params = DefenceParams(level=level)
    expected = _inline_defended_reading(units, params, 0)
    assert expected != list(units[0])  # the level changes the reading
    assert defended_reading(units, params, 0)[0] == expected  # no cache folder: made here
    with pytest.MonkeyPatch.context() as mp:  # the tiny reading is worth a worker here
        mp.setattr(adaptive_attack, "MIN_TEXTS", 1)
        pending = adaptive_attack.reading_prep_in_background(units, DefenceParams(level=0.05), 0, tmp_path)
        assert pending is not None and pending.started
        assert pending.result() is True
        assert adaptive_attack.reading_prep_in_background(units, params, 0, tmp_path) is None  # kept
    assert fit_processes.MIN_TEXTS > 1
    kept = adaptive_attack.DiskMemo(tmp_path, adaptive_attack.PREP_MEMO)
    assert len(list(kept.folder.glob("*.pkl"))) == 1  # one preparation for every level
    assert defended_reading(units, params, 0, tmp_path)[0] == expected


def test_a_release_prepares_the_adaptive_reading_once_and_only_with_the_check_on(data, tmp_path):
    """The run's wish for it: a document defence with the adaptive check; not without."""
    from neswap_core import run_release

    units, _ = data
    on = RunConfig.of(corpus="x", cache_dir=str(tmp_path))
    off = RunConfig.of(corpus="x", cache_dir=str(tmp_path), document_adaptive_check=False)
    no_levels = RunConfig.of(corpus="x", cache_dir=str(tmp_path), document_levels=[])
    assert run_release._adaptive_reading_ahead(off, units) is None
    assert run_release._adaptive_reading_ahead(no_levels, units) is None
    assert run_release._adaptive_reading_ahead(on, None) is None  # no reading
    assert run_release._adaptive_reading_ahead(on, units) is None  # under MIN_TEXTS units: here
    copies = run_release.AHEAD_MAX_UNITS // len(units[0]) + 1
    big = tuple(list(part) * copies for part in units)
    assert run_release._adaptive_reading_ahead(on, big) is None  # the writer prepares it


@pytest.fixture
def sample_with_reading(tmp_path, monkeypatch):
    """Four sample calls and an attacker/ reading made of each call's lines reversed."""
    monkeypatch.chdir(ROOT)  # share the embedding/NER caches with the other tests
    folder = tmp_path / "corpus"
    (folder / "docs").mkdir(parents=True)
    (folder / "attacker" / "docs").mkdir(parents=True)
    sample = ROOT / "data" / "sample"
    manifest = pd.read_csv(sample / "manifest.csv").head(4)
    manifest.to_csv(folder / "manifest.csv", index=False)
    rows = []
    for row in manifest.to_dict("records"):
        text = (sample / "docs" / f"{row['doc_id']}.txt").read_text(encoding="utf-8")
        shutil.copy(sample / "docs" / f"{row['doc_id']}.txt", folder / "docs")
        other = f"{row['ticker']}_q2_2021"
        (folder / "attacker" / "docs" / f"{other}.txt").write_text(
            "\n".join(text.splitlines()[::-1]) + "\n", encoding="utf-8")
        rows.append({**row, "doc_id": other, "quarter": "q2_2021"})
    pd.DataFrame(rows).to_csv(folder / "attacker" / "manifest.csv", index=False)
    for name in ("executives.csv", "aliases.csv"):
        shutil.copy(sample / name, folder / name)
    return folder


@pytest.mark.slow
def test_a_document_release_writes_adaptive_json_and_the_switch_changes_no_released_byte(
        sample_with_reading, tmp_path):
    config = RunConfig.of(corpus=str(sample_with_reading), n_components=2, n_init=1, max_swaps=4,
                          plan_rounds=0, document_levels=[0.15], max_document_accuracy=1.0,
                          release="document 15 %")  # fmt: skip
    config.save(tmp_path / "on.toml")
    config.replace(document_adaptive_check=False).save(tmp_path / "off.toml")
    assert main(["release", "--config", str(tmp_path / "on.toml"), "--out", str(tmp_path / "on")]) == 0
    key = tmp_path / "on" / "key"
    adaptive = json.loads((key / "adaptive.json").read_text())
    assert adaptive["release_id"] == "document 15 %" and adaptive["level"] == 0.15
    assert set(adaptive["families"]) == set(ADAPTIVE_FAMILIES)
    doc = adaptive["worst"]["document"]
    fam = adaptive["families"][doc["attacker"]]
    assert fam["n_documents"] == 4 and fam["documents_named"] == round(doc["accuracy"] * 4)
    assert f"names {fam['documents_named']} of 4 documents" in adaptive["sentence"]
    report = json.loads((key / "report.json").read_text())
    assert report["adaptive"] == adaptive
    assert "an attacker who runs neswap too" in (key / "report.html").read_text()
    assert main(["release", "--config", str(tmp_path / "off.toml"), "--out", str(tmp_path / "off")]) == 0
    assert not (tmp_path / "off" / "key" / "adaptive.json").exists()
    assert "adaptive" not in json.loads((tmp_path / "off" / "key" / "report.json").read_text())

    def released(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    assert released(tmp_path / "on" / "released") == released(tmp_path / "off" / "released")


def test_computed_in_a_worker_process_it_is_the_same_figures(data):
    """The writer starts the adaptive attacker in a worker while it audits
    (``adaptive_in_background``): the same figures as computed here, to the last bit."""
    from functools import partial

    from neswap_core.models.fit_processes import InBackground

    units, chunks = data
    job = partial(adaptive_figures, units, DefenceParams(level=0.2), chunks, _changed(chunks), 0, None, 2)
    pending = InBackground(job)
    assert pending.started
    assert pending.result() == job()
