"""`attn compare`: its figures against plain NumPy loops over full forward passes, steering as Add edits of run B only,
alignment by token and by word, the head's maps, the continuations against generate, the CLI's outputs and refusals,
and the view at 80 x 24."""

import json
import math
import os
import re
import subprocess
import sys
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests import checkpoints
from tests.conftest import parse_json

LLAMA = checkpoints.FIXTURES / "tiny-llama"
TOL = 1e-5
WORDS = ["the", "cat", "sat", "on", "mat", "dog", "a", "big", "red", "house", "river", "trees"]


@cache
def tiny():
    from attn_cli.models.loading import load

    return load(str(checkpoints.tiny_llama_folder()))


def full(text: str, edits=()):  # every layer's resid_post [L, n, d] and the head maps [L, H, n, n], from a pass that keeps everything
    m = tiny()
    trace = m.forward(m.tokenize(text), edits=list(edits))
    return (np.stack([trace.get("resid_post", l) for l in range(m.n_layers)]).astype(np.float64),
            np.stack([trace.get("attn.pattern", l) for l in range(m.n_layers)]))


def loop_cos(x: np.ndarray, y: np.ndarray) -> float:
    return float(sum(a * b for a, b in zip(x, y)) / math.sqrt(sum(a * a for a in x) * sum(b * b for b in y)))


def loop_softmax(logits) -> list[float]:
    top = max(logits)
    e = [math.exp(x - top) for x in logits]
    return [x / sum(e) for x in e]


def steer_vector(scale: float = 3.0) -> np.ndarray:
    return scale * np.random.default_rng(5).standard_normal(tiny().d_model).astype(np.float32)


def steer_edits(scale: float = 3.0):
    from attn_cli.models.points import Add

    return [Add("resid_post", l, steer_vector(scale)) for l in range(1, tiny().n_layers)]


def test_per_layer_cosines_baseline_and_kl_are_the_loops_figures():
    from attn_cli import api

    a, b = "the cat sat on the river", "the trees sat on the river"  # as many tokens: aligned by token
    result = api.compare(tiny(), a, b)
    sa, sb = full(a)[0], full(b)[0]
    assert result.aligned == "token" and sa.shape[1] == sb.shape[1] == result.cosine.shape[1]
    differ = next(p for p, (x, y) in enumerate(zip(tiny().tokenize(a).ids, tiny().tokenize(b).ids)) if x != y)
    assert result.first == differ
    for l in range(tiny().n_layers):
        cos = [loop_cos(sa[l, p], sb[l, p]) for p in range(sa.shape[1])]
        np.testing.assert_allclose(result.cosine[l], cos, atol=TOL)
        assert all(c == pytest.approx(1, abs=TOL) for c in cos[:differ])  # a decoder: the same tokens before, the same streams
        assert result.mean()[l] == pytest.approx(sum(cos[differ:]) / len(cos[differ:]), abs=TOL)
        neighbours = [loop_cos(sa[l, p], sa[l, p + 1]) for p in range(1, sa.shape[1] - 1)]
        assert result.baseline[l] == pytest.approx(sum(neighbours) / len(neighbours), abs=TOL)
    logits_a, logits_b = (tiny().readout(s[-1, -2:].astype(np.float32)).astype(np.float64) for s in (sa, sb))
    pa, pb, before = loop_softmax(logits_a[1]), loop_softmax(logits_b[1]), loop_softmax(logits_a[0])
    assert result.kl[0] == pytest.approx(sum(p * math.log(p / q) for p, q in zip(pa, pb)), rel=1e-4)
    assert result.kl[1] == pytest.approx(sum(q * math.log(q / p) for p, q in zip(pa, pb)), rel=1e-4)
    assert result.kl_scale == pytest.approx(sum(p * math.log(p / q) for p, q in zip(pa, before)), rel=1e-4)
    assert result.apart() == [l for l in range(tiny().n_layers) if result.mean()[l] < result.baseline[l]]
    np.testing.assert_allclose(result.ratio(), (1 - result.mean()) / (1 - result.baseline))


