"""`attn heads detect`: TransformerLens's head detector (its worked example, its patterns written out as it writes them),
the repeated random sequence, the baselines, and the heads it finds in MiniLM and SmolLM2."""

import json
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from attn_cli.analysis import detect
from attn_cli.analysis.find import find_heads
from attn_cli.heads.links import link_set, read_links
from attn_cli.models import loading
from tests import checkpoints
from tests.exact import assert_same_ids

# The 4 x 4 example of TransformerLens's demos/Head_Detector_Demo.ipynb: a head's weights and the previous-token pattern.
DEMO = np.array([[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0.2, 0.3, 0.5, 0], [0.1, 0.15, 0.5, 0.25]])
DEMO_PATTERN = np.array([[0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], dtype=bool)


@cache
def minilm():
    return loading.load(str(checkpoints.minilm_folder()))


@pytest.mark.parametrize("error, exclude, shown, within", [  # the figures the demo prints, and how many digits it gives
    ("mul", False, 0.325, 1e-12),  # 1.3 / 4
    ("mul", True, 0.842, 5e-4),  # "0.8 / 0.95 instead, or ~0.842"
    ("abs", False, -0.1, 1e-12),  # 1 - 4 x 0.275
    ("abs", True, 0.6625, 1e-12),
])
def test_the_demo_worked_example(error, exclude, shown, within):
    got = detect.pattern_scores(DEMO, DEMO_PATTERN, error, exclude_bos=exclude, exclude_current=exclude)
    assert got == pytest.approx(shown, abs=within)
    if error == "mul" and exclude:
        assert got == pytest.approx(0.8 / 0.95, abs=1e-12)


def test_the_previous_pattern_is_the_demos():
    assert_same_ids(detect.targets("previous", [5, 6, 7, 8], [False] * 4), DEMO_PATTERN)


def transformer_lens_patterns(tokens: list[int]) -> dict[str, np.ndarray]:
    """get_*_detection_pattern of transformer_lens/head_detector.py, step by step as it writes them (in NumPy)."""
    n = len(tokens)
    previous = np.zeros((n, n))
    previous[1:, :-1] = np.eye(n - 1)
    repeated = np.tile(np.array(tokens), (n, 1))  # tokens.repeat(n, 1)
    duplicate = np.equal(repeated, repeated.T).astype(int)
    np.fill_diagonal(duplicate, 0)
    duplicate = np.tril(duplicate)
    shifted = np.roll(duplicate, 1, axis=1)
    induction = np.tril(np.concatenate([np.zeros((n, 1)), shifted[:, 1:]], axis=1))
    return {"previous": np.tril(previous), "duplicate": duplicate, "induction": induction}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=2, max_size=24))
def test_previous_duplicate_and_induction_are_transformer_lens_patterns(tokens):
    for name, theirs in transformer_lens_patterns(tokens).items():
        assert_same_ids(detect.targets(name, tokens, [False] * len(tokens)), theirs.astype(bool))


def loop_score(a: np.ndarray, p: np.ndarray, error: str, exclude_bos: bool, exclude_current: bool) -> float:
    """compute_head_attention_similarity_score, element by element (without its rounding of abs to 3 decimals)."""
    n = len(a)
    a, diff = a.copy(), np.abs(a - p)
    for i in range(n):
        for j in range(n):
            if (exclude_bos and j == 0) or (exclude_current and i == j):
                a[i, j] = diff[i, j] = 0.0
    if error == "mul":
        return sum(a[i, j] * p[i, j] for i in range(n) for j in range(n)) / sum(a[i, j] for i in range(n) for j in range(n))
    return 1 - sum(diff[i, j] for i in range(n) for j in range(n)) / n


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9), st.integers(0, 2**31), st.sampled_from(detect.PATTERNS), st.sampled_from(["mul", "abs"]), st.booleans(), st.booleans())
def test_scores_of_a_stack_match_a_plain_loop(n, seed, name, error, exclude_bos, exclude_current):
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.ones(n), size=(2, 3, n))  # [2, 3, n, n], rows summing to 1
    ids = rng.integers(0, 3, n).tolist()
    pattern = detect.targets(name, ids, [i == 0 for i in range(n)])
    got = detect.pattern_scores(weights, pattern, error, exclude_bos, exclude_current)
    for cell in np.ndindex(2, 3):
        assert got[cell] == pytest.approx(loop_score(weights[cell], pattern.astype(float), error, exclude_bos, exclude_current), abs=1e-12)


