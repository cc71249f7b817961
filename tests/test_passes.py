"""The forward pass that keeps only what is asked, can be edited and can start from a cache (models.points, models.cache,
core.blocked), against plain loops written out here, and its invariants under hypothesis.

Tolerances: float32 passes against a float64 loop within 2e-4 of each value's scale (the stream's RMS);
two float32 passes that do the same arithmetic in another order (a cache, blocks of rows, a batch) within 5e-5
of the scale (weights within 1e-4, the bar against transformers); what no arithmetic touched (a position before a patch) within 1e-6.
"""

import math
import os
import sys
from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from attn_cli.core.blocked import attend_rows, plain_attention
from attn_cli.core.blocks import SHORT_ROWS, apply_linear, rms_norm, rotary_frequencies, rotary_tables, rotate, silu
from attn_cli.models import loading
from attn_cli.models.cache import KVCache
from attn_cli.models.points import Add, Keep, Mean, Patch, Start, Zero
from tests import checkpoints
from tests.exact import assert_same_ids

LOOP, REORDERED, UNTOUCHED = 2e-4, 5e-5, 1e-6
SENTENCE = "the grey cat sat on the mat and looked at the dog"


@cache
def tiny(name: str = "tiny-llama"):
    return loading.load(str(checkpoints.FIXTURES / name))


def scale_error(ours: np.ndarray, theirs: np.ndarray) -> float:
    theirs = np.asarray(theirs, dtype=np.float64)
    return float(np.abs(np.asarray(ours, dtype=np.float64) - theirs).max() / np.sqrt(np.mean(theirs**2)))


def plain_llama(m, ids: list[int], zero: tuple | None = None) -> np.ndarray:  # -> [n, d] the final norm's output, float64
    """The tiny Llama written out with loops over layers, heads and queries, in float64; `zero` = (layer, head): that head's
    weighted values set to 0 before W_O."""
    spec, w_all = m.spec, m.weights
    n, h, kv, dh = len(ids), spec.n_heads, spec.n_kv_heads, spec.d_head
    x = w_all.rows(ids).astype(np.float64)  # [n, d]
    cos, sin = rotary_tables(n, rotary_frequencies(dh, spec.rope_theta, spec.rope_scaling))
    for l in range(spec.n_layers):
        w = {k: a.astype(np.float64) for k, a in w_all.layer(l).items()}
        normed = rms_norm(x, w["attn.norm.w"], None, spec.eps)
        qkv = normed @ w["attn.qkv.w"]
        q = rotate(qkv[:, : h * dh].reshape(n, h, dh).transpose(1, 0, 2), cos, sin)
        k = rotate(qkv[:, h * dh : (h + kv) * dh].reshape(n, kv, dh).transpose(1, 0, 2), cos, sin)
        v = qkv[:, (h + kv) * dh :].reshape(n, kv, dh).transpose(1, 0, 2)
        z = np.zeros((n, h, dh))
        for head in range(h):
            if zero == (l, head):
                continue
            shared = head // (h // kv)
            for i in range(n):
                scores = np.array([q[head, i] @ k[shared, j] / math.sqrt(dh) for j in range(i + 1)])
                e = np.exp(scores - scores.max())
                z[i, head] = (e / e.sum()) @ v[shared, : i + 1]
        mid = x + z.reshape(n, h * dh) @ w["attn.o.w"]
        normed = rms_norm(mid, w["mlp.norm.w"], None, spec.eps)
        x = mid + (silu(normed @ w["mlp.gate.w"]) * (normed @ w["mlp.in.w"])) @ w["mlp.out.w"]
    return rms_norm(x, w_all.get("final_norm.w").astype(np.float64), None, spec.eps)


def ids(m, text: str = SENTENCE) -> list[int]:
    return m.tokenize(text).ids


def test_the_pass_equals_a_plain_loop():
    m = tiny()
    trace = m.forward(ids(m), keep=Keep(("resid_final",)))
    assert scale_error(trace.get("resid_final"), plain_llama(m, ids(m))) < LOOP


