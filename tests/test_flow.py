"""Value-weighted attention (inspect --weigh norm) and attention rollout (--rollout), against explicit loops, for the
lesson's heads and for every checkpoint family (BERT, GPT-2, grouped-query Llama, Qwen2 with value biases, a GGUF file)."""

import json
from functools import cache

import numpy as np
import pytest

from attn_cli.analysis import flow
from attn_cli.analysis.inspect import InspectSettings, inspect
from attn_cli.models import loading
from tests import checkpoints

SENTENCE = "A fluffy blue creature roamed the verdant forest."
MODELS = {
    "minilm": lambda: checkpoints.minilm_folder(), "tiny-gpt2": checkpoints.tiny_gpt2_folder, "tiny-llama": checkpoints.tiny_llama_folder,
    "tiny-qwen2": checkpoints.tiny_qwen2_folder, "tiny-llama.Q8_0": lambda: checkpoints.gguf_fixture("tiny-llama", "Q8_0"),
}


@cache
def model(name: str):
    return loading.load(str(MODELS[name]()))


def loop_norms(weights, x, w_qkv, b_qkv, w_o, n_heads: int, n_kv: int, d_head: int) -> np.ndarray:  # -> [h, n, n]
    """||alpha_ij f(x_j)||, f(x_j) = (x_j W_V + b_V) W_O^h, one query head, query and key at a time, in float64."""
    n = len(x)
    out = np.zeros((n_heads, n, n))
    for h in range(n_heads):
        kv = h // (n_heads // n_kv)
        columns = slice((n_heads + n_kv + kv) * d_head, (n_heads + n_kv + kv + 1) * d_head)
        rows = slice(h * d_head, (h + 1) * d_head)
        for j in range(n):
            value = x[j].astype(np.float64) @ w_qkv[:, columns].astype(np.float64) + (0 if b_qkv is None else b_qkv[columns])
            f = value @ w_o[rows].astype(np.float64)
            for i in range(n):
                out[h, i, j] = np.sqrt(sum(c * c for c in (weights[h, i, j] * f).tolist()))
    return out


def layer_inputs(m, trace, l: int) -> np.ndarray:
    """What layer l's attention reads: the stream, after the layer's norm in a pre-norm model."""
    x, w = trace.streams()[l], m.weights.layer(l)
    return m.norm(x, w, "attn.norm", l) if m.spec.pre_norm else x


@pytest.mark.parametrize("name", list(MODELS))
def test_value_norms_of_every_family_match_an_explicit_loop(name):
    m = model(name)
    trace = m.forward(m.tokenize("the cat sat on the mat"), keep_values=True)
    got = flow.layer_value_norms(m, trace)  # [L, H, n, n]
    spec = m.spec
    for l in range(spec.n_layers):
        w = m.weights.layer(l)
        want = loop_norms(trace.get("attn.pattern", l), layer_inputs(m, trace, l), w["attn.qkv.w"], w.get("attn.qkv.b"), w["attn.o.w"],
                          spec.n_heads, spec.n_kv_heads, spec.d_head)
        assert np.allclose(got[l], want, rtol=1e-4, atol=1e-5), (name, l, np.abs(got[l] - want).max())


def test_value_norms_of_the_lessons_heads_match_an_explicit_loop(glove):
    from attn_cli.heads.registry import resolve_heads
    from attn_cli.models.glove import GloveModel

    heads, _ = resolve_heads(None, glove.vector_size, 0)
    m = GloveModel(glove, heads)
    trace = m.forward(m.tokenize(SENTENCE), keep_values=True)
    got = flow.layer_value_norms(m, trace)[0]
    e = trace.streams()[0]
    for h, head in enumerate(heads):
        for i in range(len(e)):
            for j in range(len(e)):
                f = e[j] @ head.w_v if head.w_o is None else e[j] @ head.w_v @ head.w_o
                assert got[h, i, j] == pytest.approx(np.linalg.norm(trace.get("attn.pattern", 0)[h, i, j] * f), rel=1e-9, abs=1e-12)


def test_values_are_kept_only_when_asked():
    m = model("minilm")
    trace = m.run("the cat")
    assert not any(trace.has("v", l) for l in range(trace.n_layers))