def test_a_pattern_with_nothing_left_after_the_exclusions_is_not_scored():
    assert not detect.scorable(detect.targets("first", [1, 2, 3], [False] * 3), exclude_bos=True, exclude_current=False)
    assert not detect.scorable(detect.targets("self", [1, 2, 3], [False] * 3), exclude_bos=False, exclude_current=True)
    assert not detect.scorable(detect.targets("special", [1, 2, 3], [False] * 3), False, False)


def test_the_baselines_are_even_attention_and_one_random_visible_key():
    even, one = detect.baseline_weights(6, True, np.random.default_rng(3))
    assert np.allclose(even, np.tril(np.ones((6, 6))) / np.arange(1, 7)[:, None])
    assert set(np.unique(one)) <= {0.0, 1.0}  # so the sums below are counts
    assert_same_ids(one.astype(np.int64).sum(axis=1), np.ones(6, np.int64))
    assert_same_ids(np.triu(one, 1) != 0, np.zeros((6, 6), bool))


def test_the_repeated_sequence_is_distinct_tokens_twice_inside_the_models_special_tokens():
    model = minilm()
    tokens = detect.repeated_tokens(model, 30, seed=4)
    ids = tokens.ids[1:-1]
    assert tokens.pieces[0] == "[CLS]" and tokens.pieces[-1] == "[SEP]" and tokens.special == [True] + [False] * 60 + [True]
    assert ids[:30] == ids[30:] and len(set(ids[:30])) == 30
    for i in ids[:30]:  # each stands for its own text
        assert model.tokenizer.encode(model.tokenizer.decode([i]), add_special_tokens=False).ids == [i]
    assert detect.repeated_tokens(model, 30, seed=4).ids == tokens.ids != detect.repeated_tokens(model, 30, seed=5).ids


@pytest.mark.slow
def test_minilms_previous_token_head_is_the_one_heads_find_names(run):
    done = run("heads", "detect", "--model", checkpoints.minilm_folder(), "--pattern", "previous", "--json")
    assert done.exit_code == 0, done.stderr
    found = json.loads(done.stdout)
    best, second = found["patterns"]["previous"][:2]
    named = find_heads(minilm(), read_links(link_set("previous")), "previous").heads[0]
    assert (best["layer"], best["head"]) == (named["layer"], named["head"]) == (0, 2)
    base = found["baselines"]["previous"]
    assert best["score"] > 0.8 and best["score"] > 2 * second["score"] and best["score"] > 5 * max(base["even"], base["random"])
    assert found["text"] == {"source": "data/links/previous.tsv", "sentences": 42} and found["repeated"] is None
    assert len(found["patterns"]["previous"]) == 72


