"""`attn inspect`: the JSON contract, the terminal view, stdin batches, exports, heads and every error path."""

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from rich.cells import cell_len
from rich.console import Console

from attn_cli.heads import registry as heads_module
from attn_cli import views as render
from attn_cli.core.attention import Head, causal_mask
from attn_cli.core.blocks import input_embeddings, positional_encoding
from attn_cli.core.softmax import softmax
from attn_cli.heads.registry import load_head, read_meta, resolve_head, save_head
from attn_cli.core.neighbors import nearest_rows
from attn_cli.vectors.tokens import key_rows
from attn_cli.results import WEIGHT_DIGITS, significant
from attn_cli.vectors.store import Vectors
from conftest import parse_json
from tests.exact import assert_copied

LESSON = "A fluffy blue creature roamed the verdant forest."
LESSON_TOKENS = ["a", "fluffy", "blue", "creature", "roamed", "the", "verdant", "forest", "."]
WIDE = {"COLUMNS": "100"}


@pytest.fixture
def no_shipped_heads(tmp_path, monkeypatch):
    """Pretend no learned heads are installed, whatever data/heads holds."""
    monkeypatch.setattr(heads_module, "SHIPPED_DIR", tmp_path / "no-heads")


def rng_head(name: str, d: int = 50, d_k: int = 4, d_v: int | None = None, seed: int = 0) -> Head:
    rng = np.random.default_rng(seed)
    w_v = rng.normal(0, 0.1, (d, d_v or d))
    w_o = rng.normal(0, 0.1, (d_v, d)) if d_v else None
    return Head(name, rng.normal(0, 0.2, (d, d_k)), rng.normal(0, 0.2, (d, d_k)), w_v, w_o)


def write_npz(path, **arrays):
    np.savez(path, **arrays)
    return path


# --- the JSON contract -------------------------------------------------------------------------


def test_json_has_exactly_the_documented_keys_and_true_weights(run, glove):
    out = parse_json(run("inspect", LESSON, "--head", "identity", "--json"))
    assert set(out) == {
        "tokens", "unknown", "mask", "position", "scaled", "heads", "delta_norms", "delta_context_norms", "delta_self_norms",
        "input_norms", "cosines", "context_cosines", "neighbors",
    }
    assert out["tokens"] == LESSON_TOKENS
    near = out["neighbors"]  # the 3 nearest keys the view shows, by default in JSON too
    assert set(near) == {"input", "output"}
    for rows in near.values():
        assert [len(keys) for keys in rows] == [3] * len(LESSON_TOKENS)
        assert all(token not in keys for token, keys in zip(LESSON_TOKENS, rows))
    assert out["mask"] == "causal" and out["position"] is True and out["scaled"] is True
    [head] = out["heads"]
    assert set(head) == {"name", "d_k", "description", "noise", "weights", "delta_norms", "delta_context_norms", "delta_self_norms",
                         "cosines", "context_cosines"}
    assert head["name"] == "identity" and head["d_k"] == 50 and head["noise"] is False and "W_Q = W_K = W_V = I" in head["description"]
    weights = np.array(head["weights"])
    n = len(LESSON_TOKENS)
    assert weights.shape == (n, n)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-6)
    assert np.all(weights[np.triu_indices(n, 1)] == 0)
    # The identity head is attention by similarity: recompute it here with plain NumPy.
    e = np.array([glove.get_vector(t) for t in LESSON_TOKENS]) + positional_encoding(n, 50)
    scaled = np.where(causal_mask(n), e @ e.T / np.sqrt(50), -np.inf)
    expected = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(weights, expected, atol=1e-6)
    np.testing.assert_allclose(out["delta_norms"], np.linalg.norm(expected @ e, axis=1), rtol=1e-5)
    # one head: its own cosines are the sentence's
    assert head["cosines"] == out["cosines"] and head["context_cosines"] == out["context_cosines"]


def test_mask_none_and_no_position(run):
    out = parse_json(run("inspect", "the river bank", "--head", "identity", "--mask", "none", "--no-position", "--json"))
    assert out["mask"] == "none" and out["position"] is False
    weights = np.array(out["heads"][0]["weights"])
    assert np.all(weights > 0)  # every key is visible
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-6)


def test_rounded_rows_still_sum_to_one_for_long_sentences(run):
    text = " ".join(["the cat sat on the mat and the dog ran to the park"] * 6)
    out = parse_json(run("inspect", text, "--head", "identity", "--head", "random", "--mask", "none", "--json"))
    for head in out["heads"]:
        sums = np.array(head["weights"]).sum(axis=1)
        assert np.max(np.abs(sums - 1)) < 1e-6