def loop_rollout(weights: np.ndarray) -> np.ndarray:  # [L, H, n, n] -> [n, n]
    L, H, n, _ = weights.shape
    rolled = np.eye(n)
    for l in range(L):
        mixed = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                mixed[i, j] = 0.5 * sum(weights[l, h, i, j] for h in range(H)) / H + 0.5 * (i == j)
            mixed[i] /= mixed[i].sum()
        rolled = np.array([[sum(mixed[i, k] * rolled[k, j] for k in range(n)) for j in range(n)] for i in range(n)])
    return rolled


@pytest.mark.parametrize("name", ["minilm", "tiny-llama"])
def test_rollout_of_an_encoder_and_a_decoder_matches_a_plain_loop(name):
    m = model(name)
    weights = m.run("the cat sat on the mat").stacked("attn.pattern").astype(np.float64)
    got = flow.rollout(weights)
    assert np.allclose(got[-1], loop_rollout(weights), atol=1e-12) and np.allclose(got.sum(axis=-1), 1.0)
    if m.causal:
        assert (np.triu(got[-1], 1) == 0).all()


def test_the_special_tokens_share_of_weight_and_of_value_weighted_norm():
    m = model("minilm")
    result = inspect(m, SENTENCE, InspectSettings(weigh="norm"))
    trace = m.forward(m.tokenize(SENTENCE), keep_values=True)
    weights = trace.stacked("attn.pattern").astype(np.float64)
    norms = flow.layer_value_norms(m, trace)
    special = [0, len(trace.tokens.ids) - 1]  # [CLS], [SEP]
    before = sum(weights[l, h, i, j] for l, h, i, j in np.ndindex(weights.shape) if j in special) / weights.sum()
    after = sum(norms[l, h, i, j] for l, h, i, j in np.ndindex(norms.shape) if j in special) / norms.sum()
    assert result.special_shares == pytest.approx((before, after), rel=1e-9)
    assert after < before / 2  # Kobayashi et al.: little of BERT's weight on [CLS] and [SEP] moves anything


def test_inspect_weigh_norm_in_json_csv_and_on_screen(run):
    args = ("inspect", "the cat sat", "--model", checkpoints.minilm_folder(), "--weigh", "norm")
    doc = json.loads(run(*args, "--json").stdout)
    m = model("minilm")
    trace = m.forward(m.tokenize("the cat sat"), keep_values=True)
    norms = flow.layer_value_norms(m, trace)
    assert np.allclose(doc["heads"][13]["value_norms"], norms[1, 1], rtol=1e-5) and doc["heads"][13]["name"] == "1.1"
    assert set(doc["special_shares"]) == {"weight", "value_norm"}
    rows = run(*args, "--head", "0.2", "--csv").stdout.splitlines()
    assert rows[0].endswith(",weight,value_norm") and len(rows) == 1 + 25
    screen = run(*args, "--head", "0.2").stdout
    assert "--weigh norm: cells are ‖α_ij f(x_j)‖ = α_ij × ‖key j's value through W_V, W_O‖\n" in screen and "special tokens: " in screen and "· norms" in screen


def test_inspect_weigh_norm_of_the_lessons_heads(run):
    doc = json.loads(run("inspect", "the cat sat", "--head", "adjective", "--weigh", "norm", "--json").stdout)
    norms = doc["heads"][0]["value_norms"]
    assert norms[0][1] is None and norms[0][0] > 0  # causal: null where masked


def test_inspect_rollout_in_json_and_on_screen(run):
    args = ("inspect", "the cat sat", "--model", checkpoints.minilm_folder(), "--rollout")
    doc = json.loads(run(*args, "--json").stdout)
    m = model("minilm")
    weights = m.run("the cat sat").stacked("attn.pattern").astype(np.float64)
    assert np.allclose(doc["rollout"], loop_rollout(weights), atol=1e-6)
    words = json.loads(run(*args, "--words", "--hide-special", "--json").stdout)
    assert np.array(words["rollout"]).shape == (3, 3)
    assert "attention rollout through 6 layers" in run(*args).stdout


@pytest.mark.parametrize("args, message", [
    (("--rollout",), "--rollout needs --model"),
    (("--weigh", "norm", "--stage", "scores"), "--weigh norm weighs the weights; drop --stage"),
])
def test_refusals_are_one_line(run, args, message):
    done = run("inspect", "the cat sat", *args)
    assert done.exit_code == 2 and done.stdout == "" and done.stderr.strip() == f"attn: {message}"