@pytest.mark.parametrize("layer, head", [(0, 1), (1, 3)])
def test_zeroing_a_head_equals_a_plain_loop_without_it(layer, head):
    m = tiny()
    ablated = m.forward(ids(m), keep=Keep(("resid_final", "attn.z")), edits=[Zero("attn.z", layer, head=head)])
    expected = plain_llama(m, ids(m), zero=(layer, head))
    assert scale_error(ablated.get("resid_final"), expected) < LOOP
    assert np.abs(ablated.get("attn.z", layer)[:, head]).max() == 0  # set, not computed
    clean = m.forward(ids(m), keep=Keep(("resid_final",)))
    assert scale_error(clean.get("resid_final"), expected) > 10 * LOOP, "the head matters, so the test can fail"


def test_mean_ablation_puts_the_mean_in_at_every_position():
    m = tiny()
    clean = m.forward(ids(m), keep=Keep(("attn.z",)))
    mean = clean.get("attn.z", 0)[:, 2].mean(axis=0)  # [d_head]
    edited = m.forward(ids(m), keep=Keep(("attn.z", "attn.out")), edits=[Mean("attn.z", 0, head=2, mean=mean)])
    np.testing.assert_allclose(edited.get("attn.z", 0)[:, 2], np.broadcast_to(mean, (len(ids(m)), len(mean))), atol=UNTOUCHED)
    w_o = m.output_maps(0)  # [h, d_head, d]
    z = clean.get("attn.z", 0).copy()
    z[:, 2] = mean
    assert scale_error(edited.get("attn.out", 0), np.einsum("nhk,hkd->nd", z, w_o)) < REORDERED


def test_a_cached_pass_token_by_token_equals_the_full_pass():
    """Prefix, then one token at a time: every new row's stream, pattern and final output as the full pass gives them."""
    m = tiny()
    all_ids = ids(m)
    full = m.forward(all_ids)
    streams = full.streams()  # [L + 1, n, d]
    kv = KVCache(m)
    first = m.forward(all_ids[:5], cache=kv)
    assert scale_error(first.get("resid_final"), full.get("resid_final")[:5]) < REORDERED
    for p in range(5, len(all_ids)):
        step = m.forward(all_ids[p : p + 1], cache=kv)
        assert kv.length == p + 1
        assert scale_error(step.get("resid_final")[0], full.get("resid_final")[p]) < REORDERED
        for l in range(m.n_layers):
            np.testing.assert_allclose(step.get("attn.pattern", l)[:, 0], full.get("attn.pattern", l)[:, p, : p + 1], atol=1e-4)
            assert scale_error(step.get("resid_post", l)[0], streams[l + 1, p]) < REORDERED


def test_learned_positions_are_absolute_in_a_cached_pass():
    m = tiny("tiny-gpt2")
    all_ids = ids(m, "a cat sat on a mat")
    full = m.forward(all_ids, keep=Keep(("resid_final",)))
    kv = KVCache(m)
    m.forward(all_ids[:3], cache=kv)
    rest = m.forward(all_ids[3:], cache=kv, keep=Keep(("resid_final",)))
    assert scale_error(rest.get("resid_final"), full.get("resid_final")[3:]) < REORDERED


def test_keep_stores_only_the_rows_heads_and_layers_asked_for():
    m = tiny()
    full = m.forward(ids(m))
    kept = m.forward(ids(m), keep=Keep(("attn.pattern", "resid_post", "attn.z"), layers=[1], heads=[3, 0], rows=[-1, 2]))
    assert kept.get("attn.pattern", 1).shape == (2, 2, len(ids(m)))
    np.testing.assert_allclose(kept.get("attn.pattern", 1), full.get("attn.pattern", 1)[[3, 0]][:, [-1, 2]], atol=1e-7)
    np.testing.assert_allclose(kept.get("resid_post", 1), full.streams()[2][[-1, 2]], atol=1e-6)
    assert kept.get("attn.z", 1).shape == (2, 2, m.spec.d_head)
    assert not kept.has("attn.pattern", 0) and not kept.has("resid_pre", 1)
    with pytest.raises(KeyError, match="attn.pattern of layer 0 was not kept"):
        kept.get("attn.pattern", 0)
    with pytest.raises(KeyError, match="resid_mid"):
        kept.between("resid_pre", "resid_mid", 1)


