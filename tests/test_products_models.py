"""Passes over a few rows multiply a quantized file's matrices straight from its blocks (Weights.products_for,
sources.products): on every quantized family fixture and on the two real checkpoints, the logits equal the dequantized
path's to 1e-4 and greedy generation picks the same tokens; a generation's steps dequantize nothing; a weight that is not
finite is still one line."""

import numpy as np
import pytest

from attn_cli.models.cache import KVCache
from attn_cli.models.loading import load
from attn_cli.models.points import Keep
from attn_cli.models.sources import products, quants
from tests import checkpoints
from tests.oracle import attn, one_line

pytestmark = pytest.mark.skipif(products.COMPILED is None, reason="the C products were not built (no C compiler at install)")

TINY = [("tiny-llama", "Q4_0"), ("tiny-llama", "Q4_1"), ("tiny-llama", "Q8_0"), ("tiny-qwen2", "Q4_1"), ("tiny-qwen3", "Q8_0"),
        ("tiny-phi3", "Q8_0"), ("tiny-gemma2", "Q8_0"), ("tiny-gemma3", "Q8_0")]
TEXT = "The cat sat on the mat and the dog"


def greedy(path, compiled, steps: int, text: str = TEXT):
    """The prompt's last logits, then `steps` cached greedy steps: (ids, [logits of each])."""
    saved = products.COMPILED
    products.COMPILED = compiled
    try:
        model = load(str(path))
        tokens = model.tokenize(text)
        cache = KVCache(model)
        keep = Keep(points=("attn.pattern", "resid_post"), rows=[-1])
        trace = model.forward(tokens.ids, keep=keep, cache=cache)
        ids, logits = [], []
        for _ in range(steps + 1):
            row = model.readout(trace.get("resid_post", model.n_layers - 1)[-1:])[0]
            logits.append(row)
            ids.append(int(np.argmax(row)))
            trace = model.forward(ids[-1:], keep=keep, cache=cache)
        return ids, logits, model
    finally:
        products.COMPILED = saved


def assert_same(path, steps: int, tolerance: float = 1e-4):
    ours, our_logits, model = greedy(path, products.COMPILED, steps)
    assert model.weights.products_for(1)
    theirs, their_logits, _ = greedy(path, None, steps)
    worst = max(float(np.abs(a - b).max() / max(1.0, np.abs(b).max())) for a, b in zip(our_logits, their_logits))
    assert worst <= tolerance, f"logits differ by {worst:.2e} of their scale"
    assert ours == theirs


@pytest.mark.parametrize("name, kind", TINY)
def test_products_give_the_dequantized_logits_and_tokens(name, kind):
    assert_same(checkpoints.gguf_fixture(name, kind), steps=6)


def test_a_short_pass_reads_blocks_and_a_long_one_dequantizes(monkeypatch):
    """A generated token reads the blocks; a short prompt too, unless its layer is held as float32; a long one dequantizes."""
    model = load(str(checkpoints.gguf_fixture("tiny-llama", "Q8_0")))
    w = model.weights
    assert w.products_for(products.FIRST_PASS_ROWS, 0) and not w.products_for(products.FIRST_PASS_ROWS + 1, 0)
    layer = w.layer(0, rows=1)
    assert isinstance(layer["attn.qkv.w"], products.Blocks) and isinstance(layer["attn.norm.w"], np.ndarray)
    assert isinstance(w.layer(0, rows=products.FIRST_PASS_ROWS + 1)["attn.qkv.w"], np.ndarray)
    monkeypatch.setattr(w, "_kept", lambda l: True)  # the layers held as float32 (a later pass of patch, the meter)
    assert w.products_for(products.FEW_ROWS, 0) and not w.products_for(products.FEW_ROWS + 1, 0)


def test_the_steps_of_a_generation_dequantize_nothing(monkeypatch):
    """After the prompt's pass, every step reads the layers and the output head from their blocks."""
    model = load(str(checkpoints.smollm2_gguf()))
    model.weights.hold(1 << 30, rows=1)
    cache = KVCache(model)
    keep = Keep(points=("attn.pattern", "resid_post"), rows=[-1])
    model.forward(model.tokenize(TEXT).ids, keep=keep, cache=cache)
    calls = []
    decode = quants.dequantize
    monkeypatch.setattr(quants, "dequantize", lambda *a, **k: calls.append(a[1]) or decode(*a, **k))
    next_id = 1
    for _ in range(3):
        trace = model.forward([next_id], keep=keep, cache=cache)
        next_id = int(np.argmax(model.readout(trace.get("resid_post", model.n_layers - 1)[-1:])[0]))
    assert calls == ["Q8_0"] * 3  # each step's one new token's embedding row, and nothing else


def test_smollm2_generates_the_same_tokens_from_its_blocks():
    assert_same(checkpoints.smollm2_gguf(), steps=12)


@pytest.mark.slow
def test_gemma3_generates_the_same_tokens_from_its_blocks():
    assert_same(checkpoints.gemma3_gguf(), steps=8)


def test_a_weight_that_is_not_finite_is_one_line_on_the_products_path(tmp_path):
    from tests.test_hostile_gguf import write_gguf

    from attn_cli.models.sources import gguf_file

    base = checkpoints.gguf_fixture("tiny-llama", "Q8_0")
    info = gguf_file.read_file(base).tensors["blk.0.ffn_down.weight"]
    raw = np.array(gguf_file.read_file(base).raw(info)).reshape(-1, 34).copy()
    raw[5, :2] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)  # one block's scale NaN
    path = write_gguf(tmp_path / "nan.gguf", tensors={"blk.0.ffn_down.weight": (8, raw.tobytes())}, base=base)
    one_line(attn("predict", "hello", "--model", str(path)), 1, "NaN or infinite")
