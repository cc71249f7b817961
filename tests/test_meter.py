"""The sense meter on real models: prototypes and readings against a plain loop, the controls, `inspect --model --sense*`,
`attn senses eval` (CliRunner and a subprocess), Wilson intervals against SciPy, and the lesson's heads in the same shape."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_cli.analysis import meter, meter_eval
from attn_cli.errors import InputError
from attn_cli.models.loading import load
from conftest import parse_json
from tests import checkpoints

SENSES = {"animal": ["mammal", "burrow"], "chemistry": ["molecule", "grams"]}
KEYS = {"word", "senses", "method", "layers", "alone"}
READING_KEYS = {"layer", "scores", "nearest", "margin"}


@pytest.fixture(scope="module")
def minilm():
    return load(str(checkpoints.minilm_folder()))


@pytest.fixture(scope="module")
def gpt2():
    return load(str(checkpoints.tiny_gpt2_folder()))


# --- an independent recomputation -------------------------------------------------------------


def loop_vector(trace, start: int, end: int) -> list[list[float]]:
    """The mean of the hidden states of the pieces overlapping characters start:end, layer by layer, one number at a time."""
    t = trace.tokens
    pieces = [i for i in range(len(t.ids)) if not t.special[i] and t.offsets[i][0] < end and t.offsets[i][1] > start]
    out = []
    for layer in trace.streams():
        out.append([sum(float(layer[i][k]) for i in pieces) / len(pieces) for k in range(layer.shape[1])])
    return out


def loop_unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def loop_prototype(model, word: str, probes: list[str], templates) -> list[list[float]]:
    rows = []
    for probe in probes:
        for template in templates:
            start = len(template.split("{word}")[0].replace("{probe}", probe))
            text = template.replace("{probe}", probe).replace("{word}", word)
            rows.append([loop_unit(v) for v in loop_vector(model.run(text), start, start + len(word))])
    return [[sum(r[l][k] for r in rows) / len(rows) for k in range(len(rows[0][l]))] for l in range(len(rows[0]))]


def loop_cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_the_meter_matches_a_plain_loop(minilm):
    """Scores, nearest sense and margin at every layer, in context and alone, recomputed without NumPy's help."""
    sentence = "One mole of carbon dioxide."
    trace = minilm.run(sentence)
    pieces = meter.span_pieces(trace.tokens, meter.word_span(sentence, "mole"))
    got = meter.context_meter(minilm, trace, pieces, "mole", SENSES)
    templates = meter.TEMPLATE_SETS["full"]
    protos = {name: loop_prototype(minilm, "mole", probes, templates) for name, probes in SENSES.items()}
    start = sentence.index("mole")
    for readings, x in ((got.layers, loop_vector(trace, start, start + 4)), (got.alone, loop_vector(minilm.run("mole"), 0, 4))):
        assert len(readings) == minilm.n_layers + 1
        for l, reading in enumerate(readings):
            want = [loop_cos(x[l], protos[name][l]) for name in SENSES]
            assert reading.scores == pytest.approx(want, abs=2e-6)
            assert reading.margin == pytest.approx(abs(want[0] - want[1]), abs=4e-6)
            assert reading.nearest == (list(SENSES)[int(np.argmax(want))] if abs(want[0] - want[1]) > 1e-5 else reading.nearest)
    assert got.templates == list(templates) and not got.causal and len(templates) == 7


def test_prototypes_are_computed_once_per_word_and_sense_set(minilm, monkeypatch):
    calls = []
    real = type(minilm).run
    monkeypatch.setattr(type(minilm), "run", lambda self, text, *a, **k: calls.append(text) or real(self, text, *a, **k))
    senses = {"a": ["shrew"], "b": ["grams"]}
    first = meter.prototypes(minilm, "mole", senses, meter.SHORT_TEMPLATES)
    assert len(calls) == 6
    assert meter.prototypes(minilm, "mole", senses, meter.SHORT_TEMPLATES) is first and len(calls) == 6
    meter.prototypes(minilm, "mole", {"a": ["shrew"], "b": ["atoms"]}, meter.SHORT_TEMPLATES)
    assert len(calls) == 12  # another sense set: its own prototypes


