"""`attn circuit` and `attn heads compose`: every figure against plain NumPy loops on the tiny checkpoints and against
torch + transformers (tests/fixtures/models/make_circuit_fixtures.py: TransformerLens's composition formulas written in
torch, transformers' own embedding, norm and rotary modules), the CLI's outputs and refusals, and Gemma's memory."""

import json
import math
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests import checkpoints
from tests.conftest import parse_json

ORACLE = checkpoints.FIXTURES / "circuit-oracle.json"
FAMILIES = ("tiny-llama", "tiny-qwen2", "tiny-gemma3", "tiny-gpt2")


@cache
def oracle() -> dict:
    return json.loads(ORACLE.read_text())


@cache
def tiny(name: str):
    from attn_cli.models.loading import load

    return load(str(checkpoints.FIXTURES / name))


@cache
def scores(name: str) -> dict:
    from attn_cli.analysis.compose import composition_scores

    return composition_scores(tiny(name))


@pytest.mark.parametrize("name", FAMILIES)
def test_composition_scores_are_transformerlens_formulas_computed_in_torch(name):
    got = scores(name)
    expected = oracle()[name]["composition"]
    for mode in ("q", "k", "v"):
        assert np.sum(np.isfinite(got[mode])) == len(expected[mode])  # every pair with l1 < l2, none other
        for l1, h1, l2, h2, score in expected[mode]:
            assert got[mode][l1, h1, l2, h2] == pytest.approx(score, rel=1e-5, abs=1e-7), (mode, l1, h1, l2, h2)


def loop_matrices(model, l: int, h: int) -> tuple:  # W_QK, W_OV [d, d] of one head, folded, by explicit products
    spec, w = model.spec, model.weights
    qkv, o = w.tensor(f"layers.{l}.attn.qkv.w").astype(np.float64), w.tensor(f"layers.{l}.attn.o.w").astype(np.float64)
    dh, g = spec.d_head, h // (spec.n_heads // spec.n_kv_heads)
    q = qkv[:, h * dh : (h + 1) * dh].copy()
    k = qkv[:, (spec.n_heads + g) * dh : (spec.n_heads + g + 1) * dh].copy()
    v = qkv[:, (spec.n_heads + spec.n_kv_heads + g) * dh : (spec.n_heads + spec.n_kv_heads + g + 1) * dh].copy()
    out = o[h * dh : (h + 1) * dh].copy()
    norm = w.tensor(f"layers.{l}.attn.norm.w").astype(np.float64)
    for i in range(spec.d_model):  # diag(w) W, row by row
        q[i] *= norm[i]
        k[i] *= norm[i]
        v[i] *= norm[i]
    if spec.norm == "layer":
        q, k, v = q - q.mean(axis=0), k - k.mean(axis=0), v - v.mean(axis=0)
    if spec.qk_norm:
        q = q * w.tensor(f"layers.{l}.attn.q_norm.w")
        k = k * w.tensor(f"layers.{l}.attn.k_norm.w")
    if w.has(f"layers.{l}.attn.post_norm.w"):
        out = out * w.tensor(f"layers.{l}.attn.post_norm.w")
    return q @ k.T, v @ out


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gemma3"])
def test_composition_scores_against_the_d_by_d_products_in_a_loop(name):
    m = tiny(name)
    L, H = m.spec.n_layers, m.spec.n_heads
    mats = {(l, h): loop_matrices(m, l, h) for l in range(L) for h in range(H)}
    got = scores(name)
    fro = lambda a: math.sqrt(sum(x * x for x in a.ravel()))  # noqa: E731
    for (l1, h1), (_, ov) in mats.items():
        for (l2, h2), (qk, ov2) in mats.items():
            if l2 <= l1:
                assert all(np.isnan(got[mode][l1, h1, l2, h2]) for mode in "qkv")
                continue
            for mode, right in (("q", qk), ("k", qk.T), ("v", ov2)):
                want = fro(ov @ right) / (fro(ov) * fro(right))
                assert got[mode][l1, h1, l2, h2] == pytest.approx(want, rel=1e-5), (mode, l1, h1, l2, h2)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 6), st.integers(2, 12), st.integers(0, 10_000))