def test_watchers_see_every_block_of_rows_and_can_reduce_them():
    """A watcher summing each head's weight on the first key gets what the whole pattern gives, the blocks made small."""
    import attn_cli.core.blocked as blocked

    m = tiny()
    text = " ".join([SENTENCE] * 6)
    full = m.forward(ids(m, text))
    on_first = np.zeros((m.n_layers, m.n_heads))
    rows_seen = np.zeros(m.n_layers, int)

    def watch(l, block):
        on_first[l] += block.values[:, :, 0 - block.lo].sum(axis=1) if block.lo == 0 else 0
        rows_seen[l] += block.values.shape[1]

    original = blocked.BLOCK_BYTES
    blocked.BLOCK_BYTES = 1 << 12  # many blocks of 16 rows
    try:
        m.forward(ids(m, text), keep=Keep((), watch={"attn.pattern": watch}))
    finally:
        blocked.BLOCK_BYTES = original
    assert list(rows_seen) == [len(ids(m, text))] * m.n_layers
    np.testing.assert_allclose(on_first, full.stacked("attn.pattern")[..., 0].sum(axis=2), rtol=1e-5)


def test_zeroing_a_pattern_head_leaves_its_values_zero_and_zeroing_them_again_changes_nothing():
    m = tiny()
    by_pattern = m.forward(ids(m), keep=Keep(("resid_final", "attn.z")), edits=[Zero("attn.pattern", 0, head=1)])
    assert np.abs(by_pattern.get("attn.z", 0)[:, 1]).max() == 0
    both = m.forward(ids(m), keep=Keep(("resid_final",)), edits=[Zero("attn.pattern", 0, head=1), Zero("attn.z", 0, head=1)])
    assert scale_error(both.get("resid_final"), by_pattern.get("resid_final")) < UNTOUCHED
    alone = m.forward(ids(m), keep=Keep(("resid_final",)), edits=[Zero("attn.z", 0, head=1)])
    assert scale_error(alone.get("resid_final"), by_pattern.get("resid_final")) < REORDERED


def test_a_batch_from_a_layer_equals_one_patched_pass_per_position():
    """Start(layer, resid [B, n, d]): the clean stream patched at position b in row b of the batch, all in one pass, against
    one pass per position (Patch at resid_pre of that layer)."""
    m = tiny()
    clean_ids = ids(m, "the cat sat on the mat")
    n = len(clean_ids)
    clean = m.forward(clean_ids)
    other = m.forward((ids(m, "the dog ran to the car") * n)[:n])
    resid = np.repeat(clean.get("resid_pre", 1)[None], n, axis=0)  # [B = n, n, d]
    resid[np.arange(n), np.arange(n)] = other.get("resid_pre", 1)
    batched = m.forward(clean_ids, start=Start(1, resid), keep=Keep(("resid_final", "attn.pattern"), heads=[2]))
    assert batched.get("resid_final").shape == (n, n, m.d_model)
    assert batched.get("attn.pattern", 1).shape == (n, 1, n, n)
    for p in range(n):
        one = m.forward(clean_ids, edits=[Patch("resid_pre", 1, positions=[p], value=other.get("resid_pre", 1))])
        assert scale_error(batched.get("resid_final")[p], one.get("resid_final")) < REORDERED
        np.testing.assert_allclose(batched.get("attn.pattern", 1)[p, 0], one.get("attn.pattern", 1)[2], atol=1e-4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_patching_a_position_changes_no_earlier_output(data):
    m = tiny()
    n = len(ids(m))
    p = data.draw(st.integers(0, n - 1), label="position")
    layer = data.draw(st.integers(0, m.n_layers - 1), label="layer")
    point = data.draw(st.sampled_from(["resid_pre", "attn.z", "resid_mid", "mlp_out"]), label="point")
    clean = m.forward(ids(m), keep=Keep(("resid_final", point)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    value = rng.normal(size=clean.get(point, layer).shape).astype(np.float32) * 3
    patched = m.forward(ids(m), keep=Keep(("resid_final",)), edits=[Patch(point, layer, positions=[p], value=value)])
    if p:
        np.testing.assert_allclose(patched.get("resid_final")[:p], clean.get("resid_final")[:p], atol=UNTOUCHED)
    assert scale_error(patched.get("resid_final")[p], clean.get("resid_final")[p]) > 1e-3, "the patch reaches its own position"


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["the cat sat", "a b c d e f", "dogs bark at night loudly"]))
def test_patching_every_position_of_layer_0_from_the_clean_run_gives_the_clean_run(corrupt_text):
    m = tiny()
    clean = m.forward(m.tokenize("the dog ran home fast"))
    corrupt = ids(m, corrupt_text)
    n = len(clean.tokens.ids)
    corrupt = (corrupt + corrupt * n)[:n]  # as many tokens as the clean text
    patched = m.forward(corrupt, edits=[Patch("resid_pre", 0, value=clean.get("resid_pre", 0))])
    assert scale_error(patched.get("resid_final"), clean.get("resid_final")) < UNTOUCHED
    for l in range(m.n_layers):
        np.testing.assert_allclose(patched.get("attn.pattern", l), clean.get("attn.pattern", l), atol=UNTOUCHED)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 3), st.integers(0, 1))
