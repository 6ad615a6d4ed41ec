"""LazyNer (issue 14): the fingerprint without spaCy equals the loaded pipeline's, and a run whose
entities are all cached never imports spaCy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from neswap_core.config import DEFAULT_LABEL_MAP, SPACY_PACKAGES
from neswap_core.text.entities import load_ner
from neswap_core.text.entity_cache import pipeline_fingerprint
from neswap_core.text.lazy_ner import LazyNer, package_meta

ROOT = Path(__file__).resolve().parents[1]


#: The pipelines installed here (requirements.txt installs the default one; others if present).
INSTALLED = [m for m in sorted(SPACY_PACKAGES) if package_meta(m) is not None]


@pytest.mark.parametrize("model", INSTALLED)
def test_unloaded_answers_equal_the_loaded_pipeline(model):
    lazy = LazyNer(model)
    unloaded = (lazy.meta["lang"], lazy.meta["name"], lazy.meta["version"], lazy.pipe_names,
                pipeline_fingerprint(lazy, DEFAULT_LABEL_MAP))
    assert not lazy.is_loaded
    nlp = load_ner(model)
    assert unloaded == (nlp.meta["lang"], nlp.meta["name"], nlp.meta["version"], nlp.pipe_names,
                        pipeline_fingerprint(nlp, DEFAULT_LABEL_MAP))


def test_it_loads_on_first_real_use_and_then_answers_from_the_pipeline():
    lazy = LazyNer()
    doc = lazy("Apple opened a store in Paris.")
    assert lazy.is_loaded
    assert {e.text for e in doc.ents} >= {"Apple", "Paris"}
    assert lazy.pipe_names == lazy.loaded().pipe_names


def test_an_unknown_pipeline_fails_with_the_install_advice_when_used():
    lazy = LazyNer("no_such_pipeline_xyz")
    with pytest.raises(Exception, match="no_such_pipeline_xyz"):
        lazy.pipe_names  # noqa: B018


@pytest.mark.slow
def test_a_warm_prepare_never_imports_spacy(tmp_path):
    """Second prepare of the same corpus: every entity comes from the cache, spaCy stays out.
    Three transcripts (the property does not depend on the corpus's size), and the machine's
    ONNX export linked in (the caches under test are the entities' and the embeddings')."""
    from tests.conftest import sample_subset, shared_onnx_export

    corpus = sample_subset(tmp_path / "corpus", 3)
    shared_onnx_export(tmp_path / "cache")
    script = (
        "import sys\n"
        "from neswap_core.config import RunConfig\n"
        "from neswap_core.prepare.pipeline import prepare_path\n"
        f"cfg = RunConfig.of(cache_dir={str(tmp_path / 'cache')!r})\n"
        f"p = prepare_path({str(corpus)!r}, cfg, processes=1)\n"
        "print(len(p.chunks), sum(len(c.entities) for c in p.chunks), 'spacy' in sys.modules)\n"
    )
    runs = [subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    cold, warm = runs
    assert cold[2] == "True"  # the first run had to tag
    assert warm[:2] == cold[:2]  # same chunks and entities
    assert warm[2] == "False"  # ... and the second never imported spaCy


@pytest.mark.slow
def test_a_restarted_app_on_warm_caches_imports_neither_spacy_nor_torch(tmp_path):
    """The dashboard's first load after a server restart (issue 14: "first load <= 5 s with warm
    caches"): with every text in the disk caches, spaCy (1.5 s) and torch (1 s) stay out. The
    caches are the test session's, warmed here by the same load (usually already warm: other
    app tests load the sample), so no cold run is paid for again."""
    import os

    from appkit.pipeline import CACHE_DIR, Stage
    from appkit.state import settings
    from neswap_core.workspace.store import Workspace

    ws_path = tmp_path / "ws"
    ws = Workspace.open(ws_path)
    warmed = Stage(settings(ws), ws)
    warmed.load("pre_swap", progress=lambda f, m: None)
    script = (
        "import sys\n"
        "from neswap_core.workspace.store import Workspace\n"
        "from appkit.pipeline import Stage\n"
        "from appkit.state import settings\n"
        f"ws = Workspace.open({str(ws_path)!r})\n"
        "stage = Stage(settings(ws), ws)\n"
        "stage.load('pre_swap', progress=lambda f, m: None)\n"
        "print(len(stage.raw_chunks()), 'spacy' in sys.modules, 'torch' in sys.modules)\n"
    )
    env = {**os.environ, "NESWAP_CACHE_DIR": str(CACHE_DIR), "PYTHONPATH": str(ROOT)}
    restarted = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                               text=True, check=True, env=env).stdout.split()
    assert restarted == [str(len(warmed.raw_chunks())), "False", "False"]
