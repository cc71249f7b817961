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


SCALES = {  # every scale a cell is drawn in: x in [0, 1] -> the cell's colour on a colour system
    "weights": lambda x, system: colours.weight_colour(x, system),
    "scores below 0": lambda x, system: colours.score_colour(-x, 1.0, system),
    "scores above 0": lambda x, system: colours.score_colour(x, 1.0, system),
}
WCAG_AA = 4.5  # the contrast ratio WCAG 2 asks of normal text


def lowest_contrast() -> tuple[float, str]:
    """The lowest contrast of a cell's number with the cell, over every scale and colour system (x in steps of 0.001,
    finer than any ramp: every entry of the 256- and 16-colour ramps is met)."""
    found = []
    for system in SYSTEMS:
        for name, scale in SCALES.items():
            for k in range(1001):
                cell = scale(k / 1000, system)
                ratio = colours.contrast(colours.rgb_of(cell, system), colours.rgb_of(colours.text_on(cell, system), system))
                found.append((ratio, f"{name} at {k / 1000} on {system}"))
    return min(found)


def test_every_cell_of_every_scale_reads_at_wcag_aa():
    ratio, where = lowest_contrast()
    print(f"lowest contrast of a cell's number with its cell: {ratio:.2f}:1 ({where})")
    assert ratio >= WCAG_AA, where


@given(st.floats(0, 1))
def test_the_text_colour_is_the_better_of_black_and_white(x):
    for system in SYSTEMS:
        cell = colours.rgb_of(colours.weight_colour(x, system), system)
        chosen = colours.contrast(cell, colours.rgb_of(colours.text_on(colours.weight_colour(x, system), system), system))
        assert chosen == max(colours.contrast(cell, colours.BLACK), colours.contrast(cell, colours.WHITE))


def test_contrast_ratios_of_known_pairs():
    assert colours.contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0, abs=1e-6)
    assert colours.contrast((90, 90, 90), (90, 90, 90)) == pytest.approx(1.0, abs=1e-12)
    assert colours.contrast((118, 118, 118), (255, 255, 255)) == pytest.approx(4.54, abs=0.005)  # #767676 on white: the lightest grey that passes AA


def test_text_is_never_a_palette_grey_a_theme_remaps():
    """#4b4e55 was Rich's export theme's "black": text must be true black or white, never the palette's names on 256/truecolor."""
    for system in ("truecolor", "256"):
        for k in range(11):
            text = colours.text_on(colours.weight_colour(k / 10, system), system)
            assert colours.rgb_of(text, system) in (colours.BLACK, colours.WHITE) and (text.number is None or text.number >= 16)


def test_lightness_of_known_colours():
    assert colours.lightness((0, 0, 0)) == 0 and round(colours.lightness((255, 255, 255))) == 100
    assert colours.lightness((128, 128, 128)) == pytest.approx(53.6, abs=0.05)  # CIE L* of mid grey
    assert colours.xterm256(16) == (0, 0, 0) and colours.xterm256(231) == (255, 255, 255) and colours.xterm256(244) == (128, 128, 128)