def test_pair_scores_are_normalised_frobenius_norms_of_products(a, b, dh, d, seed):
    from attn_cli.analysis.matrices import lefts, pair_scores, rights

    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((b, d, dh)) for _ in range(3))
    v1, o1, o2 = rng.standard_normal((a, d, dh)), rng.standard_normal((a, dh, d)), rng.standard_normal((b, dh, d))
    right = rights(q, k, v, o2)
    for mode, m2 in (("q", q @ np.swapaxes(k, 1, 2)), ("k", k @ np.swapaxes(q, 1, 2)), ("v", v @ o2)):
        got = pair_scores(lefts(v1, o1), right[mode], rows=dh)  # blocks of one head: the blocked loop is walked
        for i in range(a):
            ov = v1[i] @ o1[i]
            for j in range(b):
                want = np.linalg.norm(ov @ m2[j]) / (np.linalg.norm(ov) * np.linalg.norm(m2[j]))
                assert got[i, j] == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_the_random_baseline_is_seeded_and_its_scores_are_those_of_the_drawn_heads():
    from attn_cli.analysis.matrices import random_composition, random_heads

    first, again = random_composition(16, 4, 5, seed=3), random_composition(16, 4, 5, seed=3)
    for m in "qkv":  # the same seed, the same heads: the same scores (computed twice through BLAS, so a tolerance)
        np.testing.assert_allclose(first[m], again[m], rtol=1e-12)
    rng = np.random.default_rng(3)
    for i in range(5):
        one, two = random_heads(rng, (16, 4), 1), random_heads(rng, (16, 4), 1)
        ov = one[2][0] @ one[3][0]
        right = two[0][0] @ two[1][0].T  # Q-composition: W_QK of the second head
        assert first["q"][i] == pytest.approx(np.linalg.norm(ov @ right) / np.linalg.norm(ov) / np.linalg.norm(right), rel=1e-9)


def circuit_parts(name: str, l: int, h: int, distance: int, ids: list[int], draws: int = 3):
    from attn_cli.analysis.circuit import CircuitSettings, head_matrices, input_rows, ov_circuit, qk_scores

    m = tiny(name)
    x = input_rows(m, l, ids)
    mats = head_matrices(m, l, h)
    return qk_scores(m, l, mats, x, distance), ov_circuit(m, l, mats, x, ids, CircuitSettings(draws=draws, seed=1))


@pytest.mark.parametrize("name", FAMILIES)
def test_the_circuit_is_what_transformers_modules_give(name):
    for case in oracle()[name]["circuits"]:
        qk, ov = circuit_parts(name, case["layer"], case["head"], case["distance"], case["ids"])
        np.testing.assert_allclose(qk, case["scores"], rtol=1e-5, atol=1e-5 * np.max(np.abs(case["scores"])))  # RoPE tables are float32
        assert ov["promoted"].tolist() == case["top_ids"]
        np.testing.assert_allclose(ov["logits"], case["top_logits"], rtol=1e-5, atol=1e-5)
        assert ov["copying"] == pytest.approx(case["copying"])
        assert ov["positivity"] == pytest.approx(case["positivity"], abs=1e-5)