def test_significant_digits_print_short():
    assert significant(np.array([0.123456789, 1.0, -2.5e-9, 123456.7]), 6).tolist() == [0.123457, 1.0, -2.5e-09, 123457.0]
    assert json.dumps(significant(np.array([0.42]), 7).tolist()) == "[0.42]"


def test_stage_scores_carries_raw_scores_with_null_where_masked(run, glove):
    out = parse_json(run("inspect", "one mole of carbon", "--head", "identity", "--stage", "scores", "--json"))
    scores = out["heads"][0]["scores"]
    e = input_embeddings(np.array([glove.get_vector(t) for t in out["tokens"]]))
    raw = e @ e.T  # Q K^T for W_Q = W_K = I, before scaling
    for i in range(4):
        for j in range(4):
            if j > i:
                assert scores[i][j] is None
            else:
                assert scores[i][j] == pytest.approx(raw[i, j], rel=1e-5)


def test_stage_masked_carries_scaled_scores(run, glove):
    out = parse_json(run("inspect", "one mole of carbon", "--head", "identity", "--stage", "masked", "--mask", "none", "--json"))
    e = input_embeddings(np.array([glove.get_vector(t) for t in out["tokens"]]))
    np.testing.assert_allclose(np.array(out["heads"][0]["masked"], dtype=float), e @ e.T / np.sqrt(50), rtol=1e-5)
    assert "scores" not in out["heads"][0]  # "scores" always means Q K^T before scaling (--stage scores)


def test_embeddings_are_input_and_output(run, glove):
    out = parse_json(run("inspect", "a biopsy of the mole", "--head", "random", "--embeddings", "--json"))
    e_in, e_out = np.array(out["embeddings"]["input"]), np.array(out["embeddings"]["output"])
    words = np.array([glove.get_vector(t) for t in out["tokens"]])
    np.testing.assert_allclose(e_in, words + positional_encoding(len(words), 50), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(e_out - e_in, axis=1), out["delta_norms"], rtol=1e-4)


def test_random_head_is_seeded_and_says_it_is_untrained(run):
    a = run("inspect", LESSON, "--head", "random", "--json")
    b = parse_json(run("inspect", LESSON, "--head", "random", "--seed", "0", "--json"))
    c = parse_json(run("inspect", LESSON, "--head", "random", "--seed", "1", "--json"))
    assert parse_json(a) == b and b != c
    assert "untrained" in a.stderr
    view = run("inspect", LESSON, "--head", "random", env=WIDE)
    assert "untrained" in view.stdout


def test_several_heads_add_up(run):
    one = parse_json(run("inspect", LESSON, "--head", "identity", "--embeddings", "--json"))
    two = parse_json(run("inspect", LESSON, "--head", "identity", "--head", "identity", "--embeddings", "--json"))
    assert [h["name"] for h in two["heads"]] == ["identity", "identity"]
    e = np.array(one["embeddings"]["input"])
    np.testing.assert_allclose(np.array(two["embeddings"]["output"]) - e, 2 * (np.array(one["embeddings"]["output"]) - e), atol=1e-4)


def test_unknown_words_skip_or_zero(run):
    bad = run("inspect", "the cat xqzvw sat", "--head", "identity", "--json")
    assert bad.exit_code == 2 and "xqzvw" in bad.stderr and bad.stdout == ""
    skipped = parse_json(run("inspect", "the cat xqzvw sat", "--head", "identity", "--oov", "skip", "--json"))
    assert skipped["tokens"] == ["the", "cat", "sat"]
    zeroed = parse_json(run("inspect", "the cat xqzvw sat", "--head", "identity", "--oov", "zero", "--json"))
    assert zeroed["tokens"] == ["the", "cat", "xqzvw", "sat"]


# --- heads from files and the default heads -----------------------------------------------------


def test_npz_head_with_low_rank_value_map(run, tmp_path):
    path = tmp_path / "mine.npz"
    save_head(rng_head("mine", d_v=5), path, {"description": "a test head"})
    out = parse_json(run("inspect", LESSON, "--head", str(path), "--json"))
    assert out["heads"][0]["name"] == "mine" and out["heads"][0]["d_k"] == 4
    assert read_meta(path) == {"name": "mine", "d_k": 4, "description": "a test head"}
    assert [p.name for p in tmp_path.iterdir()] == ["mine.npz"]  # the atomic write left no temporary file


