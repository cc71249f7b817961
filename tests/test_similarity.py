"""similarity against a baseline: percentiles among random pairs, and the dot product written out."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.exact import assert_same_ids

from attn_cli.cli import app
from attn_cli.lesson.similarity import BASELINE_KEYS, BASELINE_PAIRS, BASELINE_SEED, SAVED_PAIRS, baseline, compare, dot_terms, percentile_of, random_pairs, reading

runner = CliRunner()


def test_percentile_counts_the_smaller_cosines_and_half_the_ties():
    sorted_cosines = np.array([-0.5, 0.0, 0.0, 0.5])
    assert percentile_of(-1.0, sorted_cosines) == pytest.approx(0.0, abs=1e-12)
    assert percentile_of(0.0, sorted_cosines) == pytest.approx(50.0, abs=1e-12)
    assert percentile_of(0.25, sorted_cosines) == pytest.approx(75.0, abs=1e-12)
    assert percentile_of(1.0, sorted_cosines) == pytest.approx(100.0, abs=1e-12)


def test_readings_at_the_thresholds():
    assert [reading(p) for p in (99.0, 95.0, 50.0, 5.0, 1.0, None)] == ["aligned", "aligned", "unrelated", "opposed", "opposed", "undefined"]


def test_the_terms_and_the_rest_add_up_to_the_dot_product():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=50), rng.normal(size=50)
    terms, rest, count = dot_terms(a, b, top=5)
    magnitudes = [abs(t.product) for t in terms]
    assert magnitudes == sorted(magnitudes, reverse=True) and count == 45
    assert min(magnitudes) >= np.sort(np.abs(a * b))[-6]
    assert sum(t.product for t in terms) + rest == pytest.approx(float(a @ b))


def test_the_baseline_is_computed_from_the_vectors_and_repeatable(glove):
    first, cosines = baseline(glove)
    again, _ = baseline(glove)
    assert first == again and first.keys == 10_000 and first.pairs == len(cosines) > 19_000
    assert np.all(np.diff(cosines) >= 0)
    assert first.percentiles["5"] < first.percentiles["50"] < first.percentiles["95"]
    assert first.percentiles == {f"{p:g}": float(np.percentile(cosines, p)) for p in (5, 50, 95)}  # to the bit
    other, _ = baseline(glove, seed=1)
    assert other.percentiles != first.percentiles


def test_the_saved_default_pairs_are_the_generators_draw():
    drawn = np.random.default_rng(BASELINE_SEED).integers(0, BASELINE_KEYS, size=(BASELINE_PAIRS, 2))
    saved = random_pairs(BASELINE_KEYS, BASELINE_PAIRS, BASELINE_SEED)
    assert saved.dtype == drawn.dtype
    assert_same_ids(saved, drawn)
    assert np.load(SAVED_PAIRS, allow_pickle=False).dtype == np.uint16
    assert_same_ids(random_pairs(500, 30, 2), np.random.default_rng(2).integers(0, 500, size=(30, 2)))  # any other draw: the generator


def test_pairs_read_as_the_baseline_says(glove):
    result = compare(glove, ["cat", "dog", "king", "apple"])
    by_pair = {(p.a, p.b): p for p in result.pairs}
    assert by_pair["cat", "dog"].reading == "aligned" and by_pair["cat", "dog"].percentile > 99
    assert by_pair["king", "apple"].reading == "unrelated"  # a cosine of 0.30 is about what random words have
    assert by_pair["king", "apple"].alignment == "aligned"  # ... though it is positive


def test_the_suggested_examples_read_as_named(glove):
    examples = compare(glove, ["cat", "dog"]).baseline.examples
    assert set(examples) == {"aligned", "unrelated", "opposed"}
    for name, pair in examples.items():
        assert compare(glove, pair).pairs[0].reading == name, (name, pair)


def test_similarity_json_and_view():
    data = json.loads(runner.invoke(app, ["similarity", "cat", "dog", "--json"]).stdout)
    pair = data["pairs"][0]
    assert pair["reading"] == "aligned" and 99 < pair["percentile"] <= 100 and len(pair["terms"]) == 5
    assert sum(t["product"] for t in pair["terms"]) + pair["rest"] == pytest.approx(pair["dot"])
    assert data["baseline"]["pairs"] > 19_000 and data["baseline"]["seed"] == 0
    view = runner.invoke(app, ["similarity", "cat", "dog"], env={"COLUMNS": "80"}).stdout
    assert "cat · dog = 19.7391   cosine = 0.9218   aligned" in view and "the other 45:" in view and "sum: 19.7391" in view