def test_zero_ablating_an_already_zero_head_changes_nothing(head, layer):
    m = tiny()
    once = m.forward(ids(m), keep=Keep(("resid_final", "attn.z")), edits=[Zero("attn.z", layer, head=head)])
    zeros = np.zeros_like(once.get("attn.z", layer))
    again = m.forward(ids(m), keep=Keep(("resid_final",)), edits=[Zero("attn.z", layer, head=head),
                                                                  Patch("attn.z", layer, head=head, value=zeros)])
    assert scale_error(again.get("resid_final"), once.get("resid_final")) < UNTOUCHED


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gemma3"])
def test_an_added_vector_moves_the_stream_it_is_added_to_and_a_patch_of_the_same_is_the_same_pass(name):
    m = tiny(name)
    ids = m.tokenize("the grey cat sat on the mat").ids
    vector = np.random.default_rng(0).standard_normal(m.d_model).astype(np.float32)
    keep = Keep(("resid_post", "resid_pre"))
    plain = m.forward(ids, keep=keep)
    added = m.forward(ids, keep=keep, edits=[Add("resid_post", 0, vector)])
    np.testing.assert_allclose(added.get("resid_pre", 1), plain.get("resid_post", 0) + vector, rtol=1e-6, atol=1e-6)
    patched = m.forward(ids, keep=keep, edits=[Patch("resid_post", 0, value=plain.get("resid_post", 0) + vector)])
    last = m.n_layers - 1
    np.testing.assert_allclose(added.get("resid_post", last), patched.get("resid_post", last), rtol=1e-5, atol=1e-5)
    assert float(np.abs(added.get("resid_post", last) - plain.get("resid_post", last)).max()) > 1e-3  # it changed the pass
    one = m.forward(ids, keep=keep, edits=[Add("resid_post", 0, vector, positions=[2])])
    moved = np.abs(one.get("resid_pre", 1) - plain.get("resid_post", 0)).max(axis=-1) > 0
    assert moved.tolist() == [i == 2 for i in range(len(ids))]


def test_edits_say_what_they_cannot_do():
    with pytest.raises(ValueError, match="no point"):
        Zero("attn.query", 0)
    with pytest.raises(ValueError, match="no head axis"):
        Zero("resid_pre", 0, head=1)
    with pytest.raises(ValueError, match="needs its layer"):
        Zero("attn.z", None)
    with pytest.raises(ValueError, match="Patch"):
        Mean("attn.pattern", 0, mean=np.zeros(3))
    with pytest.raises(ValueError, match="Patch"):
        Add("attn.scores", 0, np.zeros(3))


def test_a_text_past_the_context_is_refused_in_one_line():
    from attn_cli.errors import InputError

    m = tiny()
    kv = KVCache(m)
    kv.length = m.spec.max_positions - 2
    with pytest.raises(InputError, match="more than the 65,536 positions"):
        m.forward(ids(m, "one two three"), cache=kv)


