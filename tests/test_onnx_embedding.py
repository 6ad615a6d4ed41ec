"""The fast MiniLM paths (issue 14): fixed batch shapes, cache keys per backend, quality bar."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from neswap_core.config import RunConfig
from neswap_core.errors import ConfigError, NeswapError
from neswap_core.models import onnx_minilm
from neswap_core.models.embedding import Embedder, cache_name
from neswap_core.models.embedding_quality import (
    COSINE_BAR,
    GAP_BAR,
    LABEL_BAR,
    cosine_agreement,
    gap_agreement,
    label_agreement,
)
from neswap_core.models.fixed_batches import (
    BATCH_ROWS,
    ONNX_ROWS,
    ONNX_STEP,
    WIDTH_STEP,
    fixed_shape_batches,
)
from neswap_core.text.chunking import chunk_corpus

SAMPLE_DOCS = Path(__file__).resolve().parents[1] / "data" / "sample" / "docs"


class FakeModel:
    def __init__(self, value: float) -> None:
        self.value = value

    def encode(self, texts):
        out = np.ones((len(texts), 4), dtype=np.float32)
        out[:, 0] = self.value
        return out


@pytest.mark.parametrize("n_rows, step", [(BATCH_ROWS, WIDTH_STEP), (ONNX_ROWS, ONNX_STEP), (3, 5)])
def test_fixed_shape_batches_cover_every_text_once_in_one_shape_per_width(n_rows, step):
    rng = np.random.default_rng(3)
    token_ids = [list(rng.integers(1, 30000, size=n)) for n in rng.integers(2, 257, size=500)]
    seen: list[int] = []
    widths = []
    for idx, ids, rows in fixed_shape_batches(token_ids, n_rows, step):
        assert 1 <= len(idx) <= n_rows and ids.shape[0] == n_rows == len(rows)
        width = ids.shape[1]
        assert width % step == 0
        for row, i in enumerate(idx):  # each text in the one width bucket of its length
            assert width - step < len(token_ids[i]) <= width and rows[row] == len(token_ids[i])
            assert ids[row, : rows[row]].tolist() == token_ids[i] and not ids[row, rows[row]:].any()
        assert (rows[len(idx):] == 1).all() and not ids[len(idx):].any()  # blank rows
        seen += idx.tolist()
        widths.append(width)
    assert sorted(seen) == list(range(500))
    assert widths == sorted(widths, reverse=True)  # widest first


def test_backends_never_share_cached_vectors(tmp_path):
    a = Embedder("m", tmp_path, model=FakeModel(1.0), backend="torch").encode(["same"])
    b = Embedder("m", tmp_path, model=FakeModel(2.0), backend="onnx").encode(["same"])
    c = Embedder("m", tmp_path, model=FakeModel(3.0), backend="onnx-int8").encode(["same"])
    assert len({tuple(np.round(v[0], 4)) for v in (a, b, c)}) == 3
    # and each backend finds its own vectors again
    again = Embedder("m", tmp_path, model=FakeModel(9.0), backend="onnx").encode(["same"])
    np.testing.assert_array_equal(again, b)
    assert len({cache_name("m", k) for k in ("torch", "onnx", "onnx-int8")}) == 3
    assert cache_name("m", "torch") == "m"  # the caches written before issue 14 stay valid


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ConfigError, match="embedding_backend must be one of"):
        Embedder("m", None, backend="tensorflow")
    with pytest.raises(ConfigError, match="embedding_backend"):
        RunConfig.of(embedding_backend="gpu")
    assert RunConfig.of(embedding_backend="torch").prepare.embedding_backend == "torch"


def test_label_agreement_ignores_component_numbering():
    a = np.array([0, 0, 1, 1, 2, 2, 2])
    assert label_agreement(a, (a + 1) % 3) == 1.0
    b = np.array([5, 5, 7, 7, 9, 9, 7])  # one item moved
    assert label_agreement(a, b) == pytest.approx(6 / 7)
    with pytest.raises(NeswapError):
        label_agreement(a, a[:-1])


def test_gap_agreement_counts_decisions_per_gap():
    def embed_with(noise):
        def embed(texts):
            rng = np.random.default_rng(len(texts))
            v = rng.normal(size=(len(texts), 8)) + noise * np.arange(len(texts))[:, None]
            return v / np.linalg.norm(v, axis=1, keepdims=True)

        return embed

    text = " ".join(f"Sentence number {i} is here." for i in range(1, 30))
    docs = [("d", text)]
    ref = chunk_corpus(docs, embed_with(0.0))
    assert gap_agreement(ref, ref, 75) == 1.0
    other = chunk_corpus(docs, embed_with(0.5))
    share = gap_agreement(ref, other, 75)
    assert 0.0 <= share < 1.0
    cuts_ref = set(ref.documents[0].chunks(75))
    cuts_other = set(other.documents[0].chunks(75))
    assert cuts_ref != cuts_other


def test_cosine_agreement_of_identical_and_opposite_rows():
    x = np.eye(3, dtype=np.float32)
    np.testing.assert_allclose(cosine_agreement(x, x), 1.0)
    np.testing.assert_allclose(cosine_agreement(x, -x), -1.0)


def test_auto_backend_is_bf16_only_where_the_cpu_multiplies_bfloat16(tmp_path, monkeypatch):
    from neswap_core.models import torch_minilm
    from neswap_core.models.embedding import resolve_backend

    amx, plain = tmp_path / "amx", tmp_path / "plain"
    amx.write_text("processor : 0\nflags : fpu avx2 avx512f amx_bf16 amx_tile\n")
    plain.write_text("processor : 0\nflags : fpu avx2 avx512f\n")
    assert torch_minilm.native_bf16(str(amx)) is True
    assert torch_minilm.native_bf16(str(plain)) is False
    assert torch_minilm.native_bf16(str(tmp_path / "missing")) is False
    for native, expected in ((True, "bf16"), (False, "onnx")):
        monkeypatch.setattr(torch_minilm, "native_bf16", lambda n=native: n)
        assert resolve_backend("auto") == expected
        assert Embedder("m", tmp_path, model=FakeModel(1.0)).backend == expected
        assert cache_name("m") == (f"m@{torch_minilm.CACHE_TAG}" if expected == "bf16"
                                   else f"m@{expected}{onnx_minilm.CACHE_TAG}")
    assert resolve_backend("torch") == "torch"


def test_bf16_asked_for_on_a_cpu_that_emulates_it_warns_what_it_costs(monkeypatch):
    """An explicit ``embedding_backend = "bf16"`` on a CPU without bfloat16 instructions ran
    MiniLM ten times slower than ONNX, silently (105.5 s against 10.0 s for 392 groups on an AVX2
    CPU); loading the model now says so and names "auto". Where the CPU has bfloat16, nothing."""
    import warnings

    from neswap_core.models import torch_minilm
    from neswap_core.models.embedding import load_encoder

    monkeypatch.setattr(torch_minilm, "native_bf16", lambda *args, **kwargs: False)
    with pytest.warns(torch_minilm.EmulatedBf16Warning, match='emulated.*"auto"'):
        encoder = load_encoder(backend="bf16")
    assert encoder.encode(["Revenue grew."]).shape == (1, 384)  # still works, only slower
    monkeypatch.setattr(torch_minilm, "native_bf16", lambda *args, **kwargs: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch_minilm.EmulatedBf16Warning)
        load_encoder(backend="bf16")


@pytest.fixture(scope="module")
def quality_cache(tmp_path_factory):
    """One cache folder for both backends' quality bars: the float32 PyTorch reference vectors
    are computed once and read back by the second case (each backend has its own folder)."""
    return tmp_path_factory.mktemp("quality")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnx", "bf16"])
def test_fast_and_torch_paths_agree_within_the_quality_bar(quality_cache, backend):
    """Same sample transcript through both paths (the shortest one, JBL: bf16 without a CPU that
    multiplies bfloat16 in hardware takes 1.5 minutes on OMC): boundaries, vectors and clusters agree.

    Clusters: one mixture fitted on the reference vectors labels both sets (the vectors are
    interchangeable). Refitting on a few dozen chunks is no test: K = 3 fits of the *same* vectors with
    seeds 0, 1, 2 agree on only 58–69 % of chunks; the refit bar (97 %) is measured on the dev
    corpus's 1,238 chunks by benchmarks/preprocess.py."""
    from neswap_core.models.mixture import SphericalMixture

    text = (SAMPLE_DOCS / "JBL_q3_2021.txt").read_text(encoding="utf-8")
    docs = [("JBL", text)]
    torch = Embedder(cache_dir=quality_cache, backend="torch")
    onnx = Embedder(cache_dir=quality_cache, backend=backend)
    ref = chunk_corpus(docs, torch.encode)
    fast = chunk_corpus(docs, onnx.encode)
    assert gap_agreement(ref, fast, 75) >= GAP_BAR
    texts = [c.text for c in ref.documents[0].chunks(75)]
    x, y = torch.encode(texts), onnx.encode(texts)
    assert cosine_agreement(x, y).min() >= COSINE_BAR
    mixture = SphericalMixture(n_components=3, random_state=0).fit(x)
    assert label_agreement(mixture.predict(x), mixture.predict(y)) >= LABEL_BAR


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["bf16", "onnx"])
def test_vector_of_a_text_does_not_depend_on_its_batch_mates(tmp_path, backend):
    """Streaming, batch sizes, processes and Ray actors cannot change a vector: bit for bit
    (bf16 failed by ~1e-3 when batches took the shape of their texts; ONNX by 3e-8, so two
    processes that embedded a text at once cached different vectors, issue 21)."""
    from neswap_core.models.embedding import load_encoder
    from tests.conftest import shared_onnx_export

    shared_onnx_export(tmp_path, backend)
    text = (SAMPLE_DOCS / "OMC_q3_2021.txt").read_text(encoding="utf-8")
    texts = [line for line in text.splitlines() if line.strip()][:12]  # 10 to 46 words
    encoder = load_encoder(backend=backend, cache_dir=tmp_path)
    together = encoder.encode(texts)
    np.testing.assert_array_equal(np.vstack([encoder.encode([t]) for t in texts]), together)
    np.testing.assert_array_equal(encoder.encode(texts[::-1])[::-1], together)
    np.testing.assert_array_equal(encoder.encode(texts[3:9]), together[3:9])
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_prepare_exports_the_onnx_model_before_it_forks_its_workers(tmp_path, monkeypatch):
    """The one-time ONNX export (torch tracing the model) ran in each forked prepare worker on
    its first batch, and one segfaulted inside torch in CI. It runs in the parent now, before
    the fork: every export happens in this process, once."""
    import os
    import shutil

    from neswap_core.models import onnx_minilm
    from neswap_core.prepare.pipeline import prepare
    from neswap_core.text.loading import load_corpus
    from tests.conftest import sample_subset, shared_onnx_export

    shared_onnx_export(tmp_path / "shared", "onnx")  # a real exported file to copy from
    exported = next((tmp_path / "shared" / "onnx").resolve().rglob("model.onnx"))
    log = tmp_path / "exports.log"

    def export(model_path, dest):  # records the process, then gives the real file
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(exported, dest)
        return Path(dest)

    monkeypatch.setattr(onnx_minilm, "export_onnx", export)
    corpus = load_corpus(sample_subset(tmp_path / "corpus", 3))
    config = RunConfig.of(cache_dir=str(tmp_path / "cache"), embedding_backend="onnx")
    prepare(corpus, config, processes=2, batch_documents=1)
    assert log.read_text().split() == [str(os.getpid())]