def rotated(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:  # one vector, pair (i, i + half) turned
    half = len(x) // 2
    out = np.empty_like(x)
    for i in range(half):
        out[i] = x[i] * cos[i] - x[i + half] * sin[i]
        out[i + half] = x[i + half] * cos[i + half] + x[i] * sin[i + half]
    return out


def test_qk_scores_in_a_loop_with_gqa_and_rope_at_a_distance():
    m = tiny("tiny-llama")  # 4 query heads over 2 K/V heads: head 3 reads K/V head 1
    ids, l, h, distance = [30, 31, 57, 90, 200], 1, 3, 7
    qk, _ = circuit_parts("tiny-llama", l, h, distance, ids)
    w, spec = m.weights, m.spec
    qkv, norm = w.tensor(f"layers.{l}.attn.qkv.w").astype(np.float64), w.tensor(f"layers.{l}.attn.norm.w").astype(np.float64)
    cos, sin = (t.astype(np.float64) for t in m.rotary(distance + 1, 0, l))
    dh = spec.d_head
    for s, i in enumerate(ids):
        for t, j in enumerate(ids):
            xs, xt = (e / math.sqrt(np.mean(e * e) + spec.eps) * norm for e in w.embed([i, j]).astype(np.float64))
            q = rotated(xs @ qkv[:, h * dh : (h + 1) * dh], cos[distance], sin[distance])
            k = rotated(xt @ qkv[:, (4 + 1) * dh : (4 + 2) * dh], cos[0], sin[0])
            assert qk[s, t] == pytest.approx(q @ k / math.sqrt(dh), rel=1e-6, abs=1e-9)


@pytest.mark.slow  # a vocabulary x vocabulary matrix of each tiny model, formed to check what never forms it: 23 s each
@pytest.mark.parametrize("name", ["tiny-qwen2", "tiny-gpt2"])
def test_ov_against_whole_logits_and_the_vocabulary_by_vocabulary_matrix(name):
    from attn_cli.analysis.circuit import final_map, head_matrices, input_rows, random_pairs

    m = tiny(name)
    ids, l, h = list(range(40, 60)), 1, 2
    _, ov = circuit_parts(name, l, h, 0, ids, draws=4)
    mats = head_matrices(m, l, h)
    unembed = m.weights.unembedding().astype(np.float64)  # [V, d]: the whole table, small here
    every = input_rows(m, l, list(range(m.spec.vocab_size)))  # [V, d]

    def figures(v, o):
        full = final_map(m, every @ v @ o) @ unembed.T  # [V, V] (neither family has a norm after attention)
        logits = full[ids]
        values = np.linalg.eigvals(full)
        return logits, np.mean([int(np.argmax(logits[s])) == i for s, i in enumerate(ids)]), values.sum().real / np.abs(values).sum()

    logits, copying, positivity = figures(mats["v"], mats["o"])
    for s in range(len(ids)):
        order = np.argsort(-logits[s], kind="stable")[:5]
        assert ov["promoted"][s].tolist() == order.tolist()
        np.testing.assert_allclose(ov["logits"][s], logits[s][order], rtol=1e-5, atol=1e-5)
    assert ov["copying"] == pytest.approx(copying) and ov["positivity"] == pytest.approx(positivity, abs=1e-6)
    random = [figures(v, o) for v, o in random_pairs(m.spec.d_model, m.spec.d_head, 100, seed=1)]  # the first 4 for copying, all for positivity
    assert ov["random_copying"] == (pytest.approx(np.mean([c for _, c, _ in random[:4]])), pytest.approx(np.std([c for _, c, _ in random[:4]])), 4)
    assert ov["random_positivity"][0] == pytest.approx(np.mean([p for _, _, p in random]), abs=1e-6)
    assert ov["random_positivity"][1] == pytest.approx(np.std([p for _, _, p in random]), abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.integers(1, 7), st.lists(st.integers(1, 9), min_size=1, max_size=4), st.integers(0, 10_000))
def test_the_top_tokens_merged_block_by_block_are_the_top_of_the_whole_row(m, k, blocks, seed):
    from attn_cli.analysis.circuit import merge_top

    rng = np.random.default_rng(seed)
    whole = rng.integers(-3, 4, (m, sum(blocks))).astype(np.float64)  # ties: the lower id first
    best, start = (np.empty((m, 0)), np.empty((m, 0), dtype=np.int64)), 0
    for size in blocks:
        best = merge_top(best, whole[:, start : start + size], start, k)
        start += size
    for r in range(m):
        order = np.lexsort((np.arange(whole.shape[1]), -whole[r]))[:k]
        assert best[1][r].tolist() == order.tolist() and best[0][r].tolist() == whole[r][order].tolist()


def test_a_frequent_set_is_single_tokens_in_glove_order_and_a_text_set_its_own_tokens_once():
    from attn_cli.analysis.circuit import CircuitSettings, frequent_ids, token_set

    m = tiny("tiny-llama")
    ids = frequent_ids(m, 10)
    assert len(ids) == len(set(ids)) <= 10 and all(len(m.tokenizer.decode([i]).strip()) > 0 for i in ids)
    text = token_set(m, CircuitSettings(text="the cat the cat sat"))
    tokens = m.tokenize("the cat the cat sat")
    assert text == list(dict.fromkeys(i for i, s in zip(tokens.ids, tokens.special) if not s))


MODEL = str(checkpoints.FIXTURES / "tiny-llama")


def test_circuit_cli_table_json_and_csv_are_one_result(run):
    shown = run("circuit", "1.3", "--model", MODEL, "--text", "the cat sat on the mat", "--distance", "2", "--top", "4")
    assert shown.exit_code == 0, shown.stderr
    assert "head 1.3 (grouped-query: it reads the K and V of key/value head 1)" in " ".join(shown.stdout.split())
    assert "copying:" in shown.stdout and "eigenvalue positivity" in shown.stdout
    doc = parse_json(run("circuit", "1.3", "--model", MODEL, "--text", "the cat sat on the mat", "--distance", "2", "--json"))
    assert doc["head"] == "1.3" and doc["kv_head"] == 1 and doc["qk"]["distance"] == 2
    n = len(doc["ov"]["sources"])
    assert len(doc["qk"]["pairs"]) == n * n and [p["score"] for p in doc["qk"]["pairs"]] == sorted((p["score"] for p in doc["qk"]["pairs"]), reverse=True)
    assert set(doc["ov"]) == {"copying", "random_copying", "positivity", "random_positivity", "sources"}
    assert doc["ov"]["random_copying"]["draws"] == 4 and doc["ov"]["random_positivity"]["draws"] == 100 and doc["ov"]["random_copying"]["seed"] == 0
    csv = run("circuit", "1.3", "--model", MODEL, "--text", "the cat sat on the mat", "--distance", "2", "--csv")
    lines = csv.stdout.splitlines()
    assert lines[0] == "rank,query,query_id,key,key_id,score" and len(lines) == 1 + n * n


@pytest.mark.parametrize("args, message", [
    (["9.0"], "head 9.0: layer 9 does not exist; the model has layers 0 to 1"),
    (["1.4"], "head 1.4: head 4 does not exist; each layer has heads 0 to 3"),
    (["one"], "L.H 'one': give LAYER.HEAD, such as 3.1"),
    (["1.x"], "head '1.x': give LAYER.HEAD, such as 3.1"),
    (["1.1", "--distance", "-1"], "--distance must be >= 0, not -1"),
    (["1.1", "--tokens", "1"], "--tokens must be >= 2, not 1"),
])
def test_circuit_refuses_bad_input_in_one_line(run, args, message):
    got = run("circuit", *args, "--model", MODEL)
    assert got.exit_code == 2 and got.stdout == "" and message in got.stderr and len(got.stderr.strip().splitlines()) == 1, got.stderr


def test_an_encoder_gets_its_qk_circuit_and_one_line_about_ov(run):
    shown = run("circuit", "0.1", "--model", str(checkpoints.FIXTURES / "tiny-bert-mlm"), "--text", "the cat sat")
    assert shown.exit_code == 0, shown.stderr
    assert "QK:" in shown.stdout and "the OV circuit is not read into the vocabulary" in " ".join(shown.stdout.split())
    doc = parse_json(run("circuit", "0.1", "--model", str(checkpoints.FIXTURES / "tiny-bert-mlm"), "--text", "the cat sat", "--json"))
    assert doc["ov"] is None and "not linear" in doc["ov_missing"]
    gpt2 = run("circuit", "0.1", "--model", str(checkpoints.FIXTURES / "tiny-gpt2"), "--distance", "1")
    assert gpt2.exit_code == 2 and "has no rotary positions" in gpt2.stderr


def test_compose_cli_json_lists_every_pair_with_the_baseline_and_the_view_maps_one_head(run):
    doc = parse_json(run("heads", "compose", "--model", MODEL, "--json"))
    got = scores("tiny-llama")
    assert len(doc["pairs"]) == 4 * 4 and doc["pairs"][0] == {"from": "0.0", "to": "1.0", **{m: pytest.approx(got[m][0, 0, 1, 0], rel=1e-5) for m in "qkv"}}
    assert set(doc["baseline"]) == {"draws", "seed", "q", "k", "v"} and doc["baseline"]["draws"] == 100
    assert 0 < doc["baseline"]["k"]["mean"] < 1 and doc["baseline"]["k"]["std"] > 0
    shown = run("heads", "compose", "--model", MODEL, "--to", "1.2", "--mode", "v", "--top", "3")
    assert shown.exit_code == 0, shown.stderr
    assert "V-composition (W_OV then W_OV) of every earlier head into head 1.2" in " ".join(shown.stdout.split())
    assert f"{got['v'][0, 3, 1, 2]:.3f}".removeprefix("0") in shown.stdout
    csv = run("heads", "compose", "--model", MODEL, "--csv").stdout.splitlines()
    assert csv[0] == "from,to,q,k,v" and len(csv) == 17


@pytest.mark.parametrize("args, message", [
    (["--to", "0.1"], "--to 0.1: a head of layer 0 reads no earlier head; pick a head of layer 1 to 1"),
    (["--to", "1.9"], "--to 1.9: head 9 does not exist; each layer has heads 0 to 3"),
    (["--mode", "x"], "--mode 'x': pick one of q, k, v"),
])
def test_compose_refuses_bad_input_in_one_line(run, args, message):
    got = run("heads", "compose", "--model", MODEL, *args)
    assert got.exit_code == 2 and got.stdout == "" and message in got.stderr and len(got.stderr.strip().splitlines()) == 1, got.stderr


def test_the_api_returns_what_the_commands_print():
    from attn_cli import api

    m = tiny("tiny-llama")
    head = api.circuit(m, 1, 3, text="the cat sat")
    assert head.to_dict()["head"] == "1.3" and head.scores.shape == (len(head.ids), len(head.ids))
    pairs = api.composition(m, to="1.0")
    assert pairs.to == (1, 0)
    np.testing.assert_allclose(pairs.scores["k"], scores("tiny-llama")["k"], rtol=1e-6, equal_nan=True)


def test_a_real_subprocess_writes_the_json(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "attn_cli", "heads", "compose", "--model", MODEL, "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "" and len(json.loads(done.stdout)["pairs"]) == 16
    bad = subprocess.run([sys.executable, "-m", "attn_cli", "circuit", "7.0", "--model", MODEL], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_gemma3s_whole_vocabulary_stays_under_a_gibibyte_of_private_memory():
    """`attn circuit` reads Gemma 3's 262,144-token output head a block at a time: peak RssAnon, sampled from /proc."""
    import subprocess
    import sys
    import threading
    import time
    from pathlib import Path

    proc = subprocess.Popen([sys.executable, "-m", "attn_cli", "circuit", "5.0", "--model", str(checkpoints.gemma3_gguf()), "--tokens", "50", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak, done = [0], threading.Event()

    def sample():
        status = Path(f"/proc/{proc.pid}/status")
        while not done.is_set():
            try:
                peak[0] = max([peak[0]] + [int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("RssAnon:")])
            except (OSError, ValueError):
                pass
            time.sleep(0.005)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    out, err = proc.communicate(timeout=900)
    done.set()
    watcher.join()
    assert proc.returncode == 0, err.decode()
    assert len(json.loads(out)["ov"]["sources"]) == 50
    assert peak[0] < 1 << 20, f"peak private memory {peak[0] / 1024:.0f} MiB"  # KiB