# --- core.blocks.apply_linear ----------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2 * SHORT_ROWS + 8), st.integers(1, 48), st.integers(1, 48), st.booleans(), st.booleans(), st.integers(0, 2**16),
       st.sampled_from([0, 1, 2]))
def test_a_linear_map_is_x_w_plus_b_whichever_way_blas_is_asked(rows, d_in, d_out, bias, strided, seed, threads):
    """A sentence's rows on one thread go through (W^T x^T)^T, the rest through x W: either way x W + b in float32,
    C-ordered, to rounding."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 2 * d_in if strided else d_in)).astype(np.float32)[:, :: 2 if strided else 1]  # [rows, d_in]
    w = rng.normal(size=(d_in, d_out)).astype(np.float32)
    b = rng.normal(size=d_out).astype(np.float32) if bias else None
    out = apply_linear(x, w, b, threads)
    expected = x.astype(np.float64) @ w.astype(np.float64) + (0 if b is None else b)
    assert out.shape == (rows, d_out) and out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5 * math.sqrt(d_in))


# --- core.blocked -------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_attention_in_blocks_of_rows_equals_the_plain_attention(data):
    """Any block size, grouped heads, a cache offset, a sliding window, a soft-cap, causal or not."""
    h_kv = data.draw(st.integers(1, 3), label="h_kv")
    g = data.draw(st.integers(1, 3), label="group")
    n = data.draw(st.integers(1, 40), label="n")
    offset = data.draw(st.integers(0, 12), label="offset")
    causal = data.draw(st.booleans(), label="causal")
    window = data.draw(st.one_of(st.none(), st.integers(1, 20)), label="window") if causal else None
    cap = data.draw(st.one_of(st.none(), st.floats(1.0, 50.0)), label="cap")
    budget = data.draw(st.sampled_from([1, 1 << 10, 1 << 14, 1 << 22]), label="budget")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    d_k, d_v, t = 8, 6, offset + n
    q = rng.normal(size=(h_kv * g, n, d_k)).astype(np.float32) * 2
    k = rng.normal(size=(h_kv, t, d_k)).astype(np.float32) * 2
    v = rng.normal(size=(h_kv, t, d_v)).astype(np.float32)
    import attn_cli.core.blocked as blocked

    saved = blocked.MIN_BLOCK_ROWS
    blocked.MIN_BLOCK_ROWS = 1
    try:
        out = attend_rows(q, k, v, offset, root=math.sqrt(d_k), causal=causal, window=window, cap=cap,
                          keep=("attn.scores", "attn.pattern"), budget=budget)
    finally:
        blocked.MIN_BLOCK_ROWS = saved
    scores, pattern, z = plain_attention(q, k, v, offset, root=math.sqrt(d_k), causal=causal, window=window, cap=cap)
    np.testing.assert_allclose(out.kept["attn.pattern"], pattern, atol=1e-5)
    np.testing.assert_allclose(out.z, z, atol=1e-4)
    finite = np.isfinite(scores)
    assert_same_ids(np.isfinite(out.kept["attn.scores"]), finite)
    np.testing.assert_allclose(out.kept["attn.scores"][finite], scores[finite], rtol=1e-4, atol=1e-4)


@given(st.integers(0, 300), st.integers(1, 300), st.integers(0, 300), st.booleans(), st.one_of(st.none(), st.integers(1, 400)))
def test_a_kept_mask_is_the_mask_made_afresh(r0, b, offset, causal, window):
    """hidden() hands out masks made once for a block's shape and key offset: each equals ~visible() for those rows,
    small (kept) or past MASK_CELLS (made each time), and none can be written to."""
    from attn_cli.core.blocked import MASK_CELLS, hidden, key_span, visible

    t = offset + r0 + b + (0 if causal else 17)
    lo, hi = key_span(r0, r0 + b, offset, t, causal, window)
    fresh = visible(r0, r0 + b, lo, hi, offset, causal, window)
    for _ in range(2):  # the second time from the cache, where it fits
        kept = hidden(r0, r0 + b, lo, hi, offset, causal, window)
        assert (kept is None) == (fresh is None)
        if kept is not None:
            assert_same_ids(kept, ~fresh)
            assert not kept.flags.writeable or b * (hi - lo) > MASK_CELLS


def test_blocks_keep_only_the_rows_and_heads_asked_for():
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=s).astype(np.float32) for s in ((4, 50, 8), (2, 50, 8), (2, 50, 8)))
    whole = attend_rows(q, k, v, root=2.0, keep=("attn.pattern",))
    part = attend_rows(q, k, v, root=2.0, keep=("attn.pattern",), heads=[3, 1], rows=[49, 0, 20], budget=1 << 10)
    np.testing.assert_allclose(part.kept["attn.pattern"], whole.kept["attn.pattern"][[3, 1]][:, [49, 0, 20]], atol=1e-7)
    np.testing.assert_allclose(part.z, whole.z, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_sums_a_block_of_rows_at_a_time_give_the_detectors_scores(data):
    """analysis.blockwise against detect.pattern_scores over the whole matrices, for any split into blocks of rows."""
    from attn_cli.analysis import detect
    from attn_cli.analysis.blockwise import PatternSums

    n = data.draw(st.integers(2, 24), label="n")
    ids = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n), label="ids")
    special = data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="special")
    bos, current = data.draw(st.booleans(), label="exclude_bos"), data.draw(st.booleans(), label="exclude_current")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    weights = rng.random((2, 3, n, n)) * np.tri(n) ** 4
    weights /= weights.sum(axis=-1, keepdims=True)  # [L, H, n, n], causal rows summing to 1
    sums = PatternSums(2, 3, ids, special, detect.PATTERNS, bos, current, measures=True)
    cut = sorted(set(data.draw(st.lists(st.integers(1, n - 1), max_size=4), label="cuts")) | {0, n})
    for l in range(2):
        for r0, r1 in zip(cut, cut[1:]):
            lo = data.draw(st.integers(0, r0), label="lo")  # keys before lo hold no weight in these rows: give them none
            block = weights[l][:, r0:r1].copy()
            block[:, :, :lo] = 0
            weights[l][:, r0:r1, :lo] = 0
            sums.add(l, r0, lo, block[:, :, lo:r1])
    for name in detect.PATTERNS:
        pattern = detect.targets(name, ids, special)
        assert sums.scorable(name) == detect.scorable(pattern, bos, current)
        for error in ("mul", "abs"):
            np.testing.assert_allclose(sums.scores(name, error), detect.pattern_scores(weights, pattern, error, bos, current), atol=1e-12)


def close(a, b, tol: float = 1e-6) -> bool:
    """Two JSON documents alike: the same keys, lists and strings, numbers within `tol` of each other's scale."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(close(a[k], b[k], tol) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)):
        return abs(a - b) <= tol * max(1.0, abs(b))
    return a == b


