"""The colour scales: lightness follows the value on truecolor, 256-colour and 16-colour terminals."""

import pytest
from hypothesis import given, strategies as st

from attn_cli.views import colours

SYSTEMS = ("truecolor", "256", "standard")


def shown_lightness(colour, system) -> float:
    return colours.lightness(colours.rgb_of(colour, system))


@pytest.mark.parametrize("system", SYSTEMS)
def test_weight_lightness_never_goes_down_as_the_weight_goes_up(system):
    values = [k / 200 for k in range(201)]
    light = [shown_lightness(colours.weight_colour(x, system), system) for x in values]
    assert all(a <= b + 1e-9 for a, b in zip(light, light[1:]))
    assert light[-1] - light[0] > 40  # the scale spans dark to light, not one shade


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("sign", [1, -1])
def test_score_lightness_grows_with_the_size_of_the_score_on_either_side(system, sign):
    light = [shown_lightness(colours.score_colour(sign * k / 100, 1.0, system), system) for k in range(101)]
    assert all(a <= b + 1e-9 for a, b in zip(light, light[1:]))
    assert light[-1] - light[0] > 40


def test_negative_and_positive_scores_differ_in_hue():
    low, high = colours.score_colour(-1, 1, "truecolor").triplet, colours.score_colour(1, 1, "truecolor").triplet
    assert low.blue > low.red and high.red > high.blue


@given(st.floats(0, 1))
def test_text_stays_readable_on_every_cell(x):
    for system in SYSTEMS:
        cell = colours.weight_colour(x, system)
        text = colours.text_on(cell, system)
        contrast = abs(shown_lightness(cell, system) - (0 if text == "black" else 100))
        assert contrast >= 40


def test_lightness_of_known_colours():
    assert colours.lightness((0, 0, 0)) == 0 and round(colours.lightness((255, 255, 255))) == 100
    assert round(colours.lightness((128, 128, 128)), 1) == 53.6  # CIE L* of mid grey
    assert colours.xterm256(16) == (0, 0, 0) and colours.xterm256(231) == (255, 255, 255) and colours.xterm256(244) == (128, 128, 128)
