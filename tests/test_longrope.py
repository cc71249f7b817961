"""Phi-3's longrope under a KV cache: the short or long factors are decided by the whole sequence's length (as
transformers' Phi-3 decides them), so a generation that grows past original_max_position_embeddings (64 in the tiny
Phi-3) makes the keys it holds again, once, with the long factors; every cached step then gives the full pass's logits.
Gemma's sliding windows, which a cached step also reads past, are checked the same way."""

from functools import cache

import numpy as np
import pytest

from tests import checkpoints

LOGITS = 1e-4  # a cached step against the full pass over the whole sequence, relative to the largest logit: float32, blocked
#               differently (at most 1.6e-5 measured on the tiny Phi-3; with the short factors' keys kept past 64 tokens, ~0.7)
TEXT = "The cat sat on the warm stone wall by the old mill, and the"  # 21 tokens in the tiny models
MODELS = {"tiny-phi3": lambda: checkpoints.FIXTURES / "tiny-phi3", "tiny-phi3-gguf": lambda: checkpoints.gguf_fixture("tiny-phi3", "F32"),
          "tiny-gemma2": lambda: checkpoints.FIXTURES / "tiny-gemma2", "tiny-gemma3": lambda: checkpoints.FIXTURES / "tiny-gemma3"}


@cache
def model(name: str):
    from attn_cli.models.loading import load

    return load(str(MODELS[name]()))


def full_logits(m, ids: list[int]) -> np.ndarray:  # -> [V]: the last position's logits of an uncached pass over ids
    from attn_cli.models.points import Keep

    trace = m.forward(ids, keep=Keep(points=("resid_post",), layers=[m.n_layers - 1], rows=[-1]))
    return m.readout(trace.get("resid_post", m.n_layers - 1))[0]


def cached_logits(m, cache, ids: list[int]) -> np.ndarray:  # -> [V]: the same, running only ids after the cache's positions
    from attn_cli.models.points import Keep

    trace = m.forward(ids, keep=Keep(points=("resid_post",), layers=[m.n_layers - 1], rows=[-1]), cache=cache)
    return m.readout(trace.get("resid_post", m.n_layers - 1))[0]


def close(step: np.ndarray, full: np.ndarray, where: str):
    np.testing.assert_allclose(step, full, rtol=LOGITS, atol=LOGITS * max(1.0, float(np.abs(full).max())), err_msg=where)


def test_the_tiny_phi3_is_longrope_with_a_64_token_original_context():
    scaling = model("tiny-phi3").spec.rope_scaling
    assert scaling["rope_type"] == "longrope" and scaling["original_max_position_embeddings"] == 64
    assert len(model("tiny-phi3").tokenize(TEXT).ids) < 64


@pytest.mark.parametrize("name", MODELS)
def test_every_cached_step_past_the_original_context_gives_the_full_pass_logits(name):
    """One token a step, from the prompt to 80 tokens: every step's logits, all of them, are the full pass's."""
    from attn_cli.models.cache import KVCache

    m = model(name)
    ids = list(m.tokenize(TEXT).ids)
    past = KVCache(m)
    new = list(ids)
    while len(ids) <= 80:
        step = cached_logits(m, past, new)
        full = full_logits(m, ids)
        close(step, full, f"{name}, {len(ids)} tokens")
        chosen = int(np.argmax(full))
        assert int(np.argmax(step)) == chosen, f"{name}, {len(ids)} tokens"
        ids.append(chosen)
        new = [chosen]
    assert past.long == (name.startswith("tiny-phi3")) and past.ids == ids[:-1] and past.length == len(ids) - 1


def test_greedy_generation_past_the_original_context_is_repeated_full_passes():
    """`generate`'s greedy tokens and their logits are those of a full pass over the sequence so far, at every step."""
    from attn_cli.analysis.generate import GenerateSettings, Generation

    m = model("tiny-phi3")
    run = Generation(m, TEXT, GenerateSettings(steps=60, attention=False))
    steps = list(run)
    ids = list(run.tokens.ids)
    assert len(ids) + len(steps) > 64 + 10, "the run should go well past the original context"
    for step in steps:
        full = full_logits(m, ids)
        chosen = int(np.argmax(full))
        assert step.id == chosen, f"{len(ids)} tokens"
        assert abs(step.logit - float(full[chosen])) <= LOGITS * max(1.0, abs(step.logit))
        ids.append(chosen)


@pytest.mark.parametrize("split", [60, 64, 65])
def test_a_pass_of_several_tokens_that_crosses_the_original_context_gives_the_full_pass(split):
    """A cache of `split` positions, then the rest of 72 in one pass: the keys held are made again with the long factors."""
    from attn_cli.models.cache import KVCache

    m = model("tiny-phi3")
    ids = [int(i) for i in np.random.default_rng(split).integers(3, m.spec.vocab_size, 72)]
    past = KVCache(m)
    cached_logits(m, past, ids[:split])
    assert past.long == (split > 64)
    close(cached_logits(m, past, ids[split:]), full_logits(m, ids), f"{split} then {72 - split}")
    assert past.long and past.length == 72


def test_the_keys_held_are_made_again_once():
    """Crossing the original context costs one more pass over the ids held, once; later steps append as before."""
    from attn_cli.models.cache import KVCache

    m = model("tiny-phi3")
    ids = [int(i) for i in np.random.default_rng(0).integers(3, m.spec.vocab_size, 70)]
    past = KVCache(m)
    cached_logits(m, past, ids[:64])
    counts = []
    for i in range(64, 70):
        before = m.weights.passes
        cached_logits(m, past, [ids[i]])
        counts.append(m.weights.passes - before)
    assert counts == [2, 1, 1, 1, 1, 1]