@pytest.mark.parametrize("heads, focus, stage", [(["1.2"], None, None), (["0", "1.3"], "cat", "scores"), (["1.0"], "sat", "masked")])
def test_inspect_keeping_only_the_heads_shown_reports_what_keeping_everything_does(heads, focus, stage, monkeypatch):
    """The pass that keeps the heads shown and makes the rest by watchers (analysis.kept) against the pass that keeps every head."""
    import json

    from attn_cli.analysis import inspect as analysis
    from attn_cli.io.output import json_line

    m = tiny()
    settings = analysis.InspectSettings(heads=heads, focus=focus, stage=stage, neighbors=2)
    lean = json.loads(json_line(analysis.inspect(m, SENTENCE, settings).to_dict()))
    monkeypatch.setattr(analysis, "keeps_everything", lambda settings, n: True)
    whole = json.loads(json_line(analysis.inspect(m, SENTENCE, settings).to_dict()))
    assert close(lean, whole)


@pytest.mark.slow
def test_json_of_every_head_of_a_long_text_is_made_one_head_at_a_time(monkeypatch):
    """Past 512 tokens, JSON of every head remakes each head from its layer's input as it is written: the same numbers
    as the pass that keeps every head, and never two heads' [n, n] at once."""
    import json

    from attn_cli.analysis import inspect as analysis
    from attn_cli.analysis.kept import OneHeadAtATime
    from attn_cli.io import writers
    from attn_cli.io.output import json_line

    m = tiny()
    text = " ".join([SENTENCE] * 60)
    assert len(m.tokenize(text).ids) > 512
    settings = analysis.InspectSettings(neighbors=0, json=True)
    lean = analysis.inspect(m, text, settings)
    made = []
    original = OneHeadAtATime.weights
    monkeypatch.setattr(OneHeadAtATime, "weights", lambda self, l, h: (made.append((l, h)) if self.held[0] != (l, h) else None)
                        or original(self, l, h))
    streamed = json.loads("".join(writers_text(writers.document(lean))))
    assert made == [(l, h) for l in range(m.n_layers) for h in range(m.n_heads)], "each head made once, in the order written"
    monkeypatch.setattr(analysis, "keeps_everything", lambda settings, n: True)
    whole = json.loads(json_line(analysis.inspect(m, text, settings).to_dict()))
    assert close(streamed, whole)


