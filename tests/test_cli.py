"""The CLI end to end on the bundled sample: prepare's outputs, a bit-for-bit release rerun, errors."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from neswap_core.cli import main
from neswap_core.config import RunConfig

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # the embedding cache .neswap-cache is shared with the other tests


def test_prepare_writes_chunks_z_embeddings_and_summary(tmp_path, capsys):
    assert main(["prepare", "--corpus", "data/sample", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    chunks = pd.read_csv(tmp_path / "chunks.csv", keep_default_na=False)
    x = np.load(tmp_path / "embeddings.npy")
    z = pd.read_csv(tmp_path / "z.csv", index_col=0, keep_default_na=False)
    assert summary["documents"] == 10 and summary["chunks"] == len(chunks) == len(x) == len(z)
    assert x.dtype == np.float32 and x.shape[1] == 384
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1, atol=1e-5)
    assert set(chunks["doc_id"]) == set(pd.read_csv("data/sample/manifest.csv")["doc_id"])
    assert (chunks["Organization"] == z["Organization"].to_numpy()).all()
    assert summary["identifiers_suppressed"]["company"] > 0
    assert sum(summary["entities_per_category"].values()) > 0
    assert "[Company Name]" in " ".join(chunks["text"])
    for line in (tmp_path / "chunks.jsonl").read_text().splitlines()[:3]:
        assert {"chunk_id", "doc_id", "text", "Organization"} <= set(json.loads(line))
    assert "Wrote chunks.csv" in capsys.readouterr().out


def test_release_is_reproducible_bit_for_bit(tmp_path):
    # the paper's release (the trade-off line's choice: no goal, no document defence), whose
    # files this test reads; the default release is tested in test_default_release.py
    cfg = RunConfig.of(corpus="data/sample", n_components=5, n_init=1, max_swaps=4, trade_off_c=1.0,
                       max_document_accuracy=1.0, document_levels=[])
    cfg.save(tmp_path / "run.toml")
    out = tmp_path / "out"
    snapshots = []
    for _ in range(2):  # the same config twice into the same folder
        assert main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(out)]) == 0
        snapshots.append({p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()})
    files = sorted(snapshots[0])
    assert files == sorted(snapshots[1])
    assert Path("key/report.json") in files and Path("key/swap_log.csv") in files
    assert len([f for f in files if f.parts[0] == "released" and f.suffix == ".txt"]) == 10
    for rel in files:
        if rel.name != "timings.json":
            assert snapshots[0][rel] == snapshots[1][rel], rel
    report = json.loads((out / "key" / "report.json").read_text())
    assert report["config"]["mixture"]["n_components"] == 5 and report["versions"]["numpy"]
    log = pd.read_csv(out / "key" / "swap_log.csv")
    written = report["written"]
    assert written and len(log) == written["changes_written"] == written["changes_generated"]
    assert written["why"] == "line" and report["goal_met"] is None
    assert (log["protected_a"] != log["protected_b"]).all()
    saved = RunConfig.load(out / "key" / "config.toml")
    assert saved == RunConfig.load(tmp_path / "run.toml").replace(out=str(out))
    audit = json.loads((out / "key" / "audit.json").read_text())
    assert {d["document"] for d in audit["documents"]} == set(
        pd.read_csv(out / "key" / "pseudonyms.csv")["doc_id"])
    assert audit["corpus_epsilon_before"] > 0 and audit["corpus_epsilon_after"] > 0
    assert audit["before"]["alphas"] == audit["after"]["alphas"] and len(audit["after"]["curves"])
    # key/report.html: the readable report (was only written by the app's Export page)
    html = (out / "key" / "report.html").read_text()
    assert report["written"]["release_id"] in html and "why this release" in html
    assert "in-corpus attacker" in html and "chunk accuracy" in html  # measured protection
    assert f"corpus ε {audit['corpus_epsilon_before']:.3f} before the release" in html
    assert "Before and after" in html and "Swap log (pairs in the release)" in html
    assert "<script src" not in html and "http" not in re.sub(r"https?://www\.w3\.org", "", html)


def test_config_prints_loadable_toml(tmp_path, capsys):
    assert main(["config"]) == 0
    path = tmp_path / "run.toml"
    path.write_text(capsys.readouterr().out)
    assert RunConfig.load(path).prepare.threshold == 75.0


def test_missing_corpus_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    assert main(["prepare", "--corpus", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "nope" in err


def test_release_on_the_sample_leaks_nothing_outside_the_text(tmp_path, capsys):
    """Done-when of issue 10: released/ passes the leak scan and its names, manifest, ids and
    order reveal no company; key/ maps every pseudonym back."""
    import re

    from neswap_core.publish.leaks import leak_terms, scan_release
    from neswap_core.text.loading import load_corpus

    cfg = RunConfig.of(corpus="data/sample", n_components=5, n_init=1, max_swaps=4, trade_off_c=1.0,
                    publishable_columns=["quarter"])
    cfg.save(tmp_path / "run.toml")
    out = tmp_path / "out"
    assert main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(out)]) == 0
    assert "Leak scan: 0 hit(s)" in capsys.readouterr().out
    released = sorted(p.relative_to(out / "released").as_posix()
                      for p in (out / "released").rglob("*") if p.is_file())
    docs = [p for p in released if p != "manifest.csv"]
    assert len(docs) == 10 and all(re.fullmatch(r"docs/doc_[0-9a-f]{6}\.txt", p) for p in docs)
    manifest = pd.read_csv(out / "released" / "manifest.csv", keep_default_na=False)
    assert list(manifest.columns) == ["doc_id", "quarter"]
    assert manifest["doc_id"].tolist() == sorted(manifest["doc_id"])  # order = pseudonym order
    key = pd.read_csv(out / "key" / "pseudonyms.csv", keep_default_na=False)
    assert set(key["pseudonym"]) == set(manifest["doc_id"])
    assert key.sort_values("pseudonym")["doc_id"].tolist() != sorted(key["doc_id"])
    raw = load_corpus("data/sample")
    outside = " ".join(released) + (out / "released" / "manifest.csv").read_text()
    for doc in raw.documents:
        for value in (doc.doc_id, doc.metadata["ticker"], doc.metadata["company"], doc.source):
            assert value not in outside
    from neswap_core.text.identifiers import suppress_corpus

    texts = {p: (out / "released" / p).read_text().split("\n\n") for p in docs}
    hits = scan_release(texts, leak_terms(suppress_corpus(raw)[0]), {})
    assert hits == []
    assert not list(out.glob("released/**/*.csv"))[1:]  # one CSV only: the manifest
    assert not any("swap" in p or "chunk" in p for p in released)


@pytest.mark.parametrize("name, k, message", [
    ("near_duplicates", 2, "distinct"),
    ("near_duplicates", 10, "distinct"),
    ("one_document", 2, "1 document"),
    ("no_entities", 2, "nothing to swap"),
])
def test_degenerate_corpora_fail_with_one_sentence(tmp_path, capsys, name, k, message):
    cfg = RunConfig.of(corpus=f"tests/fixtures/degenerate/{name}.csv", n_components=k, n_init=1)
    cfg.save(tmp_path / "run.toml")
    code = main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(tmp_path / "o")])
    captured = capsys.readouterr()
    assert code != 0
    assert message in captured.err and "Traceback" not in captured.err
    assert captured.err.count("no candidate release") + captured.out.count("no candidate release") <= 1
    assert not (tmp_path / "o" / "released").exists()


def _release_once_per_config(monkeypatch) -> None:
    """The CLI's ``release`` computes each config's result once in this test: the runs that
    follow differ only in ``--accept-leaks`` (the leak gate under test, applied when writing),
    and a config's result is the same on every run (test_release_is_reproducible_bit_for_bit)."""
    import neswap_core.cli as cli

    results: dict = {}
    compute = cli.release_from_config

    def once(config, embedder, **kwargs):
        key = config.to_toml()
        if key not in results:
            results[key] = compute(config, embedder, **kwargs)
        return results[key]

    monkeypatch.setattr(cli, "release_from_config", once)


