"""Colour scales whose lightness follows the value, on every kind of terminal.

Weights (0..1) use viridis, a perceptually uniform sequential scale: dark purple at 0, yellow
at 1. Scores (any sign) use a diverging scale that is dark at 0 and lighter the further from 0,
blue below and orange above, so a large score stands out on a dark background either way.
A terminal of 256 or 16 colours gets a ramp of its own palette chosen so that lightness
(CIE L*) never goes down as the value goes up; Rich's nearest-colour rounding alone does not
promise that.

The number in a cell is black or white, whichever contrasts more with that cell's colour as the
console shows it (WCAG 2 contrast ratio). Pure black and pure white are written as RGB, or as the
256-colour cube's 16 and 231, never as the palette's "black" and "white", which terminal themes
(and Rich's export themes) remap to greys: the better of the two is at least 4.58:1 on any colour.
"""

from functools import lru_cache

# viridis at 0, 1/8, ..., 1 (matplotlib's table, sampled)
VIRIDIS = ((68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141), (39, 173, 129), (92, 200, 99), (170, 220, 50), (253, 231, 37))
NEGATIVE = ((30, 30, 34), (38, 62, 110), (50, 104, 170), (94, 154, 214), (170, 205, 240))  # |score| 0 -> 1, below 0
POSITIVE = ((30, 30, 34), (110, 52, 30), (175, 90, 30), (225, 145, 50), (250, 210, 130))  # above 0
RAMP_STEPS = 12  # samples of a scale matched to a 256-colour palette
ANSI16 = {  # xterm's default RGB of the 16 colours, to choose and check ramps with
    "black": (0, 0, 0), "blue": (0, 0, 238), "magenta": (205, 0, 205), "bright_black": (127, 127, 127),
    "cyan": (0, 205, 205), "green": (0, 205, 0), "bright_green": (0, 255, 0), "yellow": (205, 205, 0),
    "bright_yellow": (255, 255, 0), "white": (229, 229, 229), "bright_white": (255, 255, 255),
    "red": (205, 0, 0), "bright_blue": (92, 92, 255), "bright_cyan": (0, 255, 255), "bright_red": (255, 0, 0),
    "bright_magenta": (255, 0, 255),
}
RAMP16_WEIGHTS = ("black", "blue", "magenta", "cyan", "bright_green", "bright_yellow")  # L* rises along it
RAMP16_NEGATIVE = ("black", "blue", "bright_blue", "bright_cyan")
RAMP16_POSITIVE = ("black", "red", "yellow", "bright_yellow")


def lightness(rgb) -> float:
    """CIE L* (0 black .. 100 white) of an sRGB colour given as 0-255 components."""
    y = luminance(rgb)
    return 116 * y ** (1 / 3) - 16 if y > 216 / 24389 else 24389 / 27 * y


def interpolate(stops, x: float) -> tuple[int, int, int]:
    """The colour at x in [0, 1] along evenly spaced stops."""
    x = min(max(x, 0.0), 1.0) * (len(stops) - 1)
    i = min(int(x), len(stops) - 2)
    t = x - i
    return tuple(round(a + (b - a) * t) for a, b in zip(stops[i], stops[i + 1]))


def xterm256(index: int) -> tuple[int, int, int]:
    """The RGB of a colour of the 256-colour palette (16..255: the 6x6x6 cube and the grey ramp)."""
    if index >= 232:
        v = 8 + 10 * (index - 232)
        return (v, v, v)
    index -= 16
    levels = (0, 95, 135, 175, 215, 255)
    return (levels[index // 36], levels[index // 6 % 6], levels[index % 6])


@lru_cache(maxsize=8)
def ramp256(stops: tuple) -> tuple[int, ...]:
    """Palette indices along the scale, each the nearest palette colour not darker than the one before."""
    chosen: list[int] = []
    floor = 0.0
    for k in range(RAMP_STEPS):
        target = interpolate(stops, k / (RAMP_STEPS - 1))
        candidates = [i for i in range(16, 256) if lightness(xterm256(i)) >= floor]
        best = min(candidates, key=lambda i: sum((a - b) ** 2 for a, b in zip(xterm256(i), target)))
        chosen.append(best)
        floor = lightness(xterm256(best))
    return tuple(chosen)


def _pick(stops: tuple, ramp16: tuple, x: float, system: str | None):
    """A Rich Color for x in [0, 1] along the scale, for the console's colour system."""
    from rich.color import Color

    if system in ("truecolor", "windows"):
        return Color.from_rgb(*interpolate(stops, x))
    if system == "256":
        ramp = ramp256(stops)
        return Color.from_ansi(ramp[min(int(x * len(ramp)), len(ramp) - 1)])
    return Color.parse(ramp16[min(int(x * len(ramp16)), len(ramp16) - 1)])


def weight_colour(x: float, system: str | None):
    return _pick(VIRIDIS, RAMP16_WEIGHTS, x, system)


def score_colour(x: float, span: float, system: str | None):
    """x scaled by span (the largest |score| shown) to [-1, 1]: blue below 0, orange above, dark at 0."""
    amount = min(abs(x) / span, 1.0) if span > 0 else 0.0
    return _pick(POSITIVE, RAMP16_POSITIVE, amount, system) if x >= 0 else _pick(NEGATIVE, RAMP16_NEGATIVE, amount, system)


def rgb_of(colour, system: str | None) -> tuple[int, int, int]:
    """What a colour looks like (xterm's palette for the 16 and 256 colours), to check lightness and pick text colour."""
    if colour.triplet is not None:
        return tuple(colour.triplet)
    if colour.number is not None and colour.number >= 16:
        return xterm256(colour.number)
    return ANSI16[colour.name] if colour.name in ANSI16 else (128, 128, 128)


def luminance(rgb) -> float:
    """WCAG 2 relative luminance (0 black .. 1 white) of an sRGB colour given as 0-255 components."""

    def linear(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    """WCAG 2 contrast ratio of two sRGB colours: 1 (the same) .. 21 (black on white)."""
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


BLACK, WHITE = (0, 0, 0), (255, 255, 255)
TEXT_COLOURS = {  # black and white on each colour system, as colours no theme remaps
    "truecolor": ("#000000", "#ffffff"), "windows": ("black", "bright_white"), "256": ("color(16)", "color(231)"),
    "standard": ("black", "bright_white"),
}


def text_on(colour, system: str | None):
    """The text colour, black or white, that contrasts more with `colour` as the console shows it."""
    from rich.color import Color

    background = rgb_of(colour, system)
    black, white = TEXT_COLOURS.get(system or "truecolor", TEXT_COLOURS["truecolor"])
    return Color.parse(black if contrast(background, BLACK) >= contrast(background, WHITE) else white)
