"""The attention math of `inspect`, against a plain-Python loop implementation and by its properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_cli.core.attention import Head, attention_weights, causal_mask, multi_head, run_head
from attn_cli.core.blocks import input_embeddings
from tests.exact import assert_same_ids


# --- an independent implementation: lists and loops, no NumPy -------------------------------


def matmul(a: list, b: list) -> list:
    return [[sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def loop_head(e: list, w_q: list, w_k: list, w_v: list, w_o: list | None, causal: bool, b_q: list | None = None,
              distance: tuple | None = None, sink: float | None = None):
    """weights[i][j] and delta[i] of one head, written out the long way (with a sink: one more key, scored
    `sink`, whose value is zero; its weights are returned third)."""
    q, k, v = matmul(e, w_q), matmul(e, w_k), matmul(e, w_v)
    d_k = len(w_q[0])
    n = len(e)
    if b_q is not None:
        q = [[x + b for x, b in zip(row, b_q)] for row in q]
    before, after, itself = distance or (0.0, 0.0, 0.0)
    weights, sunk = [], []
    for i in range(n):
        seen = [j for j in range(n) if not causal or j <= i]
        cost = {j: before * (i - j) if j < i else after * (j - i) if j > i else itself for j in seen}
        scaled = {j: sum(q[i][t] * k[j][t] for t in range(d_k)) / math.sqrt(d_k) - cost[j] for j in seen}
        if sink is not None:
            scaled["sink"] = sink
        top = max(scaled.values())
        exps = {j: math.exp(s - top) for j, s in scaled.items()}
        total = sum(exps.values())
        weights.append([exps[j] / total if j in exps else 0.0 for j in range(n)])
        sunk.append(exps["sink"] / total if sink is not None else None)
    delta = matmul(weights, v)  # the sink's value is zero: it adds nothing
    if w_o is not None:
        delta = matmul(delta, w_o)
    return (weights, delta, sunk) if sink is not None else (weights, delta)


def random_head(rng, d: int, d_k: int, d_v: int | None) -> Head:
    w_q, w_k = rng.normal(0, 1 / np.sqrt(d), (d, d_k)), rng.normal(0, 1 / np.sqrt(d), (d, d_k))
    if d_v is None:
        return Head("h", w_q, w_k, rng.normal(0, 1 / np.sqrt(d), (d, d)))
    return Head("h", w_q, w_k, rng.normal(0, 1 / np.sqrt(d), (d, d_v)), rng.normal(0, 1 / np.sqrt(d_v), (d_v, d)))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("d_v", [None, 3])
@pytest.mark.parametrize("seed", range(4))
def test_run_head_matches_the_loop_implementation(seed, d_v, causal):
    rng = np.random.default_rng(seed)
    n, d, d_k = 6, 8, 4
    e = rng.normal(0, 2, (n, d))
    head = random_head(rng, d, d_k, d_v)
    out = run_head(e, head, causal_mask(n) if causal else None)
    weights, delta = loop_head(e.tolist(), head.w_q.tolist(), head.w_k.tolist(), head.w_v.tolist(),
                               None if head.w_o is None else head.w_o.tolist(), causal)
    np.testing.assert_allclose(out.weights, weights, atol=1e-6)
    np.testing.assert_allclose(out.delta, delta, atol=1e-6)
    assert out.delta.shape == (n, d)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("seed", range(3))
def test_query_bias_and_distance_slopes_match_the_loop(seed, dtype, causal):
    """Q = E W_Q + b_Q, and ALiBi: a key |i - j| tokens away loses slope * |i - j| (its own slope before and after),
    the query itself a fixed cost."""
    rng = np.random.default_rng(seed)
    n, d, d_k = 7, 6, 3
    e = rng.normal(0, 2, (n, d))
    head = random_head(rng, d, d_k, None)
    head.b_q, head.distance = rng.normal(0, 1, d_k), rng.uniform(0, 2, 3)
    out = run_head(e.astype(dtype), head, causal_mask(n) if causal else None)
    weights, delta = loop_head(e.tolist(), head.w_q.tolist(), head.w_k.tolist(), head.w_v.tolist(), None, causal,
                               head.b_q.tolist(), tuple(head.distance))
    tolerance = 1e-5 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(out.weights, weights, atol=tolerance)
    np.testing.assert_allclose(out.delta, delta, atol=100 * tolerance)
    plain = run_head(e, Head("h", head.w_q, head.w_k, head.w_v), None)
    np.testing.assert_allclose(out.scores, (e @ head.w_q + head.b_q) @ (e @ head.w_k).T, rtol=1e-12, atol=1e-12) if dtype == np.float64 else None
    assert not np.allclose(out.weights, plain.weights)  # both additions change what the head does


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sink", [-3.0, 0.4, 6.0])
def test_a_sink_is_a_key_that_writes_nothing_as_in_the_loop(sink, dtype, causal):
    """The sink: one more key every query sees, with its own score and a zero value; weights on the tokens
    and on the sink sum to 1, and Delta E is the tokens' part alone."""
    rng = np.random.default_rng(int(sink * 10) % 7)
    n, d, d_k = 7, 6, 2
    e = rng.normal(0, 2, (n, d))
    head = random_head(rng, d, d_k, None)
    head.distance, head.sink = np.array([0.3, 0.9, 2.0]), sink
    out = run_head(e.astype(dtype), head, causal_mask(n) if causal else None)
    weights, delta, sunk = loop_head(e.tolist(), head.w_q.tolist(), head.w_k.tolist(), head.w_v.tolist(), None, causal,
                                     None, tuple(head.distance), sink)
    tolerance = 1e-5 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(out.weights, weights, atol=tolerance)
    np.testing.assert_allclose(out.sink, sunk, atol=tolerance)
    np.testing.assert_allclose(out.delta, delta, atol=100 * tolerance)
    np.testing.assert_allclose(out.weights.sum(axis=1) + out.sink, 1.0, atol=tolerance)
    np.testing.assert_allclose(out.delta_self + out.delta_context, out.delta, atol=100 * tolerance)
    masked, alone = attention_weights(out.scores, d_k, causal_mask(n) if causal else None, distance=head.distance, sink=sink)
    np.testing.assert_allclose(alone, out.weights, atol=tolerance)  # the single-matrix route agrees