def test_leaks_block_released_until_each_is_accepted(tmp_path, capsys, monkeypatch):
    """A hit exits 4 with the list and writes no released/; --accept-leaks with the listed rows
    releases. The hit is made by scanning for a word the sample does contain ("Sequentially",
    written both ways and not a common word by wordfreq, so searched in any case)."""
    from neswap_core.publish import bundle as bundle_mod
    from neswap_core.publish.leaks import LeakTerm, leak_terms

    def with_extra(corpus, people=None):
        return [*leak_terms(corpus, people), LeakTerm("Sequentially", "alias", frozenset({"x"}))]

    monkeypatch.setattr(bundle_mod, "leak_terms", with_extra)
    _release_once_per_config(monkeypatch)
    cfg = RunConfig.of(corpus="data/sample", n_components=5, n_init=1, max_swaps=4, trade_off_c=1.0,
                       max_document_accuracy=1.0, document_levels=[])  # the paper's: "Sequentially" stays
    cfg.save(tmp_path / "run.toml")
    out = tmp_path / "out"
    args = ["release", "--config", str(tmp_path / "run.toml"), "--out", str(out)]
    assert main(args) == 4
    err = capsys.readouterr().err
    assert "released/ was not written" in err and "'Sequentially'" in err and "exact case" in err
    assert not (out / "released").exists()
    leaks = pd.read_csv(out / "key" / "leaks.csv", keep_default_na=False)
    assert len(leaks) > 1 and set(leaks["identifier"]) == {"Sequentially"}
    assert set(leaks["case"]) == {"exact case", "any case"}  # "sequentially" too, reported apart
    key = ["document", "chunk", "identifier", "case"]
    last = leaks[key].astype(str).eq(leaks[key].astype(str).iloc[-1]).all(axis=1)
    leaks[~last].to_csv(tmp_path / "accept.csv", index=False)  # all but one hit's rows
    assert main([*args, "--accept-leaks", str(tmp_path / "accept.csv")]) == 4
    assert f"found {int(last.sum())} identifier(s)" in capsys.readouterr().err
    leaks.to_csv(tmp_path / "accept.csv", index=False)
    assert main([*args, "--accept-leaks", str(tmp_path / "accept.csv")]) == 0
    assert (out / "released" / "manifest.csv").exists()
    assert "all accepted" in capsys.readouterr().out