def test_a_saved_random_head_still_says_it_is_untrained(run, tmp_path):
    head = resolve_head("random", 50, 3)
    save_head(head, tmp_path / "noise.npz", head.meta)
    result = run("inspect", LESSON, "--head", tmp_path / "noise.npz", "--json")
    assert parse_json(result)["heads"][0]["name"] == "noise"
    assert "untrained random weights in noise" in result.stderr


def test_load_head_round_trip(tmp_path):
    head = rng_head("x", d_v=3)
    save_head(head, tmp_path / "x.npz", None)
    back = load_head(tmp_path / "x.npz", 50)
    for key in ("w_q", "w_k", "w_v", "w_o"):
        assert_copied(getattr(back, key), getattr(head, key))
    assert back.name == "x" and back.trained


def test_builtin_heads():
    identity = resolve_head("identity", 7, 0)
    assert_copied(identity.w_q, np.eye(7))
    assert identity.d_k == 7
    r0, r0b, r1 = resolve_head("random", 50, 0), resolve_head("random", 50, 0), resolve_head("random", 50, 1)
    np.testing.assert_allclose(r0.w_q, r0b.w_q, rtol=1e-12, atol=1e-12)  # the same seed
    assert not np.allclose(r0.w_q, r1.w_q, rtol=0.1, atol=0.1)  # another seed
    assert not r0.trained and r0.noise and "untrained" in r0.description
    assert not identity.noise
    assert abs(np.std(r0.w_q) - 1 / np.sqrt(50)) < 0.02  # initialised like a real model


def test_default_heads_fall_back_to_identity_and_say_so(run, no_shipped_heads):
    result = run("inspect", LESSON, "--json")
    assert parse_json(result)["heads"][0]["name"] == "identity"
    assert "identity" in result.stderr


def test_default_heads_are_the_shipped_ones_when_present(run, tmp_path, monkeypatch):
    monkeypatch.setattr(heads_module, "SHIPPED_DIR", tmp_path)
    for name in heads_module.DEFAULT_HEADS:
        save_head(rng_head(name), tmp_path / f"{name}.npz")
    out = parse_json(run("inspect", LESSON, "--json"))
    assert [h["name"] for h in out["heads"]] == heads_module.DEFAULT_HEADS
    assert parse_json(run("inspect", LESSON, "--head", heads_module.DEFAULT_HEADS[0], "--json"))["heads"][0]["name"] == heads_module.DEFAULT_HEADS[0]


BAD_HEADS = {
    "missing keys": (dict(w_q=np.eye(50), w_k=np.eye(50)), "missing w_v"),
    "wrong d": (dict(w_q=np.ones((40, 4)), w_k=np.ones((40, 4)), w_v=np.eye(50)), "d=50"),
    "w_k unlike w_q": (dict(w_q=np.ones((50, 4)), w_k=np.ones((50, 3)), w_v=np.eye(50)), "w_k has shape"),
    "low-rank w_v without w_o": (dict(w_q=np.ones((50, 4)), w_k=np.ones((50, 4)), w_v=np.ones((50, 5))), "without w_o"),
    "w_o of the wrong shape": (dict(w_q=np.ones((50, 4)), w_k=np.ones((50, 4)), w_v=np.ones((50, 5)), w_o=np.ones((4, 50))), "w_o has shape"),
    "not 2-d": (dict(w_q=np.ones(50), w_k=np.ones((50, 4)), w_v=np.eye(50)), "2-d"),
    "integers": (dict(w_q=np.ones((50, 4), dtype=int), w_k=np.ones((50, 4)), w_v=np.eye(50)), "floats"),
    "NaN": (dict(w_q=np.full((50, 4), np.nan), w_k=np.ones((50, 4)), w_v=np.eye(50)), "NaN"),
    "infinity": (dict(w_q=np.ones((50, 4)), w_k=np.ones((50, 4)), w_v=np.full((50, 50), np.inf)), "infinite"),
    "pickled objects": (dict(w_q=np.array([{"a": 1}], dtype=object), w_k=np.ones((50, 4)), w_v=np.eye(50)), "pickled"),
    "meta not JSON": (dict(w_q=np.ones((50, 4)), w_k=np.ones((50, 4)), w_v=np.eye(50), meta=np.array("{nope")), "meta"),
}


@pytest.mark.parametrize("case", BAD_HEADS)
def test_bad_head_files_are_exit_2_naming_file_and_problem(run, tmp_path, case):
    arrays, message = BAD_HEADS[case]
    path = write_npz(tmp_path / "bad.npz", **arrays)
    result = run("inspect", LESSON, "--head", str(path), "--json")
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert str(path) in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr


def test_corrupt_head_file_is_exit_1(run, tmp_path):
    path = tmp_path / "broken.npz"
    path.write_bytes(b"PK\x03\x04 this is not really a zip file")
    result = run("inspect", LESSON, "--head", str(path), "--json")
    assert result.exit_code == 1 and "cannot read" in result.stderr and str(path) in result.stderr


@pytest.mark.parametrize("spec, message", [("nonsense", "unknown head"), ("missing/head.npz", "no such head file")])
def test_bad_head_specs(run, spec, message):
    result = run("inspect", LESSON, "--head", spec, "--json")
    assert result.exit_code == 2 and message in result.stderr


# --- other error paths ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        ((LESSON, "--max-tokens", "5"), "more than --max-tokens 5"),
        ((LESSON, "--focus", "tiger"), "--focus 'tiger' is not one of the tokens"),
        ((LESSON, "--focus", "9"), "out of range"),
        (("",), "no words"),
        (("the cat", "--json", "--jsonl"), "exclude each other"),
        (("the cat", "--json", "--svg", "x.svg"), "do not combine"),
        (("the cat", "--mask", "sideways"), "sideways"),
        (("the cat", "--stage", "everything"), "everything"),
        (("the cat", "--neighbors", "-1"), "--neighbors"),
    ],
)
def test_usage_errors_are_exit_2(run, args, message):
    result = run("inspect", *args, "--head", "identity")
    assert result.exit_code == 2
    assert message in result.stderr or message in result.output
    assert "Traceback" not in result.output


def test_max_tokens_default_refuses_huge_input(run):
    result = run("inspect", "word " * 600, "--head", "identity", "--json")
    assert result.exit_code == 2 and "600 tokens" in result.stderr


# --- the terminal view -------------------------------------------------------------------------


def text_of(*renderables, width: int = 100) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None)
    for r in renderables:
        console.print(r)
    return out.getvalue()


def test_heatmap_labels_cells_and_marks_masked_cells():
    matrix = np.array([[1.0, np.nan], [0.25, 0.75]])
    lines = text_of(render.Heatmap(matrix, ["cat", "sat"], ["cat", "sat"]), width=40).splitlines()
    assert lines[0].split() == ["query", "↓", "key", "→", "cat", "sat"]
    assert lines[1].split() == ["cat", "1.0", "·"]
    assert lines[2].split() == ["sat", ".25", ".75"]


def test_heatmap_degrades_to_a_compact_grid_when_too_wide():
    n = 30
    labels = [f"word{i}" for i in range(n)]
    weights = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    shown = text_of(render.Heatmap(np.where(causal_mask(n), weights, np.nan), labels, labels), width=60)
    assert "query ↓ key → (token indices); one cell per weight" in shown
    assert all(len(line) <= 60 for line in shown.splitlines())
    assert " 0 word0  █" + "·" * 29 in shown.splitlines() and "29 word29 " in shown and "29:word29" not in shown
    narrow = text_of(render.Heatmap(np.where(causal_mask(n), weights, np.nan), labels, labels), width=36)
    assert " 0 █" + "·" * 29 in narrow.splitlines() and "29:word29" in narrow  # no room for row labels: the index -> token list


def test_heatmap_lists_top_entries_as_index_token_when_not_even_the_compact_grid_fits():
    n = 30
    labels = [f"word{i}" for i in range(n)]
    weights = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    heatmap = render.Heatmap(np.where(causal_mask(n), weights, np.nan), labels, labels)
    assert "do not fit in 10 characters" in " ".join(text_of(heatmap, width=10).split())
    listed = text_of(*heatmap.top_entries(200), width=200)
    assert "keys as index:token" in listed and "1:word1       → 0:word0 .50, 1:word1 .50" in listed


MOLE_FIRST = "The mole dug tunnels under my garden."