def test_a_sink_out_of_reach_changes_nothing_and_a_stack_mixes_heads_with_and_without():
    rng = np.random.default_rng(4)
    e = rng.normal(0, 2, (8, 6))
    plain, sunk = random_head(rng, 6, 3, None), random_head(rng, 6, 3, None)
    sunk.sink = -1e4  # never wins any weight
    outs, *_ = multi_head(e, [plain, sunk], causal_mask(8))
    assert outs[0].sink is None and outs[1].sink is not None
    np.testing.assert_allclose(outs[0].weights, run_head(e, plain, causal_mask(8)).weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(outs[1].weights, run_head(e, Head("h", sunk.w_q, sunk.w_k, sunk.w_v), causal_mask(8)).weights, atol=1e-12)
    np.testing.assert_allclose(outs[1].sink, 0.0, rtol=0, atol=1e-12)
    sunk.sink = 1e4  # takes all the weight: nothing is written
    out = run_head(e, sunk, causal_mask(8))
    np.testing.assert_allclose(out.sink, 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out.delta, 0.0, rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.floats(-20, 20), st.booleans(), st.integers(0, 2**16))
def test_weights_and_sink_always_sum_to_one(n, sink, causal, seed):
    rng = np.random.default_rng(seed)
    e = rng.normal(0, 3, (n, 5))
    head = random_head(rng, 5, 2, None)
    head.sink = sink
    out = run_head(e, head, causal_mask(n) if causal else None)
    assert np.all(out.weights >= 0) and np.all((out.sink >= 0) & (out.sink <= 1))
    np.testing.assert_allclose(out.weights.sum(axis=1) + out.sink, 1.0, atol=1e-12)


def test_a_stack_mixes_heads_with_and_without_slopes():
    rng = np.random.default_rng(9)
    e = rng.normal(0, 2, (9, 6))
    plain, sloped = random_head(rng, 6, 3, None), random_head(rng, 6, 3, None)
    sloped.distance = np.array([0.7, 2.0, 1.5])
    outs, *_ = multi_head(e, [plain, sloped], None)
    np.testing.assert_allclose(outs[0].weights, run_head(e, plain, None).weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(outs[1].weights, run_head(e, sloped, None).weights, rtol=0, atol=1e-12)
    flat = run_head(e, Head("h", sloped.w_q, sloped.w_k, sloped.w_v), None).weights  # the same head without slopes
    ratio = outs[1].weights[8, 0] / outs[1].weights[8, 7]  # a key 8 back against the one right before
    assert ratio == pytest.approx(flat[8, 0] / flat[8, 7] * math.exp(-0.7 * 7), rel=1e-9)


@pytest.mark.parametrize("causal", [True, False])
def test_multi_head_sums_the_heads_updates(causal):
    rng = np.random.default_rng(7)
    n, d = 5, 6
    e = rng.normal(0, 2, (n, d))
    heads = [random_head(rng, d, 2, None), random_head(rng, d, 3, 2)]
    outs, delta, e_prime = multi_head(e, heads, causal_mask(n) if causal else None)
    expected = np.zeros((n, d))
    for head in heads:
        _, head_delta = loop_head(e.tolist(), head.w_q.tolist(), head.w_k.tolist(), head.w_v.tolist(),
                                  None if head.w_o is None else head.w_o.tolist(), causal)
        expected += np.array(head_delta)
    np.testing.assert_allclose(delta, expected, atol=1e-6)
    np.testing.assert_allclose(e_prime, e + expected, atol=1e-6)
    assert len(outs) == 2


def test_the_scores_stages_are_raw_then_scaled_and_masked():
    rng = np.random.default_rng(1)
    e = rng.normal(0, 1, (4, 6))
    head = random_head(rng, 6, 3, None)
    out = run_head(e, head, causal_mask(4))
    raw = (e @ head.w_q) @ (e @ head.w_k).T
    np.testing.assert_allclose(out.scores, raw)
    assert np.all(np.isneginf(out.masked[np.triu_indices(4, 1)]))
    np.testing.assert_allclose(np.tril(out.masked), np.tril(raw / np.sqrt(3)))


def test_a_fully_masked_row_takes_nothing_and_never_gives_nan():
    """Defined behaviour: a query that may see no key gets all-zero weights and Delta E = 0."""
    rng = np.random.default_rng(2)
    e = rng.normal(0, 1, (4, 5))
    head = random_head(rng, 5, 2, None)
    mask = causal_mask(4)
    mask[2] = False  # token 2 may see nothing, not even itself
    out = run_head(e, head, mask)
    assert not np.isnan(out.weights).any() and not np.isnan(out.delta).any()
    assert np.all(out.weights[2] == 0.0)
    assert np.all(out.delta[2] == 0.0)
    np.testing.assert_allclose(out.weights.sum(axis=1)[[0, 1, 3]], 1.0)


# --- properties --------------------------------------------------------------------------------

sizes = st.tuples(st.integers(1, 9), st.integers(2, 8), st.integers(1, 5))  # n, d, d_k
seeds = st.integers(0, 2**32 - 1)
scales = st.sampled_from([0.1, 1.0, 5.0, 30.0])  # up to scores far past exp's range


def sample(n: int, d: int, d_k: int, seed: int, scale: float):
    rng = np.random.default_rng(seed)
    return rng.normal(0, scale, (n, d)), random_head(rng, d, d_k, None if seed % 2 else max(1, d_k - 1))


@settings(max_examples=80, deadline=None)
@given(sizes, seeds, scales, st.booleans())
def test_every_row_sums_to_one_and_masked_weights_are_exactly_zero(shape, seed, scale, causal):
    e, head = sample(*shape, seed, scale)
    n = e.shape[0]
    out = run_head(e, head, causal_mask(n) if causal else None)
    np.testing.assert_allclose(out.weights.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(out.weights >= 0)
    if causal:
        assert np.all(out.weights[np.triu_indices(n, 1)] == 0.0)


@settings(max_examples=60, deadline=None)
@given(sizes, seeds, st.integers(1, 5), st.booleans())
def test_causal_prefix_invariance(shape, seed, extra, position):
    """Appending tokens changes nothing for the earlier positions under the causal mask."""
    n, d, d_k = shape
    words, head = sample(n + extra, d, d_k, seed, 1.0)
    full_e, short_e = input_embeddings(words, position), input_embeddings(words[:n], position)
    full, _, full_prime = multi_head(full_e, [head], causal_mask(n + extra))
    short, _, short_prime = multi_head(short_e, [head], causal_mask(n))
    np.testing.assert_allclose(full[0].weights[:n, :n], short[0].weights, atol=1e-12)
    np.testing.assert_allclose(full_prime[:n], short_prime, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(sizes, seeds, st.randoms(use_true_random=False))
def test_without_mask_or_position_permuting_tokens_permutes_the_output(shape, seed, shuffler):
    words, head = sample(*shape, seed, 1.0)
    n = words.shape[0]
    order = list(range(n))
    shuffler.shuffle(order)
    e = input_embeddings(words, position=False)
    outs, _, e_prime = multi_head(e, [head], None)
    p_outs, _, p_prime = multi_head(e[order], [head], None)
    np.testing.assert_allclose(p_outs[0].weights, outs[0].weights[np.ix_(order, order)], atol=1e-12)
    np.testing.assert_allclose(p_prime, e_prime[order], atol=1e-10)


# --- Delta E split into the self part and the context part ---------------------------------------


def loop_parts(weights: list, v: list, w_o: list | None):
    """self_i = w_ii v_i and context_i = sum_{j != i} w_ij v_j (each then W_O), written out the long way."""
    n, d_v = len(v), len(v[0])
    own = [[weights[i][i] * v[i][t] for t in range(d_v)] for i in range(n)]
    context = [[sum(weights[i][j] * v[j][t] for j in range(n) if j != i) for t in range(d_v)] for i in range(n)]
    if w_o is not None:
        own, context = matmul(own, w_o), matmul(context, w_o)
    return own, context


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("d_v", [None, 3])
@pytest.mark.parametrize("seed", range(3))
def test_self_and_context_parts_match_the_loop_and_add_up_to_delta(seed, d_v, causal):
    rng = np.random.default_rng(seed)
    n, d = 6, 8
    e = rng.normal(0, 2, (n, d))
    head = random_head(rng, d, 4, d_v)
    out = run_head(e, head, causal_mask(n) if causal else None)
    v = (e @ head.w_v).tolist()
    own, context = loop_parts(out.weights.tolist(), v, None if head.w_o is None else head.w_o.tolist())
    np.testing.assert_allclose(out.delta_self, own, atol=1e-12)
    np.testing.assert_allclose(out.delta_context, context, atol=1e-12)
    np.testing.assert_allclose(out.delta_self + out.delta_context, out.delta, rtol=0, atol=1e-13)
    if causal:
        assert np.all(out.delta_context[0] == 0.0)  # the first token sees only itself: nothing from context


@pytest.mark.parametrize("causal", [True, False])
def test_multi_head_parts_are_sums_over_heads(causal):
    rng = np.random.default_rng(11)
    n, d = 5, 6
    e = rng.normal(0, 2, (n, d))
    heads = [random_head(rng, d, 2, None), random_head(rng, d, 3, 2), random_head(rng, d, 4, None)]
    outs, delta, e_prime, own, context = multi_head(e, heads, causal_mask(n) if causal else None, parts=True)
    np.testing.assert_allclose(own, sum(o.delta_self for o in outs), atol=1e-13)
    np.testing.assert_allclose(context, sum(o.delta_context for o in outs), atol=1e-13)
    np.testing.assert_allclose(own + context, delta, atol=1e-12)
    plain = multi_head(e, heads, causal_mask(n) if causal else None)  # the old three-value form still works
    assert len(plain) == 3
    np.testing.assert_allclose(plain[1], delta, rtol=0, atol=1e-12)
    np.testing.assert_allclose(plain[2], e_prime, rtol=0, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(sizes, seeds, scales, st.booleans(), st.booleans())
def test_context_and_self_parts_always_sum_to_delta(shape, seed, scale, causal, scaled):
    e, head = sample(*shape, seed, scale)
    n = e.shape[0]
    out = run_head(e, head, causal_mask(n) if causal else None, scale=scaled)
    size = max(1.0, float(np.abs(out.delta).max()))
    np.testing.assert_allclose(out.delta_self + out.delta_context, out.delta, rtol=0, atol=1e-12 * size)
    v = e @ head.w_v
    own = np.diag(out.weights)[:, None] * v  # [n, d_v]
    np.testing.assert_allclose(out.delta_self, own if head.w_o is None else own @ head.w_o, atol=1e-12 * size)


# --- scaling by sqrt(d_k) ------------------------------------------------------------------------


def test_no_scale_feeds_the_raw_scores_to_softmax():
    rng = np.random.default_rng(4)
    e = rng.normal(0, 1, (5, 6))
    head = random_head(rng, 6, 3, None)
    out = run_head(e, head, causal_mask(5), scale=False)
    raw = (e @ head.w_q) @ (e @ head.w_k).T
    np.testing.assert_allclose(np.tril(out.masked), np.tril(raw))
    expected = np.exp(np.where(causal_mask(5), raw, -np.inf) - np.tril(raw).max(axis=1, keepdims=True))
    np.testing.assert_allclose(out.weights, expected / expected.sum(axis=1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(run_head(e, head, causal_mask(5)).scores, out.scores, rtol=1e-12, atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-30, 30), min_size=1, max_size=12), st.floats(-1e3, 1e3))
def test_adding_a_constant_to_a_row_of_scores_changes_nothing(row, shift):
    """What inspect says beside raw scores: softmax sees only differences within a row."""
    from attn_cli.core.softmax import softmax

    x = np.array(row)
    np.testing.assert_allclose(softmax(x + shift), softmax(x), atol=1e-9)


def test_removing_the_scaling_sharpens_more_at_large_d_k(glove):
    """Q.K sums d_k products, so its spread grows like sqrt(d_k); dividing by sqrt(d_k) undoes that.
    Without it, the random head at d_k = 256 turns far more peaked than at d_k = 16."""
    from attn_cli.heads.registry import random_head as model_head
    from attn_cli.vectors.tokens import tokenize

    sentences = ["a fluffy blue creature roamed the verdant forest .", "one mole of carbon dioxide ."]
    sharpening, spread = {16: [], 256: []}, {16: [], 256: []}
    for sentence in sentences:
        e = input_embeddings(np.array([glove.get_vector(t) for t in tokenize(sentence)]))
        for seed in range(3):
            for d_k in (16, 256):
                head = model_head(50, seed, d_k)
                scaled, unscaled = run_head(e, head, None), run_head(e, head, None, scale=False)
                top = lambda out: np.max(out.weights, axis=1).mean()  # noqa: E731
                sharpening[d_k].append(top(unscaled) - top(scaled))
                spread[d_k].append((np.std(unscaled.masked), np.std(scaled.masked)))
    for small, large in zip(sharpening[16], sharpening[256]):
        assert large > small > 0
    raw_ratio = np.mean([s[0] for s in spread[256]]) / np.mean([s[0] for s in spread[16]])
    scaled_ratio = np.mean([s[1] for s in spread[256]]) / np.mean([s[1] for s in spread[16]])
    assert 2.5 < raw_ratio < 6.5  # about sqrt(256 / 16) = 4
    assert 0.6 < scaled_ratio < 1.6  # about 1: the scaling keeps the spread of the scores


# --- float32, row blocks, stacked heads ------------------------------------------------------------
# attention runs in E's precision: float32 E stays float32 (as a model runs), float64 E (training,
# the tests above) stays float64. Rows are processed in blocks that skip the keys a whole block may
# not see; the constants are made tiny below so that a few tokens already take many blocks.

from contextlib import contextmanager  # noqa: E402
import mmap  # noqa: E402

from attn_cli.core import attention  # noqa: E402
from attn_cli.core.attention import row_spans, run_heads, zero_matrices
from attn_cli.core.softmax import softmax  # noqa: E402


@contextmanager
def small_blocks():
    """One query row per block and two rows per product with V: every block boundary is exercised."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(attention, "ROW_BLOCK_BYTES", 1)
        patch.setattr(attention, "VALUE_BLOCK_ROWS", 2)
        yield


def random_mask(rng, n: int, kind: str) -> np.ndarray:  # [n, n] bool
    if kind == "causal":
        return causal_mask(n)
    if kind == "holes":  # causal with keys missing here and there, and a query that sees nothing
        mask = causal_mask(n) & (rng.random((n, n)) < 0.7)
        mask[rng.integers(n)] = False
        return mask
    return rng.random((n, n)) < 0.5  # any pattern: keys after a hidden one, rows that see nothing


def plain_head(e, head, mask):
    """weights, masked and Delta E of one head, the direct way in float64 (whole matrices, np.where, softmax)."""
    e = np.asarray(e, np.float64)
    q, k, v = e @ head.w_q, e @ head.w_k, e @ head.w_v
    masked = (q @ k.T) / np.sqrt(head.d_k)
    if mask is not None:
        masked = np.where(mask, masked, -np.inf)
    weights = softmax(masked)
    delta = weights @ v
    return weights, masked, delta if head.w_o is None else delta @ head.w_o


@pytest.mark.parametrize("kind", ["causal", "holes", "any", None])
@pytest.mark.parametrize("d_v", [None, 3])
@pytest.mark.parametrize("seed", range(3))
def test_float32_stays_float32_and_agrees_with_the_float64_loop(seed, d_v, kind):
    rng = np.random.default_rng(seed)
    n, d = 11, 8
    e = rng.normal(0, 2, (n, d))
    head = random_head(rng, d, 4, d_v)
    mask = None if kind is None else random_mask(rng, n, kind)
    out = run_head(e.astype(np.float32), head, mask)
    for a in (out.scores, out.masked, out.weights, out.delta, out.delta_self, out.delta_context):
        assert a.dtype == np.float32
    weights, masked, delta = plain_head(e.astype(np.float32), head, mask)  # float64 from the same float32 E
    np.testing.assert_allclose(out.weights, weights, rtol=0, atol=1e-5)
    np.testing.assert_allclose(out.delta, delta, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.delta_self + out.delta_context, out.delta, rtol=0, atol=1e-5)
    assert_same_ids(np.isneginf(out.masked), np.isneginf(masked))
    if kind == "causal":  # the float64 loop of the first tests, from the float32 E
        loop, _ = loop_head(e.astype(np.float32).tolist(), head.w_q.tolist(), head.w_k.tolist(), head.w_v.tolist(),
                            None if head.w_o is None else head.w_o.tolist(), True)
        np.testing.assert_allclose(out.weights, loop, rtol=0, atol=1e-5)


masks = st.sampled_from(["causal", "holes", "any", None])


@settings(max_examples=80, deadline=None)
@given(sizes, seeds, scales, masks)
def test_float32_rows_sum_to_one_and_masked_weights_are_exactly_zero(shape, seed, scale, kind):
    e, head = sample(*shape, seed, scale)
    n = e.shape[0]
    mask = None if kind is None else random_mask(np.random.default_rng(seed), n, kind)
    with small_blocks():
        out = run_head(e.astype(np.float32), head, mask)
    assert out.weights.dtype == np.float32 and np.all(out.weights >= 0)
    sees = np.ones(n, bool) if mask is None else mask.any(axis=1)  # a query that sees no key takes nothing
    np.testing.assert_allclose(out.weights.sum(axis=1, dtype=np.float64)[sees], 1.0, rtol=0, atol=1e-6)
    assert np.all(out.weights[~sees] == 0.0)
    if mask is not None:
        assert np.all(out.weights[~mask] == 0.0) and np.all(np.isneginf(out.masked[~mask]))


@settings(max_examples=80, deadline=None)
@given(sizes, seeds, scales, masks, st.booleans())
def test_row_blocks_give_what_whole_matrices_give(shape, seed, scale, kind, scaled):
    """Blocks of one row, keys skipped per block, V in blocks of two rows: the same numbers as the plain way (float64)."""
    e, head = sample(*shape, seed, scale)
    mask = None if kind is None else random_mask(np.random.default_rng(seed), e.shape[0], kind)
    with small_blocks():
        out = run_head(e, head, mask, scale=scaled)
        masked, weights = attention_weights(out.scores, head.d_k, mask, scale=scaled)
    whole = run_head(e, head, mask, scale=scaled)  # a few tokens: one block
    reference = np.where(mask, out.scores, -np.inf) if mask is not None else out.scores
    reference = reference / np.sqrt(head.d_k) if scaled else reference
    np.testing.assert_allclose(out.masked, reference, rtol=1e-14, atol=0)  # -inf where masked, in both
    np.testing.assert_allclose(masked, out.masked, rtol=1e-14, atol=0)
    np.testing.assert_allclose(weights, out.weights, rtol=0, atol=1e-14)
    np.testing.assert_allclose(out.weights, softmax(reference), rtol=0, atol=1e-12)
    np.testing.assert_allclose(out.weights, whole.weights, rtol=0, atol=1e-12)
    size = max(1.0, float(np.abs(whole.delta).max()))
    np.testing.assert_allclose(out.delta, whole.delta, rtol=0, atol=1e-12 * size)
    np.testing.assert_allclose(out.delta_context, whole.delta_context, rtol=0, atol=1e-12 * size)


def test_row_spans_mark_what_each_block_sees():
    mask = causal_mask(10)
    assert row_spans(mask, 10, 10, 4) == [(0, 4, 1, 4), (4, 8, 5, 8), (8, 10, 9, 10)]  # the diagonal tile [lo, hi) only
    assert row_spans(None, 10, 10, 4) == [(0, 4, 10, 10), (4, 8, 10, 10), (8, 10, 10, 10)]  # every key, no mask to apply
    assert row_spans(mask, 10, 10, 10) == [(0, 10, 0, 10)]  # one block: masked as a whole
    mask[1, 9] = True  # query 1 sees the last key, past keys it may not see
    assert row_spans(mask, 10, 10, 4)[0] == (0, 4, 1, 10)
    mask[:4] = False  # no query of the first block sees anything
    assert row_spans(mask, 10, 10, 4)[0] == (0, 4, 0, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [True, False])
def test_heads_of_one_shape_run_as_a_stack_with_the_same_results(dtype, causal):
    rng = np.random.default_rng(5)
    n, d = 9, 6
    e = rng.normal(0, 2, (n, d)).astype(dtype)
    heads = [random_head(rng, d, 3, None), random_head(rng, d, 2, None), random_head(rng, d, 3, None), random_head(rng, d, 3, 2)]
    mask = causal_mask(n) if causal else None
    outs, delta, e_prime, own, context = multi_head(e, heads, mask, parts=True)
    tolerance = 1e-12 if dtype == np.float64 else 1e-5
    for head, out in zip(heads, outs):  # in the order given, though heads 0 and 2 ran together
        alone = run_head(e, head, mask)
        for a, b in ((out.weights, alone.weights), (out.delta, alone.delta), (out.delta_self, alone.delta_self)):
            np.testing.assert_allclose(a, b, rtol=0, atol=tolerance)
    np.testing.assert_allclose(delta, sum(o.delta for o in outs), rtol=0, atol=tolerance)
    assert delta.dtype == e_prime.dtype == own.dtype == context.dtype == dtype
    with pytest.raises(ValueError, match="same shapes"):
        run_heads(e, heads[:2], mask)


@pytest.mark.floats  # the same arithmetic over values in other memory
def test_large_results_come_from_huge_pages_and_hold_the_same_numbers():
    """From 1 MiB up the [n, n] results are an anonymous mapping (2 MiB pages on Linux); elsewhere np.zeros."""
    big = zero_matrices((3, 1, 300, 300), np.float32)  # 1.08 MB
    assert big.shape == (3, 1, 300, 300) and big.dtype == np.float32 and big.flags.writeable and not big.any()
    rng = np.random.default_rng(3)
    e = rng.normal(0, 1, (300, 8)).astype(np.float32)
    head = random_head(rng, 8, 4, None)
    mapped = run_head(e, head, causal_mask(300))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(attention, "HUGE_PAGE", 1 << 40)  # never: np.zeros
        plain = run_head(e, head, causal_mask(300))
    def owner(a):  # what holds the memory of an array: the base of its bases
        while isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        return a.obj if isinstance(a, memoryview) else a

    assert isinstance(owner(mapped.weights), mmap.mmap) == hasattr(mmap, "MADV_HUGEPAGE")
    assert isinstance(owner(plain.weights), np.ndarray)
    for a, b in ((mapped.scores, plain.scores), (mapped.masked, plain.masked), (mapped.weights, plain.weights), (mapped.delta, plain.delta)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)  # float32 results, in other memory
