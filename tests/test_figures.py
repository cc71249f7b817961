"""The comparison of recorded figures with recomputed ones (tests/figures.py) is strict where it says so."""

import numpy as np

from tests.figures import FLOAT32_RTOL, FLOAT64_RTOL, assert_figures_match, figure_differences

RECORDED = {"cases": 130, "names": ["adjective", "context"], "after": 0.9384615384615385, "mean_cos": 0.5874206708698272,
            "rows": [0.1, 0.0, float("nan")], "note": None, "resolved": True}


def moved(figures: dict, **changes) -> dict:
    return {**figures, **changes}


def test_last_bits_of_a_float64_figure_do_not_matter():
    assert_figures_match(moved(RECORDED, mean_cos=0.5874206708698272 * (1 + 1e-15), rows=[0.1 + 1e-17, 1e-17, float("nan")]), RECORDED)


def test_counts_names_and_flags_compare_exactly():
    for change in ({"cases": 131}, {"cases": 130.0}, {"names": ["adjective"]}, {"note": "x"}, {"resolved": 1}):
        assert figure_differences(moved(RECORDED, **change), RECORDED), change
    assert figure_differences({k: v for k, v in RECORDED.items() if k != "note"}, RECORDED)


def test_a_float64_figure_that_moved_beyond_the_tolerance_is_caught():
    for factor in (1 + 10 * FLOAT64_RTOL, 1 - 10 * FLOAT64_RTOL, 1.001):
        found = figure_differences(moved(RECORDED, after=RECORDED["after"] * factor), RECORDED)
        assert len(found) == 1 and found[0].startswith("figures.after:"), found
    assert figure_differences(moved(RECORDED, rows=[0.1, 1e-9, float("nan")]), RECORDED)
    assert figure_differences(moved(RECORDED, rows=[0.1, 0.0, 0.5]), RECORDED)  # NaN equals only NaN


def test_float32_figures_get_their_own_tolerance():
    value = float(np.float32(0.3))
    near = value * (1 + FLOAT32_RTOL / 4)
    assert figure_differences({"w": near}, {"w": value}) and not figure_differences({"w": near}, {"w": value}, float32=True)
    assert figure_differences({"w": value * (1 + 4 * FLOAT32_RTOL)}, {"w": value}, float32=True)