def test_no_candidate_release_exits_3_with_the_reason_once(tmp_path, capsys):
    # no valid pair, no document defence and no goal (which would switch plans on): no candidate
    cfg = RunConfig.of(corpus="data/sample", n_components=5, n_init=1, combination_size=4,
                       document_levels=[], max_document_accuracy=1.0)
    cfg.save(tmp_path / "run.toml")
    out = tmp_path / "o"
    (out / "released" / "docs").mkdir(parents=True)  # an earlier release in the same folder
    (out / "released" / "docs" / "doc_1.txt").write_text("an older release")
    (out / "key").mkdir()
    (out / "key" / "candidates.csv").write_text("stale")
    assert main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(out)]) == 3
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert said.count("No candidate release") == 1 and "No valid pair for" in said
    assert "allow more swaps" not in said and "Traceback" not in said
    assert not (out / "released").exists()  # no un-swapped "anonymised corpus", no old one
    assert json.loads((out / "key" / "report.json").read_text())["no_release_reason"]
    assert (out / "key" / "candidates.csv").read_text() != "stale"  # key/ replaced whole


def test_run_toml_carries_entity_corrections_to_the_release(tmp_path):
    """Issue 13: the app's run.toml holds the analyst's corrections and the CLI applies them."""
    from appkit.state import run_config
    from neswap_core.text.corrections import EntityCorrection, corrections_from_config

    base = dict(n_components=5, n_init=1, max_swaps=4, trade_off_c=1.0)
    plain = tmp_path / "plain"
    RunConfig.of(corpus="data/sample", **base).save(tmp_path / "plain.toml")
    assert main(["release", "--config", str(tmp_path / "plain.toml"), "--out", str(plain)]) == 0
    before = pd.read_csv(plain / "key" / "chunks.csv", keep_default_na=False)
    orgs = before["Organization"].str.split(" & ").explode()
    dropped = orgs[orgs != ""].value_counts().index[0]
    corrections = [EntityCorrection("drop", "Organization", dropped),
                   EntityCorrection("add", "Product", "iX")]
    cfg = run_config(base, corpus="data/sample", corrections=corrections)
    (tmp_path / "run.toml").write_text(cfg.to_toml())
    loaded = RunConfig.load(tmp_path / "run.toml")
    assert corrections_from_config(loaded.review.corrections) == corrections
    out = tmp_path / "corrected"
    assert main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(out)]) == 0
    after = pd.read_csv(out / "key" / "chunks.csv", keep_default_na=False)
    assert not after["Organization"].str.split(" & ").explode().eq(dropped).any()
    assert before["Organization"].str.split(" & ").explode().eq(dropped).any()
    assert RunConfig.load(out / "key" / "config.toml").review.corrections == loaded.review.corrections


@pytest.mark.parametrize("module", ["neswap_core", "neswap_core.cli"])
def test_both_module_entry_points_run_the_cli(module):
    """``python -m neswap_core.cli`` used to import the module and exit 0 without doing anything."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", module, "release", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "--accept-leaks" in done.stdout


def test_the_goals_release_is_the_one_reported_and_attacked(tmp_path, capsys):
    """With max_chunk_accuracy the goal's plan release is written; the CLI used to print the
    trade-off line's release (and "no release reaches the line") as if it were the one released,
    and key/attack.json and report.json named the line's release while measuring the goal's."""
    cfg = RunConfig.of(corpus="data/sample", n_components=5, n_init=1, max_swaps=4, plan_rounds=2,
                    plan_terms=[False], plan_redaction_levels=[0.0, 0.2],
                    max_chunk_accuracy=0.5, max_document_accuracy=1.0, document_levels=[])  # fmt: skip
    cfg.save(tmp_path / "run.toml")
    out = tmp_path / "out"
    code = main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(out)])
    printed = capsys.readouterr().out
    assert code in (0, 4)  # 4: a leak-scan hit to review; key/ is written either way
    report = json.loads((out / "key" / "report.json").read_text())
    goal = report["goal"]["release_id"]
    assert goal.startswith("plan ") and report["goal_met"] is True
    assert report["written"]["release_id"] == goal and report["written"]["why"] == "goal"
    assert json.loads((out / "key" / "attack.json").read_text())["release_id"] == goal
    assert f"Released {goal}, the goal" in printed
    assert "The trade-off line alone would pick" in printed
