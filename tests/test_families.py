"""The newer decoder families against transformers' recorded outputs: Qwen3 (q/k norms), Phi-3 (fused qkv and gate_up,
longrope), Gemma 2 (soft-caps, alternating windows, sandwich norms) and Gemma 3 (q/k norms, local and global layers with
their own RoPE bases), each as a tiny random safetensors folder and as GGUF files (F32, Q8_0) as llama.cpp writes them.

The bars are test_decoders.py's, over every layer and head of every sentence: attention within 1e-4, hidden states within
1e-4 of each layer's RMS, logits within 1e-3, the same top-1 token at every position. Every sentence is longer than the
Gemma fixtures' window of 8 keys, so the windows cut.
"""

from functools import cache

import numpy as np
import pytest

from attn_cli.models import loading
from tests import checkpoints
from tests.test_decoders import ATTENTION, HIDDEN, LOGITS, encode, layer_scale_error

NAMES = ("tiny-qwen3", "tiny-phi3", "tiny-gemma2", "tiny-gemma3")
KINDS = ("folder", "F32", "Q8_0")


@cache
def model(name: str, kind: str):
    return loading.load(str(checkpoints.FIXTURES / name if kind == "folder" else checkpoints.FIXTURES / "gguf" / f"{name}.{kind}.gguf"))


def oracle(name: str, kind: str) -> list[dict]:
    data = np.load(checkpoints.FIXTURES / (f"oracle-{name}.npz" if kind == "folder" else f"oracle-{name}-gguf.npz"), allow_pickle=False)
    prefix = "" if kind == "folder" else f"{kind}_"
    keys = ("text", "chat", "ids", "attentions", "hidden", "logits")
    return [{k: data[f"{prefix}s{s}_{k}"] for k in keys} for s in range(int(data["n_sentences"]))]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", NAMES)
def test_every_layer_and_head_matches_transformers(name, kind):
    m = model(name, kind)
    worst = {"attention": 0.0, "hidden": 0.0, "logits": 0.0}
    for case in oracle(name, kind):
        tokens = encode(m, str(case["text"]), bool(case["chat"]))
        assert tokens.ids == case["ids"].tolist(), "the tokenizer must give transformers' ids"
        trace = m.forward(tokens)
        weights = np.stack([layer.weights for layer in trace.layers])  # [L, H, n, n]
        assert weights.shape == case["attentions"].shape and weights.dtype == np.float32
        worst["attention"] = max(worst["attention"], float(np.abs(weights - case["attentions"]).max()))
        hidden = np.concatenate([trace.hidden[:-1], trace.output[None]])  # transformers' last hidden state is after the final norm
        worst["hidden"] = max(worst["hidden"], layer_scale_error(hidden, case["hidden"]))
        logits = m.lm_logits(trace.hidden[-1])  # [n, V]
        worst["logits"] = max(worst["logits"], float(np.abs(logits - case["logits"]).max()))
        assert (logits.argmax(-1) == case["logits"].argmax(-1)).all(), "the same next token at every position"
    assert worst["attention"] <= ATTENTION and worst["hidden"] <= HIDDEN and worst["logits"] <= LOGITS, worst