def test_a_head_with_a_sink_shows_it_in_json_csv_and_the_view(run, tmp_path):
    """Weight on the sink is an update not made: JSON gives its score and each query's weight (the tokens'
    weights and it sum to 1), CSV a row per query with the key token ∅, the view a ∅ column and focus row."""
    head = rng_head("sunk", seed=3)
    head.sink = 0.5
    save_head(head, tmp_path / "sunk.npz")
    out = parse_json(run("inspect", MOLE_FIRST, "--head", str(tmp_path / "sunk.npz"), "--head", "identity", "--json"))
    sunk, plain = out["heads"]
    assert "sink" not in plain and sunk["sink"]["score"] == pytest.approx(0.5, abs=1e-9)
    weights, sink = np.array(sunk["weights"]), np.array(sunk["sink"]["weights"])
    np.testing.assert_allclose(weights.sum(axis=1) + sink, 1.0, atol=1e-6)
    assert np.all(sink > 0)
    rows = [line.split(",") for line in run("inspect", MOLE_FIRST, "--head", str(tmp_path / "sunk.npz"), "--csv").stdout.splitlines()]
    header, body = rows[0], rows[1:]
    token, weight, query = header.index("key_token"), header.index("weight"), header.index("query")
    sink_rows = [r for r in body if r[token] == "∅"]
    assert len(sink_rows) == len(weights) and [float(r[weight]) for r in sink_rows] == pytest.approx(sink, abs=1e-6)
    per_query = np.zeros(len(weights))
    for r in body:
        per_query[int(r[query])] += float(r[weight])
    np.testing.assert_allclose(per_query, 1.0, atol=1e-5)
    view = run("inspect", MOLE_FIRST, "--head", str(tmp_path / "sunk.npz"), "--focus", "mole", env=WIDE).stdout
    assert "∅: a key every query sees that writes nothing (score 0.5)" in view
    assert "∅ nothing" in view and " ∅ " in view.split("what 'mole'")[0]  # the focus row, and the heatmap's column


def test_the_context_heads_sink_leaves_a_word_with_nothing_before_it_itself(run):
    """Under the causal mask the first words of a sentence have nothing rarer before them to attend to: the
    shipped context head puts their weight on its sink, so they stay near what they were."""
    out = parse_json(run("inspect", MOLE_FIRST, "--json"))
    context = next(h for h in out["heads"] if h["name"] == "context")
    sink = context["sink"]["weights"]
    assert sink[0] > 0.99 and sink[1] > 0.5  # "the" sees only itself (which costs it) and the sink; "mole" only "the"
    assert sink[2] < 0.5  # "dug" sees "mole"
    assert out["cosines"][0] > 0.95 and out["cosines"][1] > 0.7


def test_human_view_shows_tokens_heatmap_and_shift_table(run):
    result = run("inspect", "one mole of carbon dioxide", "--head", "identity", env=WIDE)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "tokens 0:one 1:mole 2:of 3:carbon 4:dioxide" in out
    assert "head identity" in out and "query ↓ key →" in out
    assert "·" in out  # the masked cells
    assert "‖ΔE‖" in out and "nearest to E′" not in out and "--neighbors 3 adds the keys nearest E and E′" in out
    assert "\x1b[" not in out  # not a terminal: no colour codes
    asked = run("inspect", "one mole of carbon dioxide", "--head", "identity", "--neighbors", "3", env=WIDE).stdout
    assert "nearest to E′" in asked and "--neighbors 3 adds" not in asked


def test_human_view_transpose_focus_and_stages(run):
    transposed = run("inspect", LESSON, "--head", "identity", "--transpose", env=WIDE).stdout
    assert "key ↓ query →" in transposed
    focused = run("inspect", LESSON, "--head", "identity", "--focus", "creature", env=WIDE).stdout
    assert "what 'creature' (#3) attends to" in focused and "−∞ masked" in focused and "score/√d_k" in focused
    by_index = run("inspect", LESSON, "--head", "identity", "--focus", "-1", env=WIDE).stdout
    assert "what '.' (#8) attends to" in by_index
    scores = run("inspect", LESSON, "--head", "identity", "--stage", "scores", env=WIDE).stdout
    assert "before scaling" in scores
    masked = run("inspect", LESSON, "--head", "identity", "--stage", "masked", env=WIDE).stdout
    assert "√d_k with the mask applied" in masked


def test_neighbors_zero_skips_them(run):
    out = run("inspect", LESSON, "--head", "identity", "--neighbors", "0", env=WIDE).stdout
    assert "nearest" not in out and "‖ΔE‖" in out


