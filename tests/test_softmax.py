"""`attn softmax` and the softmax math behind it, against scipy and as properties."""

import json
import math

import numpy as np
import pytest
import scipy.special
from conftest import parse_json
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_cli.core.softmax import log_softmax, softmax, softmax_with_temperature
from attn_cli.lesson.softmax import softmax_result as compute_softmax

EXTREME = [
    [1000.0, 1001.0, 1002.0],
    [-1000.0, -1001.0, -1002.0],
    [1e300, -1e300, 0.0],
    [1.7e308, 1.7e308, -1.7e308],
    [0.0, -745.0, -746.0, -800.0],  # around exp's underflow to 0
    [709.0, 710.0, 0.0],  # around exp's overflow
    [5e-324, 0.0, -5e-324],
    [42.0],
]


# --- against scipy ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_softmax_matches_scipy_on_random_input(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(scale=10.0 ** rng.integers(-3, 4), size=rng.integers(1, 60))
    np.testing.assert_allclose(softmax(x), scipy.special.softmax(x), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(log_softmax(x), scipy.special.log_softmax(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("x", EXTREME)
def test_softmax_matches_scipy_on_extreme_input(x):
    with np.errstate(over="ignore"):  # x - max overflows to -inf for the widest ranges: exp gives 0, rightly
        expected, actual = scipy.special.softmax(x), softmax(x)
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-300)


def test_batched_rows_match_scipy():
    x = np.random.default_rng(7).normal(size=(5, 9)) * 50
    np.testing.assert_allclose(softmax(x), scipy.special.softmax(x, axis=-1), rtol=1e-12)


@pytest.mark.parametrize("t", [0.01, 0.5, 1.0, 3.0, 1000.0])
def test_temperature_matches_scipy_of_scaled_values(t):
    x = np.random.default_rng(3).normal(size=12) * 4
    result = compute_softmax(x.tolist(), t, log=True)
    np.testing.assert_allclose(result.probabilities, scipy.special.softmax(x / t), rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(result.log_probabilities, scipy.special.log_softmax(x / t), rtol=1e-10, atol=1e-10)


def test_infinities():
    np.testing.assert_array_equal(softmax([-np.inf, 0.0, 0.0]), [0.0, 0.5, 0.5])
    np.testing.assert_array_equal(softmax([np.inf, 3.0, np.inf, -np.inf]), [0.5, 0.0, 0.5, 0.0])
    np.testing.assert_array_equal(softmax([-np.inf, -np.inf]), [0.0, 0.0])  # a fully masked row


# --- properties ---------------------------------------------------------------------------------

huge = st.floats(min_value=-1e300, max_value=1e300, allow_nan=False)  # finite, most of the float range
any_finite = st.floats(allow_nan=False, allow_infinity=False)  # up to +-1.8e308
moderate = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
temperatures = st.floats(min_value=1e-6, max_value=1e6)


@settings(max_examples=100, deadline=None)
@given(st.lists(any_finite, min_size=1, max_size=30))
def test_sums_to_one_and_no_nan_for_any_finite_input(values):
    with np.errstate(over="ignore"):
        p = softmax(values)
    assert not np.isnan(p).any()
    assert ((p >= 0) & (p <= 1)).all()
    assert math.fsum(p) == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(huge, min_size=1, max_size=30), temperatures)
def test_cli_path_sums_to_one_with_any_temperature(values, t):
    result = compute_softmax(values, t, log=True)
    assert not np.isnan(result.probabilities).any()
    assert not np.isnan(result.log_probabilities).any()
    assert math.fsum(result.probabilities) == pytest.approx(1.0, abs=1e-12)


def test_library_temperature_does_not_overflow():
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(softmax_with_temperature([-1e300, -2e300], 1e-10), [1.0, 0.0])


@settings(max_examples=100, deadline=None)
@given(st.lists(moderate, min_size=1, max_size=30), moderate)
def test_shift_invariance(values, shift):
    # Bounded values: with |x| near 1e300, x + c is not even representable, so nothing to compare.
    x = np.array(values)
    np.testing.assert_allclose(softmax(x + shift), softmax(x), rtol=1e-6, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.lists(huge, min_size=2, max_size=30))
def test_order_is_preserved(values):
    x = np.array(values)
    with np.errstate(over="ignore"):
        p = softmax(x)
    i, j = np.meshgrid(np.arange(len(x)), np.arange(len(x)), indexing="ij")
    # A larger value never gets less weight (underflow may tie both at 0); equal values get equal weight.
    assert (p[i] >= p[j])[x[i] > x[j]].all()
    assert (p[i] == p[j])[x[i] == x[j]].all()


# --- the command ------------------------------------------------------------------------------


def test_overflow_free_example(run):
    out = run("softmax", "1000", "1001", "1002").stdout
    for shown in ("0.0900", "0.2447", "0.6652", "probabilities sum to 1.000000"):
        assert shown in out


def test_json_keys_and_values(run):
    data = parse_json(run("softmax", "1", "2", "3", "--json"))
    assert set(data) == {"values", "temperature", "exps", "sum_of_exps", "probabilities", "probability_sum"}
    np.testing.assert_allclose(data["exps"], np.exp(np.array([1, 2, 3]) - 3), rtol=1e-12)
    assert data["sum_of_exps"] == pytest.approx(sum(data["exps"])) and data["probability_sum"] == pytest.approx(1)
    assert data["values"] == [1.0, 2.0, 3.0] and data["temperature"] == 1.0  # the input, echoed
    np.testing.assert_allclose(data["probabilities"], scipy.special.softmax([1, 2, 3]), rtol=1e-12)


def test_log_json_writes_minus_inf_as_null(run):
    data = parse_json(run("softmax", "--log", "--json", "--", "-inf", "0", "1"))
    assert data["values"][0] is None and data["probabilities"][0] == 0.0
    assert data["log_probabilities"][0] is None
    np.testing.assert_allclose(data["log_probabilities"][1:], scipy.special.log_softmax([0.0, 1.0]), rtol=1e-12)


@pytest.mark.parametrize(
    "args",
    [
        ["--", "-1", "2"],
        ["-1", "2"],
        ["-1", "-t", "1", "2"],
        ["-1", "2", "--temperature", "1"],
        ["-1,2"],
        ["-1.0e0", "+2"],
    ],
)
def test_negative_numbers_as_arguments(run, args):
    data = parse_json(run("softmax", "--json", *args))
    assert data["values"] == [-1.0, 2.0]
    np.testing.assert_allclose(data["probabilities"], scipy.special.softmax([-1, 2]), rtol=1e-12)


def test_negative_infinity_spelled_out_is_a_value_not_option_t(run):
    # "-infinity" contains a "t": it must still be a number, not -t with the value "y".
    data = parse_json(run("softmax", "--json", "-infinity", "1"))
    assert data["probabilities"] == [0.0, 1.0]


@pytest.mark.parametrize("text", ["1\n2\n3\n4\n5\n", "1 2 3 4 5", "1,2,3,4,5", " 1, 2\t3 ,4\n\n5 "])
def test_stdin(run, text):
    data = parse_json(run("softmax", "-", "--json", input=text))
    assert data["values"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    np.testing.assert_allclose(data["probabilities"], scipy.special.softmax(np.arange(1, 6)), rtol=1e-12)


def test_minus_infinity_is_exactly_zero_and_plus_infinities_share(run):
    assert parse_json(run("softmax", "--json", "-inf", "0"))["probabilities"] == [0.0, 1.0]
    assert parse_json(run("softmax", "--json", "inf", "5", "inf", "-inf"))["probabilities"] == [0.5, 0.0, 0.5, 0.0]


def test_temperature_zero_is_argmax(run):
    data = parse_json(run("softmax", "-t", "0", "--json", "1", "3", "3", "2"))
    assert data["temperature"] == 0.0  # the input, echoed
    assert data["probabilities"] == pytest.approx([0.0, 0.5, 0.5, 0.0], abs=1e-12)
    assert "argmax" in run("softmax", "--help").stdout


def test_temperature_sharpens_and_flattens(run):
    p = {t: parse_json(run("softmax", "-t", t, "--json", "1", "2", "3"))["probabilities"] for t in ("0.5", "1", "4")}
    assert p["0.5"][2] > p["1"][2] > p["4"][2] > 1 / 3


def test_tiny_probabilities_shown_in_scientific_notation(run):
    out = run("softmax", "0", "-20", "-2000").stdout
    assert "2.06e-09" in out  # exp(-20) / (1 + exp(-20)), not a misleading 0.0000
    assert "0.0000" not in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["1", "nan"], "NaN has no place in a distribution: 'nan' (argument 2)"),
        (["1", "abc"], "not a number: 'abc' (argument 2)"),
        (["--", "-inf", "-inf"], "every value is -inf (-inf, -inf)"),
        ([], "no numbers given"),
        (["-t", "-1", "1", "2"], "--temperature must be a finite number >= 0, not -1"),
        (["-t", "inf", "1"], "--temperature must be a finite number >= 0, not inf"),
    ],
)
def test_errors_exit_2_naming_the_input(run, args, message):
    result = run("softmax", *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("text, message", [("", "no numbers given"), ("1 2 x", "not a number: 'x' (stdin)"), ("nan", "'nan' (stdin)")])
def test_stdin_errors(run, text, message):
    result = run("softmax", "-", input=text)
    assert result.exit_code == 2 and message in result.stderr


def test_unknown_option_is_still_an_error(run):
    result = run("softmax", "--nope", "1")
    assert result.exit_code == 2 and "--nope" in result.stderr


def modules_read(args: list[str], watched: tuple[str, ...]) -> tuple[str, list[str]]:
    """(stdout, the watched modules loaded) of `attn ARGS` in a new process; a module whose top
    package is watched counts too."""
    import subprocess
    import sys

    code = (
        f"import sys\nsys.argv = ['attn', *{args!r}]\nfrom attn_cli.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules if m in {watched!r} or m.split('.')[0] in {watched!r}), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    import ast

    return done.stdout, ast.literal_eval(done.stderr.strip().splitlines()[-1])


def test_softmax_json_reads_only_what_it_needs():
    """`attn softmax --json` starts without the word-vector side of attn, Rich or the CSV writer:
    with PYTHONDONTWRITEBYTECODE every module read is compiled again, on every run."""
    heavy = ("attn_cli.core.attention", "attn_cli.results", "attn_cli.vectors.tokens", "attn_cli.lesson.directions", "attn_cli.vectors.store", "csv", "rich")
    out, read = modules_read(["softmax", "1", "2", "3", "--json"], heavy)
    assert json.loads(out)["probabilities"] == softmax(np.array([1.0, 2.0, 3.0])).tolist()
    assert read == []


def test_softmax_view_reads_only_its_own_view():
    """The terminal view of `attn softmax` reads its own view module: not the analogy and similarity
    views, their result classes, the word-vector options, or json and the JSON writer."""
    unread = ("attn_cli.views.lesson", "attn_cli.results.analogy", "attn_cli.cli.options", "attn_cli.io.output", "json")
    out, read = modules_read(["softmax", "1", "2", "3"], unread)
    assert "probability" in out
    assert read == []