def test_every_format_of_heads_detect(run, tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("The cat sat on the mat.\n\nA dog barked at the cat.\n", encoding="utf-8")
    args = ("heads", "detect", "--model", checkpoints.minilm_folder(), "--text", text, "--length", "12", "--seed", "2")
    table = run(*args, "--top", "2")
    assert table.exit_code == 0 and "previous: weight on the token just before · on 2 sentences of" in table.stdout
    assert "duplicate: weight on an earlier copy of the query's token · on a random sequence of 12 tokens (seed 2)" in table.stdout.replace("\n", " ")
    assert "even (baseline)" in table.stdout and "layer↓ head→" in table.stdout
    doc = json.loads(run(*args, "--json").stdout)
    assert list(doc["patterns"]) == list(detect.PATTERNS) and doc["repeated"] == {"length": 12, "seed": 2}
    assert doc["sequences"] == {"previous": 2, "duplicate": 1, "induction": 1, "first": 2, "special": 2, "self": 2}
    for name, heads in doc["patterns"].items():
        scores = [h["score"] for h in heads]
        assert scores == sorted(scores, reverse=True) and set(doc["baselines"][name]) == {"even", "random"}
    rows = run(*args, "--csv").stdout.splitlines()
    assert rows[0] == "pattern,rank,layer,head,score,even,random,measure,sequences" and len(rows) == 1 + 6 * 72
    abs_doc = json.loads(run(*args, "--error", "abs", "--exclude-bos", "--exclude-current", "--json").stdout)
    assert abs_doc["measure"] == "abs" and abs_doc["exclude_bos"] and abs_doc["sequences"]["self"] == 0
    assert all(h["score"] is None for h in abs_doc["patterns"]["self"]) and all(-1 <= h["score"] <= 1 for h in abs_doc["patterns"]["previous"])


def test_the_text_is_an_argument_as_inspect_and_predict_take_it(run, tmp_path):
    """One sentence as TEXT, `-` for one a line from stdin, or --text FILE: the same scores from each."""
    model, sentence = checkpoints.minilm_folder(), "The cat sat on the mat."
    (tmp_path / "one.txt").write_text(sentence + "\n", encoding="utf-8")
    docs = [json.loads(run("heads", "detect", "--model", model, *args, "--pattern", "previous", "--json", input=given).stdout)
            for args, given in ((["--text", tmp_path / "one.txt"], None), ([sentence], None), (["-"], sentence + "\n"))]
    assert [d["text"] for d in docs] == [{"source": str(tmp_path / "one.txt"), "sentences": 1}, {"source": "TEXT", "sentences": 1},
                                         {"source": "stdin", "sentences": 1}]
    for doc in docs[1:]:
        for ours, theirs in zip(doc["patterns"]["previous"], docs[0]["patterns"]["previous"]):
            assert (ours["layer"], ours["head"]) == (theirs["layer"], theirs["head"]) and ours["score"] == pytest.approx(theirs["score"], abs=1e-6)
    shown = run("heads", "detect", "--model", model, sentence, "--pattern", "previous", env={"COLUMNS": "150"}).stdout
    assert "previous: weight on the token just before · on the sentence given" in shown
    piped = run("heads", "detect", "--model", model, "-", "--pattern", "previous", input=sentence + "\n", env={"COLUMNS": "150"}).stdout
    assert "· on 1 sentence of stdin" in piped  # one sentence, not "1 sentences"
    both = run("heads", "detect", "--model", model, sentence, "--text", tmp_path / "one.txt")
    assert both.exit_code == 2 and both.stdout == "" and "as TEXT or from --text FILE, not both" in both.stderr


def test_the_argument_in_a_real_process():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "attn_cli", "heads", "detect", "--model", str(checkpoints.tiny_gpt2_folder()),
                           "the cat sat on the mat", "--pattern", "previous", "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr == "" and json.loads(done.stdout)["text"] == {"source": "TEXT", "sentences": 1}


def test_a_pattern_without_a_score_says_why(run):
    gpt2 = checkpoints.tiny_gpt2_folder()  # GPT-2's tokenizer adds no special token
    special = run("heads", "detect", "--model", gpt2, "the cat sat", "--pattern", "special", env={"COLUMNS": "200"}).stdout
    assert "tiny-gpt2's tokenizer adds no special token ([CLS], [SEP], BOS...) to the sentence, so no key fits the pattern: no score" in special
    first = run("heads", "detect", "--model", gpt2, "the cat sat", "--pattern", "first", "--exclude-bos", env={"COLUMNS": "200"}).stdout
    assert "--exclude-bos leaves out the first token, this pattern's only key: no score" in first
    own = run("heads", "detect", "--model", gpt2, "the cat sat", "--pattern", "self", "--exclude-current", env={"COLUMNS": "200"}).stdout
    assert "--exclude-current leaves out each query's weight on itself, this pattern's only key: no score" in own


@pytest.mark.parametrize("args, message", [
    ((), "heads detect needs --model"),
    (("--model", "{minilm}", "--length", "300", "--pattern", "induction"), "--length 300: twice 300 tokens is more than the 512 positions"),
    (("--model", "{minilm}", "--text", "{missing}"), "no such file"),
])
def test_bad_input_is_one_line(run, tmp_path, args, message):
    args = [a.format(minilm=checkpoints.minilm_folder(), missing=tmp_path / "nope.txt") for a in args]
    done = run("heads", "detect", *args)
    assert done.exit_code == 2 and done.stdout == "" and message in done.stderr and done.stderr.count("\n") == 1


@pytest.mark.slow
def test_smollm2_has_induction_heads_and_a_first_token_sink(run):
    done = run("heads", "detect", "--model", checkpoints.smollm2_gguf(), "--pattern", "induction", "--json")
    found = json.loads(done.stdout)
    best, base = found["patterns"]["induction"][0], found["baselines"]["induction"]
    assert best["score"] > 0.3 > 10 * max(base["even"], base["random"])


@pytest.mark.parametrize("measure", ["mul", "abs"])
def test_the_score_measure_is_named_measure_not_error(run, measure):
    """JSON and CSV say how the scores were computed as `measure` (--error's value): no key reads like a failure."""
    args = ("--model", checkpoints.tiny_gpt2_folder(), "--error", measure)
    doc = json.loads(run("heads", "detect", "the cat sat", *args, "--pattern", "previous", "--json").stdout)
    assert doc["measure"] == measure and "error" not in doc
    rows = run("heads", "detect", "the cat sat", *args, "--pattern", "previous", "--csv").stdout.splitlines()
    header = rows[0].split(",")
    assert "error" not in header and {r.split(",")[header.index("measure")] for r in rows[1:]} == {measure}
    stats = json.loads(run("heads", "stats", "-", *args, "--json", input="the cat sat\n").stdout)
    assert stats["measure"] == measure and "error" not in stats