def test_wide_input_gets_the_compact_grid(run):
    text = " ".join(["the quick brown fox jumps over the lazy dog"] * 4)
    result = run("inspect", text, "--head", "identity", "--neighbors", "0", env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "weights in tenths" in result.stdout  # 36 tokens: a digit a weight still fits 80 columns
    result = run("inspect", text + " again and again", "--head", "identity", "--neighbors", "0", env={"COLUMNS": "80"})
    assert "(token indices); one cell per weight" in result.stdout


# --- stdin batches -----------------------------------------------------------------------------

BATCH = "the cat sat\n\nthe xqzvw sat\n" + "word " * 20 + "\none mole of carbon dioxide\n"


def test_jsonl_batch_keeps_going_past_bad_lines(run):
    result = run("inspect", "-", "--head", "identity", "--jsonl", "--max-tokens", "10", input=BATCH)
    assert result.exit_code == 2
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["line"] for row in rows] == [1, 3, 4, 5]  # the blank line 2 is skipped, its number kept
    assert rows[0]["tokens"] == ["the", "cat", "sat"]
    assert rows[1]["line"] == 3 and "xqzvw" in rows[1]["error"]
    assert rows[2]["line"] == 4 and "--max-tokens" in rows[2]["error"]
    assert rows[3]["tokens"][1] == "mole"
    assert "skipped 1 blank line (2)" in result.stderr and "2 of 4 lines failed" in result.stderr


def test_jsonl_all_good_is_exit_0(run):
    result = run("inspect", "-", "--head", "identity", "--jsonl", input="the cat sat\na dog ran\n")
    assert result.exit_code == 0
    assert [json.loads(line)["tokens"][1] for line in result.stdout.splitlines()] == ["cat", "dog"]


def test_json_batch_is_an_array(run):
    result = run("inspect", "-", "--head", "identity", "--json", input="the cat sat\n \t\nxqzvw\n")
    assert result.exit_code == 2
    items = json.loads(result.stdout)
    assert items[0]["line"] == 1 and items[0]["tokens"] == ["the", "cat", "sat"]
    assert items[1]["line"] == 3 and "xqzvw" in items[1]["error"] and len(items) == 2
    assert result.stderr.count("blank line") == 1


def test_human_batch_shows_each_sentence(run):
    result = run("inspect", "-", "--head", "identity", "--neighbors", "0", input="the cat sat\n\nxqzvw\na dog ran\n", env=WIDE)
    assert result.exit_code == 2
    assert "line 1" in result.stdout and "line 4" in result.stdout and "line 2" not in result.stdout
    assert "line 3: unknown word" in result.stderr and "skipped 1 blank line (2)" in result.stderr


# --- exports -----------------------------------------------------------------------------------


@pytest.mark.parametrize("flag, marker", [("--svg", "<svg"), ("--html", "<html")])
def test_exports_write_what_was_shown_and_never_overwrite(run, tmp_path, flag, marker):
    path = tmp_path / f"view.{flag[2:]}"
    result = run("inspect", LESSON, "--head", "identity", flag, path, env=WIDE)
    assert result.exit_code == 0
    saved = path.read_text()
    assert marker in saved and "creature" in saved
    path.write_text("mine")
    again = run("inspect", LESSON, "--head", "nonsense", flag, path)  # the file is checked before any work
    assert again.exit_code == 2 and "exists" in again.stderr and path.read_text() == "mine"
    forced = run("inspect", LESSON, "--head", "identity", flag, path, "--force")
    assert forced.exit_code == 0 and marker in path.read_text()


def test_key_rows_scan_and_index_agree(glove):
    tokens = ["the", "verdant", "xqzvw", "forest", "the"]
    fresh = Vectors(glove.index_to_key, glove.vectors)  # no key index built yet: scans
    scanned = key_rows(tokens, fresh)
    assert "key_to_index" not in vars(fresh)
    assert scanned == [glove.key_to_index.get(t) for t in tokens]
    assert scanned[2] is None


def test_machine_output_never_imports_rich_gensim_or_scipy():
    code = (
        "import sys\nfrom attn_cli.cli import app\n"
        "try:\n    app(['inspect', '-', '--head', 'random', '--jsonl'], prog_name='attn')\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'gensim', 'scipy')), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], input="the cat sat\n", capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout)["tokens"] == ["the", "cat", "sat"]
    assert done.stderr.strip().splitlines()[-1] == "[]"


def test_terminal_view_reads_only_its_own_modules():
    """The plain terminal view leaves out the other views and what only options use (SVG/HTML,
    senses, stdin lines): with PYTHONDONTWRITEBYTECODE each module read is compiled on every run."""
    code = (
        "import sys\nfrom attn_cli.cli import app\n"
        "try:\n    app(['inspect', 'the cat sat'], prog_name='attn')\nexcept SystemExit:\n    pass\n"
        "unused = ('views.lesson', 'views.models', 'views.heads', 'io.export', 'analysis.senses', 'io.lines', 'lesson.similarity', 'vectors.formats')\n"
        "print(sorted(m for m in sys.modules if m.startswith('attn_cli.') and m.removeprefix('attn_cli.') in unused), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ | {"COLUMNS": "100"})
    assert "tokens 0:the 1:cat 2:sat" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]"


def test_wide_characters_keep_the_grid_aligned():
    labels = ["東京", "is", "big"]
    matrix = np.where(causal_mask(3), 1 / 3, np.nan)
    lines = text_of(render.Heatmap(matrix, labels, labels), width=60).splitlines()
    assert len({cell_len(line.rstrip("\n")) for line in lines}) == 1
    assert render.abbreviate("東京タワー", 5) == "東京…"


def test_nearest_keys_by_cosine_leave_the_token_out(glove):
    rows = np.array([glove.get_vector("forest"), np.zeros(50)])
    own = [glove.key_to_index["forest"], -1]
    near = nearest_rows(glove, rows, 3, own)
    sims = glove.unit @ (rows[0] / np.linalg.norm(rows[0]))
    sims[own[0]] = -np.inf
    assert near[0] == list(np.argsort(-sims)[:3]) and near[1] == []


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, st.integers(1, 600), elements=st.floats(-40, 40)))
def test_rounded_weights_keep_rows_summing_to_one(scores):
    rounded = significant(softmax(scores), WEIGHT_DIGITS)
    assert abs(rounded.sum() - 1) < 1e-6