def test_the_tokens_listed_are_each_runs_top_and_those_that_rose_and_fell_most():
    from attn_cli import api

    a, b = "the cat sat on the river", "the trees sat on the river"
    result = api.compare(tiny(), a, b, top=4)
    rows = {r["id"]: r for r in result.top_a + result.top_b + result.rose + result.fell}
    ids = sorted(rows)
    pa = {i: rows[i]["a"] for i in ids}
    pb = {i: rows[i]["b"] for i in ids}
    assert [r["a"] for r in result.top_a] == sorted((r["a"] for r in result.top_a), reverse=True)
    assert [r["b"] for r in result.top_b] == sorted((r["b"] for r in result.top_b), reverse=True)
    changes = [r["b"] - r["a"] for r in result.rose]
    assert changes == sorted(changes, reverse=True) and all(c > 0 for c in changes)
    falls = [r["a"] - r["b"] for r in result.fell]
    assert falls == sorted(falls, reverse=True) and all(c > 0 for c in falls)
    m = tiny()
    sa, sb = full(a)[0], full(b)[0]
    full_a = loop_softmax(m.readout(sa[-1, -1:].astype(np.float32))[0].astype(np.float64))
    full_b = loop_softmax(m.readout(sb[-1, -1:].astype(np.float32))[0].astype(np.float64))
    change = np.array(full_b) - np.array(full_a)
    assert [r["id"] for r in result.rose] == [int(j) for j in np.argsort(-change, kind="stable")[:4] if change[j] > 0]
    assert [r["id"] for r in result.fell] == [int(j) for j in np.argsort(change, kind="stable")[:4] if change[j] < 0]
    for i in ids:
        assert pa[i] == pytest.approx(full_a[i], abs=1e-9) and pb[i] == pytest.approx(full_b[i], abs=1e-9)


def test_steering_is_an_add_edit_of_run_b_only_where_llama_cpp_adds_it():
    from attn_cli import api

    text = "the cat sat on the mat"
    result = api.compare(tiny(), text, steer=steer_edits())
    plain, steered = full(text)[0], full(text, steer_edits())[0]
    assert result.first == 0 and result.mean_from() == 1 and result.texts == (text, text)  # the mean leaves out position 0, the sink
    np.testing.assert_allclose(result.mean(), result.cosine[:, 1:].mean(axis=1))
    np.testing.assert_allclose(result.cosine[0], 1, atol=TOL)  # resid_post[0] is never steered
    np.testing.assert_allclose(steered[1], plain[1] + steer_vector(), rtol=1e-4, atol=1e-4)  # layer 1: its own output + v
    for l in range(tiny().n_layers):
        np.testing.assert_allclose(result.cosine[l], [loop_cos(x, y) for x, y in zip(plain[l], steered[l])], atol=TOL)


def test_the_same_text_unsteered_is_two_identical_runs():
    from attn_cli import api

    result = api.compare(tiny(), "the cat sat", "the cat sat")
    assert result.first is None and result.mean() is None and result.apart() == []
    np.testing.assert_allclose(result.cosine, 1, atol=TOL)
    assert result.kl == (pytest.approx(0, abs=1e-9), pytest.approx(0, abs=1e-9))


def test_texts_of_different_token_counts_align_by_word_at_each_words_last_piece():
    from attn_cli import api
    from attn_cli.analysis.units import groups

    a, b = "the cat sat on the mat", "the dog sat on the mat"  # tiny-llama: "dog" is three pieces, "cat" one, "mat" two
    m = tiny()
    ta, tb = m.tokenize(a), m.tokenize(b)
    assert len(ta.ids) != len(tb.ids)
    result = api.compare(m, a, b, head=(1, 2))
    ua, ub = groups(ta, True)[0], groups(tb, True)[0]
    sa, maps_a = full(a)
    sb, maps_b = full(b)
    assert result.aligned == "word" and result.labels[1][2] == "dog"
    for l in range(m.n_layers):
        np.testing.assert_allclose(result.cosine[l], [loop_cos(sa[l, x[-1]], sb[l, y[-1]]) for x, y in zip(ua, ub)], atol=TOL)
    for got, pattern, units in ((result.maps[0], maps_a[1, 2], ua), (result.maps[1], maps_b[1, 2], ub)):
        for i, rows in enumerate(units):
            for j, cols in enumerate(units):
                want = sum(pattern[r, c] for r in rows for c in cols) / len(rows)
                assert (np.isnan(got[i, j]) and j > i) or got[i, j] == pytest.approx(want, abs=1e-6)