def test_a_rollout_over_a_range_of_layers_matches_a_plain_loop_over_those_layers(run):
    m = model("tiny-llama")
    weights = m.run("the cat sat on the mat").stacked("attn.pattern").astype(np.float64)
    for a, b in ((0, 0), (1, 1), (0, 1)):
        result = inspect(m, "the cat sat on the mat", InspectSettings(rollout=(a, b)))
        assert result.rollout_layers == (a, b)
        assert np.allclose(result.rollout, loop_rollout(weights[a:b + 1]), atol=1e-12)
    doc = json.loads(run("inspect", "the cat sat on the mat", "--model", checkpoints.tiny_llama_folder(), "--rollout-layers", "1:", "--json").stdout)
    assert doc["rollout_layers"] == [1, 1] and np.allclose(doc["rollout"], loop_rollout(weights[1:]), atol=1e-6)
    every = json.loads(run("inspect", "the cat sat on the mat", "--model", checkpoints.tiny_llama_folder(), "--rollout", "--json").stdout)
    assert every["rollout_layers"] == [0, 1] and np.allclose(every["rollout"], loop_rollout(weights), atol=1e-6)


@pytest.mark.parametrize("text, layers", [("0:29", (0, 29)), ("5:", (5, 29)), (":7", (0, 7)), ("3:3", (3, 3))])
def test_a_layer_range_reads_a_to_b_both_included(text, layers):
    assert flow.layer_range(text, 30) == layers


@pytest.mark.parametrize("text, says", [  # the tiny Llama has layers 0 and 1
    ("1", "give A:B"), ("a:b", "give A:B"), ("1:0", "layers 0 to 1, and A must not come after B"), ("0:2", "layers 0 to 1"), ("-1:1", "layers 0 to 1"),
])
def test_a_bad_layer_range_is_a_usage_error_of_one_line(run, text, says):
    from attn_cli.errors import InputError

    done = run("inspect", "the cat", "--model", checkpoints.tiny_llama_folder(), "--rollout-layers", text)
    assert done.exit_code == 2 and done.stdout == "" and says in done.stderr and done.stderr.count("\n") == 1, done.stderr
    with pytest.raises(InputError, match=says):
        flow.layer_range(text, 2)


def test_under_a_causal_mask_the_first_tokens_rollout_row_stays_on_itself_and_rows_sum_to_one():
    from hypothesis import given, settings, strategies as st
    from hypothesis.extra.numpy import arrays

    @settings(max_examples=20, deadline=None)
    @given(arrays(np.float64, (3, 2, 5, 5), elements=st.floats(0.01, 1.0)))
    def absorbing(raw):
        causal = np.tril(raw)
        weights = causal / causal.sum(axis=-1, keepdims=True)  # [L, H, n, n], rows on earlier keys summing to 1
        rolled = flow.rollout(weights)  # [L, n, n]
        assert np.allclose(rolled[:, 0], np.eye(5)[0], atol=1e-12)  # the first token reaches only itself: all of it, every layer
        assert np.allclose(rolled.sum(axis=-1), 1.0, atol=1e-12)

    absorbing()


@pytest.mark.slow
def test_smollm2s_rollout_is_all_on_the_first_token_and_says_why(run):
    args = ("inspect", "The capital of France is Paris", "--model", checkpoints.smollm2_gguf())
    doc = json.loads(run(*args, "--rollout", "--json").stdout)
    first = np.array(doc["rollout"])[1:, 0]
    assert np.all(first > 0.95)  # after 30 layers: every later row on the first token
    screen = run(*args, "--rollout", env={"COLUMNS": "80"}).stdout
    assert "an attention sink absorbs the product" in " ".join(screen.split()) and "--rollout-layers A:B" in screen
    short = json.loads(run(*args, "--rollout-layers", "0:3", "--json").stdout)
    assert short["rollout_layers"] == [0, 3] and np.mean(np.array(short["rollout"])[1:, 0]) < np.mean(first)
    shown = run(*args, "--rollout-layers", "0:3", env={"COLUMNS": "80"}).stdout
    assert "attention rollout through layers 0 to 3 (of 30)" in " ".join(shown.split())


def test_an_encoders_rollout_has_no_sink_caveat(run):
    screen = run("inspect", "the cat sat", "--model", checkpoints.minilm_folder(), "--rollout", env={"COLUMNS": "80"}).stdout
    assert "attention sink" not in screen and "holds" not in screen