@pytest.mark.parametrize("n", [1, 9, 64, 65, 600])
def test_cached_positions_equal_the_sinusoids_of_the_sentence_length(n):
    words = np.random.default_rng(n).normal(size=(n, 50))
    np.testing.assert_allclose(input_embeddings(words, True), words + positional_encoding(n, 50), rtol=0, atol=1e-14)
    assert_copied(input_embeddings(words, False), words)


def test_saved_head_files_get_ordinary_permissions(tmp_path):
    import os

    umask = os.umask(0o022)
    try:
        save_head(rng_head("p"), tmp_path / "p.npz")
    finally:
        os.umask(umask)
    assert (tmp_path / "p.npz").stat().st_mode & 0o777 == 0o644


# --- Delta E split, --per-head, --no-scale, neighbours in JSON ------------------------------------


def lesson_e(glove, tokens):
    return np.array([glove.get_vector(t) for t in tokens]) + positional_encoding(len(tokens), 50)


def cos_rows(a, b):
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_json_split_of_delta_into_context_and_self(run, glove):
    """The identity head: W_V = I, so self = w_ii E_i and context = sum_{j != i} w_ij E_j, recomputed here."""
    out = parse_json(run("inspect", LESSON, "--head", "identity", "--head", "identity", "--json"))
    e = lesson_e(glove, out["tokens"])
    weights = np.array(out["heads"][0]["weights"])
    own = np.diag(weights)[:, None] * e
    context = (weights - np.diag(np.diag(weights))) @ e
    for head in out["heads"]:
        np.testing.assert_allclose(head["delta_self_norms"], np.linalg.norm(own, axis=1), rtol=1e-5)
        np.testing.assert_allclose(head["delta_context_norms"], np.linalg.norm(context, axis=1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(head["delta_norms"], np.linalg.norm(own + context, axis=1), rtol=1e-5)
        np.testing.assert_allclose(head["cosines"], cos_rows(e, e + own + context), rtol=1e-5)  # this head's update alone
        np.testing.assert_allclose(head["context_cosines"], cos_rows(e, e + context), rtol=1e-5)
    np.testing.assert_allclose(out["delta_self_norms"], 2 * np.linalg.norm(own, axis=1), rtol=1e-5)
    np.testing.assert_allclose(out["delta_context_norms"], 2 * np.linalg.norm(context, axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["input_norms"], np.linalg.norm(e, axis=1), rtol=1e-5)
    np.testing.assert_allclose(out["cosines"], cos_rows(e, e + 2 * (own + context)), rtol=1e-5)
    np.testing.assert_allclose(out["context_cosines"], cos_rows(e, e + 2 * context), rtol=1e-5)
    assert out["delta_context_norms"][0] == 0  # under the causal mask the first token sees only itself


def test_json_has_the_views_neighbors_unless_zero(run, glove):
    plain = parse_json(run("inspect", "the forest", "--head", "identity", "--json"))
    assert [len(row) for row in plain["neighbors"]["input"]] == [3, 3]  # as many as the view shows by default
    assert "neighbors" not in parse_json(run("inspect", "the forest", "--head", "identity", "--neighbors", "0", "--json"))
    out = parse_json(run("inspect", "the forest", "--head", "identity", "--neighbors", "2", "--json"))
    near = out["neighbors"]
    assert set(near) == {"input", "output"} and [len(row) for row in near["input"]] == [2, 2]
    e = lesson_e(glove, ["the", "forest"])
    sims = glove.unit @ (e[1] / np.linalg.norm(e[1]))
    sims[glove.key_to_index["forest"]] = -np.inf  # the token itself is left out
    assert near["input"][1] == [glove.index_to_key[j] for j in np.argsort(-sims)[:2]]
    lines = run("inspect", "-", "--head", "identity", "--neighbors", "1", "--jsonl", input="the cat\n").stdout
    assert len(json.loads(lines)["neighbors"]["output"][1]) == 1


def test_shift_table_shows_the_context_part_and_says_what_it_is(run):
    out = run("inspect", LESSON, "--head", "identity", "--neighbors", "0", env={"COLUMNS": "160"}).stdout
    assert "‖ΔE_ctx‖" in out and "cos ctx" in out and "cos(E, E + ΔE_ctx)" in out
    assert "what the other tokens wrote" in out and "a copy of the token's own value" in out
    assert "shift from head" not in out


def test_per_head_shows_each_heads_shift(run, glove):
    result = run("inspect", "one mole of carbon", "--head", "identity", "--head", "random", "--per-head", "--neighbors", "0",
                 env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.stderr
    assert "shift from head identity alone" in result.stdout and "shift from head random alone" in result.stdout
    assert "‖ΔE_self‖" in result.stdout
    out = parse_json(run("inspect", "one mole of carbon", "--head", "identity", "--json"))
    section = result.stdout.split("shift from head identity alone")[1].split("shift from head random")[0]
    carbon = [line.split() for line in section.splitlines() if line.strip().startswith("carbon")][0]
    expected = [out["heads"][0][k][3] for k in ("delta_norms", "delta_context_norms", "delta_self_norms")]
    assert [float(x) for x in carbon[1:4]] == [round(x, 2) for x in expected]


def test_no_scale_in_json_and_in_the_view(run, glove):
    out = parse_json(run("inspect", "one mole of carbon", "--head", "identity", "--no-scale", "--stage", "masked", "--json"))
    assert out["scaled"] is False
    e = lesson_e(glove, out["tokens"])
    raw = np.where(causal_mask(4), e @ e.T, -np.inf)
    expected = softmax(raw)
    np.testing.assert_allclose(out["heads"][0]["weights"], expected, atol=1e-6)
    assert out["heads"][0]["masked"][3][0] == pytest.approx(raw[3, 0], rel=1e-5)  # not divided by sqrt(d_k)
    view = run("inspect", "one mole of carbon", "--head", "identity", "--no-scale", env=WIDE).stdout
    assert "not divided by √d_k" in view
    with_scaling = softmax(np.where(causal_mask(4), e @ e.T / np.sqrt(50), -np.inf))
    line = f"without /√d_k: mean top weight {expected.max(axis=1).mean():.2f} (with: {with_scaling.max(axis=1).mean():.2f})"
    assert line in view
    head = out["heads"][0]  # the same two numbers in the JSON
    assert (head["mean_top_weight"], head["mean_top_weight_scaled"]) == pytest.approx((expected.max(axis=1).mean(), with_scaling.max(axis=1).mean()), rel=1e-5)
    assert "without /√d_k" not in run("inspect", "one mole of carbon", "--head", "identity", env=WIDE).stdout


def test_raw_scores_come_with_the_note_that_only_differences_count(run):
    note = "adding a constant to a row changes nothing"
    for args in (("--stage", "scores"), ("--stage", "masked"), ("--focus", "mole")):
        assert note in run("inspect", "one mole of carbon", "--head", "identity", *args, env={"COLUMNS": "200"}).stdout
    assert note not in run("inspect", "one mole of carbon", "--head", "identity", env={"COLUMNS": "200"}).stdout


@pytest.mark.parametrize("options", [[], ["--json"]])
def test_the_glove_path_reads_nothing_of_the_checkpoints(options):
    """The lesson's heads never import what --model needs: the block runner, the families, the readers of
    safetensors, GGUF and tokenizers, the chat templates."""
    code = (
        "import sys\nfrom attn_cli.cli import app\n"
        f"try:\n    app(['inspect', 'the cat sat', *{options!r}], prog_name='attn')\nexcept SystemExit:\n    pass\n"
        "heavy = ('attn_cli.models.transformer', 'attn_cli.models.families', 'attn_cli.models.sources', 'attn_cli.models.weights', "
        "'attn_cli.analysis.predict', 'safetensors', 'tokenizers', 'gguf', 'jinja2')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ | {"COLUMNS": "100"})
    assert "the" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]"