def test_the_head_maps_are_the_passes_own_patterns_masked_where_a_query_cannot_see():
    from attn_cli import api

    a, b = "the cat sat on the mat", "the river sat on the mat"
    result = api.compare(tiny(), a, b, head=(0, 3))
    for got, text in zip(result.maps, (a, b)):
        pattern = full(text)[1][0, 3]
        n = len(pattern)
        upper = np.triu(np.ones((n, n), bool), 1)
        assert np.isnan(got[upper]).all()
        np.testing.assert_allclose(got[~upper], pattern[~upper], atol=1e-6)
    assert result.to_dict()["head"]["difference"][0][1] is None


def test_the_continuations_are_generates_greedy_ones_and_part_where_they_first_differ():
    from attn_cli import api
    from attn_cli.analysis.generate import GenerateSettings, Generation

    text = "the cat sat"
    result = api.compare(tiny(), text, steer=steer_edits(6.0), generate=5)
    ids = []
    for edits in ([], steer_edits(6.0)):
        run = Generation(tiny(), text, GenerateSettings(steps=5, steer=edits))
        list(run)
        ids.append([s.id for s in run.steps])
    c = result.continuations
    assert c["a"]["ids"] == ids[0] and c["b"]["ids"] == ids[1]
    assert c["part"] == next((k for k, (x, y) in enumerate(zip(*ids)) if x != y), None)
    assert "".join(c["a"]["texts"]) == tiny().tokenizer.decode(ids[0], skip_special_tokens=False)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=2, max_size=5), st.lists(st.sampled_from(WORDS), min_size=2, max_size=5))
def test_swapping_a_and_b_keeps_the_cosines_and_swaps_the_kl(x, y):
    from attn_cli import api
    from attn_cli.errors import InputError

    a, b = " ".join(x), " ".join(y)
    try:
        ab = api.compare(tiny(), a, b)
    except InputError:
        return  # different word counts
    ba = api.compare(tiny(), b, a)
    np.testing.assert_allclose(ab.cosine, ba.cosine, atol=1e-6)
    assert ab.kl[0] == pytest.approx(ba.kl[1], rel=1e-6, abs=1e-9) and ab.first == ba.first
    assert np.all(ab.cosine <= 1 + 1e-6)


@pytest.fixture
def control_vector(tmp_path):
    from attn_cli.io.control_vector import write_control_vector

    directions = np.stack([np.zeros(tiny().d_model)] + [steer_vector(1.0)] * (tiny().n_layers - 1))
    return write_control_vector(tmp_path / "v.gguf", directions, "llama", force=False)


def test_the_cli_json_is_the_apis_result(run, control_vector):
    from attn_cli import api
    from attn_cli.models.points import Add

    got = parse_json(run("compare", "the cat sat on the mat", "--steer", f"{control_vector}:3", "--model", LLAMA, "--json", "--head", "1.0",
                         "-n", "3"))
    edits = [Add("resid_post", 1, np.float32(3) * steer_vector(1.0))]
    want = api.compare(tiny(), "the cat sat on the mat", steer=edits, head=(1, 0), generate=3).to_dict()
    assert got["steered"] == [{"file": str(control_vector), "scale": 3.0, "layers": [1]}]
    for key in ("layers", "aligned", "first_difference", "apart_layers", "positions", "continuations"):
        assert got[key] == json.loads(json.dumps(want[key])), key
    assert got["next_token"]["kl_a_b"] == pytest.approx(want["next_token"]["kl_a_b"])
    assert got["head"]["a"] == json.loads(json.dumps(want["head"]["a"]))


def test_csv_has_a_row_a_layer(run):
    done = run("compare", "the cat sat", "the dog sat", "--model", LLAMA, "--csv")
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.strip().split("\n")
    assert lines[0] == "layer,cosine_last,cosine_mean,neighbours_cosine,distance_ratio" and len(lines) == 1 + tiny().n_layers