def writers_text(document) -> list[str]:
    from attn_cli.io.output import _indented

    return list(_indented(document, "  ", "\n"))


THREADS = """
import json
from attn_cli.io import blas
library = blas._library()
if library is None:
    print(json.dumps(None))
else:
    seen = []
    for n in (10, 100, 64, 65):
        seen.append([blas.threads_for(n), library.get()])
    print(json.dumps({"default": library.default, "long": blas.long_default(), "seen": seen}))
"""


@pytest.mark.parametrize("chosen", [None, "1", "2"])
def test_a_short_pass_asks_for_one_blas_thread_and_a_long_one_for_the_default_unless_the_environment_chose(chosen):
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    if chosen:
        env["OPENBLAS_NUM_THREADS"] = chosen
    found = json.loads(subprocess.run([sys.executable, "-c", THREADS], capture_output=True, text=True, env=env, check=True).stdout)
    if found is None:
        pytest.skip("NumPy's BLAS here is not OpenBLAS")
    default, long = found["default"], found["long"]
    if chosen is None:  # the pass's number, and what OpenBLAS then uses: a long pass's, the cores idle at the start
        assert 1 <= long <= default
        assert found["seen"] == [[1, 1], [long, long], [1, 1], [long, long]]
    else:  # the environment's number, told to the pass, and OpenBLAS left as it is
        assert found["seen"] == [[int(chosen), default]] * 4 and default == int(chosen)


FAULTS_SCRIPT = """
import resource, sys
import attn_cli.io.heap as heap
from attn_cli.models import loading
from attn_cli.models.points import Keep
if sys.argv[2] == "off":
    heap._set = False  # as if reuse_heap had run and found no glibc: glibc's own thresholds stay
m = loading.load(sys.argv[1])
m.weights.hold(1 << 40)  # every layer dequantized once and kept, as from a model's second sentence on
ids = [(7 * i) % 500 + 3 for i in range(128)]
keep = Keep(("attn.pattern",))  # every layer's weights, [9, 128, 128] each: a pass after another reuses what the last one freed
m.forward(ids, keep=keep); m.forward(ids, keep=keep)  # the heap grows to what a pass needs
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
m.forward(ids, keep=keep); m.forward(ids, keep=keep)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 2)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc thresholds")
def test_a_pass_reuses_the_heap_rather_than_mapping_fresh_pages_every_layer():
    """SmolLM2's third and fourth passes over 128 tokens, keeping every layer's attention weights, find their arrays in the
    memory the pass before freed (30 kept [9, 128, 128] arrays, past glibc's first limit of 128 KiB): far fewer page faults
    than with glibc's own thresholds, measured the same way."""
    import subprocess

    faults = {}
    for mode in ("on", "off"):
        done = subprocess.run([sys.executable, "-c", FAULTS_SCRIPT, str(checkpoints.smollm2_gguf()), mode], capture_output=True,
                              text=True, env=os.environ | {"OPENBLAS_NUM_THREADS": "1"}, timeout=120, check=True)
        faults[mode] = int(done.stdout.split()[-1])
    assert faults["off"] > 200, faults  # the baseline this figure is read against: glibc maps and unmaps every large array
    assert faults["on"] * 10 < faults["off"], faults