# --- readings: invariants -------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4).flatmap(lambda s: st.tuples(st.just(s), st.lists(st.lists(st.floats(-1, 1), min_size=s, max_size=s), min_size=1, max_size=5))))
def test_readings_nearest_margin_and_ties(case):
    s, rows = case
    names = [f"s{k}" for k in range(s)]
    got = meter.readings(np.array(rows), names, [str(l) for l in range(len(rows))])
    for row, reading in zip(rows, got):
        best = max(row)
        assert reading.margin == pytest.approx(best - sorted(row)[-2] if s > 1 else 0.0)
        assert reading.margin >= 0
        assert set(reading.tied) == {n for n, x in zip(names, row) if best - x <= meter.TIE}
        assert reading.nearest == (reading.tied[0] if len(reading.tied) == 1 else None)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3), st.permutations([0, 1, 2]))
def test_readings_do_not_depend_on_the_order_of_the_senses(row, order):
    names = ["a", "b", "c"]
    one = meter.readings(np.array([row]), names, ["E"])[0]
    other = meter.readings(np.array([[row[i] for i in order]]), [names[i] for i in order], ["E"])[0]
    assert (one.nearest, one.margin, sorted(one.tied)) == (other.nearest, other.margin, sorted(other.tied))


# --- the controls ---------------------------------------------------------------------------------


def test_the_masked_control_keeps_only_the_word_and_the_special_tokens(minilm, monkeypatch):
    seen = []
    real = type(minilm).forward
    monkeypatch.setattr(type(minilm), "forward", lambda self, tokens, *a, **k: seen.append(tokens) or real(self, tokens, *a, **k))
    trace = minilm.run("Take a biopsy of the mole.")
    pieces = meter.span_pieces(trace.tokens, meter.word_span(trace.tokens.text, "mole"))
    fill, name = meter.filler(minilm)
    meter.masked_trace(minilm, trace.tokens, pieces, fill)
    masked = seen[-1]
    assert name == "[MASK]"
    for i, (a, b) in enumerate(zip(trace.tokens.ids, masked.ids)):
        assert b == (a if trace.tokens.special[i] or i in pieces else fill)
    assert meter.filler(load(str(checkpoints.tiny_gpt2_folder())))[1] == "<|endoftext|>"  # a decoder without a mask token


@pytest.mark.slow
def test_the_word_alone_scores_chance_when_each_word_has_one_case_per_sense(minilm, tmp_path):
    """The word alone reads the same for every case of the word, so over balanced cases it resolves exactly half, at every layer."""
    cases = tmp_path / "cases.tsv"
    cases.write_text("\n".join([
        "A shrew dug a tunnel and the mole followed.\tmole\tmammal burrow\tmolecule grams",
        "Chemists weighed one mole of salt.\tmole\tmolecule grams\tmammal burrow",
        "We paddled to the muddy bank.\tbank\triver shore\tmoney loan",
        "She took a loan from the bank.\tbank\tmoney loan\triver shore",
    ]) + "\n", encoding="utf-8")
    result = meter_eval.evaluate(minilm, meter_eval.read_cases(cases, None), "cases.tsv", "short")
    assert result.cases == 4 and result.chance == pytest.approx(0.5, abs=1e-12) and result.words == 2
    assert [r["alone"]["resolved"] for r in result.layers] == [0.5] * (minilm.n_layers + 1)
    assert result.layers[-1]["context"]["resolved"] > 0.5


# --- Wilson intervals -------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_matches_scipy(kn):
    from scipy.stats import binomtest

    k, n = kn
    want = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = meter_eval.wilson(k, n)
    assert (low, high) == pytest.approx((want.low, want.high), abs=1e-6)
    assert -1e-12 <= low <= k / n + 1e-12 and k / n <= high + 1e-12 <= 1 + 2e-12


# --- inspect --model ------------------------------------------------------------------------------


@pytest.mark.slow
def test_inspect_model_writes_the_meter_in_its_json_shape(run):
    doc = parse_json(run("inspect", "One mole of carbon dioxide.", "--model", checkpoints.minilm_folder(), "--sense-set", "lesson", "--json"))
    got = doc["sense_meter"]
    assert KEYS <= set(got) and got["word"] == "mole" and got["senses"] == ["animal", "chemistry", "skin"]
    assert [r["layer"] for r in got["layers"]] == list(range(7)) == [r["layer"] for r in got["alone"]]
    for r in got["layers"] + got["alone"]:
        assert READING_KEYS <= set(r) and set(r["scores"]) == set(got["senses"])
    assert got["layers"][-1]["nearest"] == "chemistry" and got["causal"] is False and len(got["templates"]) == 7


