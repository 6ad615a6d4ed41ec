"""BertForward (issue 14): the bf16 backend's own BERT forward pass equals transformers' BertModel
on the packaged MiniLM weights, and the backend never imports transformers."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from neswap_core.models.bert_forward import BertForward  # noqa: E402
from neswap_core.models.embedding import embedding_model_path  # noqa: E402

TEXTS = [
    "Revenue grew 12 % in the third quarter, driven by our cloud business.",
    "Thank you.",
    "We expect margins to improve next year as the new plant in Ohio ramps up production "
    "and input costs ease.",
]


def _batch(tokenizer, texts):
    enc = [tokenizer.encode(t) for t in texts]
    lengths = np.array([len(e.ids) for e in enc], dtype=np.int64)
    ids = np.zeros((len(enc), int(lengths.max()) + 3), dtype=np.int64)  # extra padding columns
    for row, e in enumerate(enc):
        ids[row, : len(e.ids)] = e.ids
    return ids, lengths


def test_float32_forward_equals_transformers_bertmodel_on_real_tokens():
    from tokenizers import Tokenizer

    path = embedding_model_path()
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    ids, lengths = _batch(tokenizer, TEXTS)
    ours = BertForward(path, torch.float32).last_hidden_state(ids, lengths)
    model = transformers.AutoModel.from_pretrained(str(path)).eval()
    mask = torch.arange(ids.shape[1])[None, :] < torch.from_numpy(lengths)[:, None]
    with torch.inference_mode():
        theirs = model(input_ids=torch.from_numpy(ids), attention_mask=mask.long(),
                       token_type_ids=torch.zeros_like(torch.from_numpy(ids))).last_hidden_state
    for row, n in enumerate(lengths):  # padding positions are never pooled
        np.testing.assert_allclose(ours[row, :n].numpy(), theirs[row, :n].numpy(), atol=2e-4)


def test_bf16_backend_does_not_import_transformers():
    script = (
        "import sys\n"
        "from neswap_core.models.torch_minilm import Bf16SentenceEncoder\n"
        "from neswap_core.models.embedding import embedding_model_path\n"
        "v = Bf16SentenceEncoder(embedding_model_path(), threads=1).encode(['Hello world.'])\n"
        "print(v.shape, 'transformers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split("\n")[0]
    assert out == "(1, 384) False"