def test_a_warm_prepare_imports_neither_torch_nor_onnx_runtime(tmp_path):
    """Issue 21: prepare names the exported ONNX file before it forks (``export_model_files``),
    and naming it imported torch and ONNX Runtime for their versions: 2.7 s of a 9-second warm
    re-run of the dev release, whose vectors were all cached. The versions come from the
    packages' metadata now, the same strings as the modules' ``__version__`` (so the exported
    files keep their names), and a warm two-process prepare imports neither package."""
    import os
    import subprocess
    import sys

    import onnxruntime
    import torch

    from neswap_core.models import onnx_minilm
    from neswap_core.models.embedding import embedding_model_path
    from neswap_core.prepare.pipeline import prepare
    from neswap_core.text.loading import load_corpus
    from tests.conftest import sample_subset, shared_onnx_export

    cache = tmp_path / "cache"
    shared_onnx_export(cache, "onnx")
    folder = sample_subset(tmp_path / "corpus", 2)
    config = RunConfig.of(cache_dir=str(cache), embedding_backend="onnx")
    cold = prepare(load_corpus(folder), config, processes=2, batch_documents=1)  # fills the caches
    script = (
        "import sys\n"
        "from neswap_core.config import RunConfig\n"
        "from neswap_core.models.onnx_minilm import model_fingerprint\n"
        "from neswap_core.prepare.pipeline import prepare\n"
        "from neswap_core.text.loading import load_corpus\n"
        f"config = RunConfig.of(cache_dir={str(cache)!r}, embedding_backend='onnx')\n"
        f"warm = prepare(load_corpus({str(folder)!r}), config, processes=2, batch_documents=1)\n"
        "print(len(warm.chunks), 'torch' in sys.modules, 'onnxruntime' in sys.modules)\n"
        f"print(model_fingerprint(__import__('pathlib').Path({str(embedding_model_path())!r})))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env=env).stdout.split()  # fmt: skip
    assert out[:3] == [str(len(cold.chunks)), "False", "False"]
    assert onnx_minilm._version("torch") == torch.__version__
    assert onnx_minilm._version("onnxruntime") == onnxruntime.__version__
    h = hashlib.sha256()  # the fingerprint as it was made with the modules imported
    for name in ("model.safetensors", "pytorch_model.bin", "config.json"):
        path = embedding_model_path() / name
        if path.exists():
            h.update(name.encode())
            h.update(str(path.stat().st_size).encode())
            h.update(path.read_bytes()[: 1 << 20])
    h.update(f"torch {torch.__version__} ort {onnxruntime.__version__}".encode())
    assert out[3] == h.hexdigest()[:16]