@pytest.mark.slow
def test_inspect_model_shows_the_meter_through_the_layers(run):
    result = run("inspect", "the Eiffel tower", "--model", checkpoints.minilm_folder(), "--sense-set", "lesson", "--focus", "tower",
                 env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "sense meter: 'tower' against prototypes of the word itself" in out
    assert "alone (margin)" in out and "a decoder" not in out


@pytest.mark.parametrize("args, message", [
    (["--sense", "a=x,y"], "--sense with --model measures one word: name it with --focus WORD"),
    (["--sense", "a=x", "--sense-set", "lesson", "--focus", "mole"], "--sense and --sense-set exclude each other"),
    (["--sense-set", "nowhere"], "unknown sense set 'nowhere'"),
])
def test_inspect_model_sense_errors_are_one_line(run, args, message):
    result = run("inspect", "the mole", "--model", checkpoints.minilm_folder(), *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"attn: {message}") and result.stderr.count("\n") == 1


def test_a_word_without_senses_says_so(run):
    assert parse_json(run("inspect", "the cat sat", "--model", checkpoints.minilm_folder(), "--sense-set", "lesson", "--json"))["sense_meter"] is None
    shown = run("inspect", "the cat sat", "--model", checkpoints.minilm_folder(), "--sense-set", "lesson")
    assert shown.exit_code == 0 and shown.stderr == "attn: none of the words has senses in sense set lesson: nothing to measure\n"
    assert "sense meter" not in shown.stdout


def test_a_decoder_reads_only_the_context_before_the_word(run, gpt2):
    doc = parse_json(run("inspect", "the mole", "--model", checkpoints.tiny_gpt2_folder(), "--sense", "a=burrow", "--sense", "b=grams",
                         "--focus", "mole", "--words", "--json"))["sense_meter"]
    assert doc["causal"] is True and doc["templates"] == list(meter.templates_for(True))
    assert all(t.index("{probe}") < t.index("{word}") for t in doc["templates"]) and len(doc["templates"]) == 5
    shown = run("inspect", "the mole", "--model", checkpoints.tiny_gpt2_folder(), "--sense", "a=burrow", "--sense", "b=grams", "--focus", "mole",
                "--words", env={"COLUMNS": "120"}).stdout
    assert "a decoder: 'mole' sees only the words before it, so only that context counts" in shown


# --- the lesson's heads, in the same shape --------------------------------------------------------------


def test_the_glove_meter_has_the_same_shape_and_the_old_numbers(run):
    doc = parse_json(run("inspect", "One mole of carbon dioxide.", "--sense-set", "lesson", "--mask", "none", "--json"))
    old, new = doc["senses"][0], doc["sense_meter"]
    assert KEYS <= set(new) and new["index"] == old["index"] == 1 and [r["label"] for r in new["layers"]] == ["E", "E′"]
    for s in old["senses"]:
        assert new["layers"][0]["scores"][s["name"]] == pytest.approx(s["before"], abs=2e-6)
        assert new["layers"][1]["scores"][s["name"]] == pytest.approx(s["after"], abs=2e-6)
    assert (new["layers"][0]["nearest"], new["layers"][1]["nearest"]) == (old["nearest_before"], old["nearest_after"])
    assert len(new["alone"]) == 2


def test_the_glove_meter_alone_is_the_word_as_the_whole_input(run, glove):
    from attn_cli.analysis import senses
    from attn_cli.core.attention import Mask
    from attn_cli.heads.registry import resolve_heads
    from attn_cli.models.glove import GloveModel, Settings

    doc = parse_json(run("inspect", "Take a biopsy of the mole.", "--sense-set", "lesson", "--focus", "mole", "--json"))["sense_meter"]
    model = GloveModel(glove, resolve_heads(None, 50, 0)[0], Settings(mask=Mask.causal))
    alone = model.run("mole").streams()[:, 0]  # [2, d]
    table = senses.read_sense_set(senses.SENSES_DIR / "lesson.tsv")["mole"]
    centroids = senses.sense_centroids([senses.probe_matrix(p, glove) for p in table.values()])
    for reading, x in zip(doc["alone"], alone):
        want = senses.sense_scores(x[None], centroids)[0]
        assert [reading["scores"][n] for n in table] == pytest.approx(want.tolist(), abs=2e-6)


# --- senses eval ------------------------------------------------------------------------------------


FOUR = "sentence\tword\tintended\tother\nThe shrew and the mole dug tunnels.\tmole\tmammal,burrow\tmolecule grams\n"


def test_senses_eval_json_and_csv(run, tmp_path):
    cases = tmp_path / "four.tsv"
    cases.write_text(FOUR, encoding="utf-8")
    doc = parse_json(run("senses", "eval", cases, "--model", checkpoints.minilm_folder(), "--templates", "short", "--json"))
    assert doc["cases"] == 1 and doc["chance"] == pytest.approx(0.5, abs=1e-12) and doc["filler"] == "[MASK]" and len(doc["templates"]) == 3
    assert [r["layer"] for r in doc["layers"]] == list(range(7))
    for r in doc["layers"]:
        for control in ("context", "alone", "masked"):
            low, high = r[control]["wilson95"]
            assert low <= r[control]["resolved"] <= high
    rows = run("senses", "eval", cases, "--model", checkpoints.minilm_folder(), "--templates", "short", "--csv").stdout.splitlines()
    assert rows[0].startswith("layer,label,context,context_low,context_high,alone,") and len(rows) == 8


@pytest.mark.slow
def test_senses_eval_reads_sense_cases_with_a_sense_set_from_stdin(run):
    lines = "Small mounds of fresh soil all over the lawn told us we had a mole.\tmole\tanimal\tbefore\n"
    doc = parse_json(run("senses", "eval", "-", "--sense-set", "lesson", "--model", checkpoints.minilm_folder(), "--templates", "short",
                         "--json", input=lines))
    assert doc["cases"] == 1 and doc["sense_set"] == "lesson" and doc["chance"] == pytest.approx(1 / 3, abs=1e-6)


def test_senses_eval_a_decoder_skips_context_after_the_word(run, tmp_path):
    cases = tmp_path / "cases.tsv"
    cases.write_text("The mole dug.\tmole\tanimal\tafter\nA shrew, a mole.\tmole\tanimal\tbefore\n", encoding="utf-8")
    doc = parse_json(run("senses", "eval", cases, "--sense-set", "lesson", "--model", checkpoints.tiny_gpt2_folder(), "--templates", "short",
                         "--json"))
    assert (doc["cases"], doc["skipped"], doc["causal"], doc["filler"]) == (1, 1, True, "<|endoftext|>")


@pytest.mark.parametrize("content, args, message", [
    (FOUR, [], "senses eval needs --model"),
    ("a mole\tmole\tanimal\tbefore\n", ["--model", "M"], "cases.tsv line 1: a sense case (its last column is 'before'): give the senses with --sense-set"),
    ("a mole\tmole\tmammal\n", ["--model", "M"], "cases.tsv line 1: expected 4 tab-separated fields"),
    ("a cat\tcat\tanimal\tbefore\n", ["--model", "M", "--sense-set", "lesson"], "not in lesson: 'cat' (line 1)"),
])
def test_senses_eval_bad_input_is_one_line(run, tmp_path, content, args, message):
    cases = tmp_path / "cases.tsv"
    cases.write_text(content, encoding="utf-8")
    args = [str(checkpoints.minilm_folder()) if a == "M" else a for a in args]
    os.chdir(tmp_path)
    result = run("senses", "eval", "cases.tsv", *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"attn: {message}") and result.stderr.count("\n") == 1


def test_senses_eval_runs_as_a_subprocess(tmp_path):
    cases = tmp_path / "four.tsv"
    cases.write_text(FOUR, encoding="utf-8")
    attn = [sys.executable, "-m", "attn_cli"]
    done = subprocess.run([*attn, "senses", "eval", str(cases), "--model", str(checkpoints.minilm_folder()), "--templates", "short", "--json"],
                          capture_output=True, text=True, timeout=120, env=os.environ | {"NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no progress bar when stderr is not a terminal
    assert json.loads(done.stdout)["cases"] == 1


# --- held weights ------------------------------------------------------------------------------------


@pytest.mark.floats  # the same arithmetic over values in other memory
def test_holding_a_quantized_models_layers_changes_nothing():
    model = load(str(checkpoints.gguf_fixture("tiny-llama", "Q4_1")))
    before = model.run("the mole and the tower").streams()
    assert not model.weights.eager and not model.weights.hold(1000)  # too large for the budget: left as it is
    assert model.weights.hold(1 << 30) and model.weights.eager
    # The held copy is other memory in another order ([in, out] rows): BLAS may block the same products differently.
    # Seen: 5.4e-6 apart, on values up to 7 (float32 carries about 7 digits).
    np.testing.assert_allclose(model.run("the mole and the tower").streams(), before, rtol=1e-5, atol=1e-5)


def test_read_cases_rejects_no_cases(tmp_path):
    empty = tmp_path / "e.tsv"
    empty.write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(InputError, match="no sense cases"):
        meter_eval.read_cases(empty, None)