@pytest.mark.parametrize("args, says", [
    (["the cat sat"], "give a second text B, or --steer"),
    (["the cat sat", "the big red dog sat down"], "compare aligns the two texts by token or by word"),
    (["the cat sat", "the dog sat", "--head", "2.0"], "--head 2.0: tiny-llama has layers 0 to 1"),
    (["the cat sat", "the dog sat", "--head", "x"], "--head 'x': give LAYER.HEAD"),
    (["the cat sat", "--steer", "VECTOR:nan"], "the scale must be a finite number, not nan"),
    (["the cat sat", "--steer", "VECTOR:inf"], "the scale must be a finite number, not inf"),
    (["the cat sat", "--steer", "VECTOR:-inf"], "the scale must be a finite number, not -inf"),
    (["the cat sat", "--steer", "nothing.gguf"], "--steer nothing.gguf: no such file"),
    (["", "the cat"], "A"),
])
def test_bad_input_is_one_line_and_exit_2(run, control_vector, args, says):
    args = [a.replace("VECTOR", str(control_vector)) for a in args]
    done = run("compare", *args, "--model", LLAMA)
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.startswith("attn: ") and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr


def attn(*args, columns: int = 80, cwd=None) -> subprocess.CompletedProcess:
    env = os.environ | {"COLUMNS": str(columns), "LINES": "24", "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-m", "attn_cli", *map(str, args)], capture_output=True, text=True, env=env, timeout=300, cwd=cwd)


def fits(out: str, width: int = 80) -> list[str]:
    lines = out.rstrip("\n").split("\n")
    assert all(len(l.rstrip()) <= width for l in lines), [l for l in lines if len(l.rstrip()) > width]
    return lines


def test_a_real_subprocess_fits_80_columns_and_writes_its_page(tmp_path):
    page = tmp_path / "c.html"
    done = attn("compare", "the cat sat on the mat", "the dog sat on the mat", "--model", LLAMA, "--head", "1.2", "-n", "4", "--page", page)
    assert done.returncode == 0, done.stderr
    lines = fits(done.stdout)
    assert lines[3].startswith("cos(A, B) by word, per layer: last position; mean of 2..6; nb: A at p vs p + 1")
    assert lines[-2] == "greedy, 4 tokens: the same continuation in both runs" and lines[-1].startswith("A, B '")  # the tiny model's
    assert done.stderr.startswith(f"attn: wrote {page}") and "<!DOCTYPE html>" in page.read_text(encoding="utf-8")


@pytest.mark.slow
def test_smollm2s_comparison_of_a_steered_run_fits_80x24(tmp_path):
    model = checkpoints.smollm2_gguf()
    pairs = checkpoints.FIXTURES.parents[2] / "data" / "directions" / "plural.tsv"
    made = attn("direction", "--pairs", pairs, "--model", model, "-o", "plural.gguf", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    done = attn("compare", "In the garden I saw a", "--steer", "plural.gguf:0.05", "--model", model, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = fits(done.stdout)
    assert len(lines) <= 23, done.stdout  # the whole comparison on one screen, the prompt below it
    assert lines[2].startswith("B the same text, steered: ") and re.match(r"\s+9 .* │\s+19 .* │\s+29 ", lines[14])
    assert lines[-6].split()[:4] == ["A", "p", "B", "p"] and len(lines[-5:]) == 5


def test_the_continuations_stand_side_by_side_from_where_they_part_within_80_columns():
    import io

    from rich.console import Console

    from attn_cli import api
    from attn_cli.views.compare import compare_view

    result = api.compare(tiny(), "the cat sat", steer=steer_edits(6.0), generate=6)
    c = result.continuations
    c["a"]["texts"], c["b"]["texts"], c["part"] = ["x", " shared", " a long tail " * 6], ["x", " shared", " b\nother"], 2
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    for part in compare_view(result):
        console.print(part)
    lines = fits(out.getvalue())
    at = lines.index("greedy, 6 tokens: the same 2 tokens, 'x shared', then they part")
    assert lines[at + 1].split() == ["A", "…", "│", "B", "…"] and lines[at + 3].split("│")[1].strip() == "b\\nother"
    assert " ".join(l.split("│")[0].strip() for l in lines[at + 3 :]).split() == ("a long tail " * 6).split()
