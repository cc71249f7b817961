"""A picture of E -> E': each token's vector as an arrow in a 2-D projection, drawn in braille.

The plane is the one that keeps most of the spread of the points drawn (PCA over the
sentence's E and E' rows, and any sense probe words): what a 2-D picture of a 50-d or 384-d
space can honestly show, with the share of the spread it keeps printed beside it.
"""

from dataclasses import dataclass

import numpy as np

BRAILLE = 0x2800
DOT = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row 0-3][column 0-1] of a braille cell
PALETTE = ("cyan", "magenta", "green", "yellow", "bright_blue", "bright_red", "bright_cyan", "bright_magenta", "bright_green", "orange1")


@dataclass
class Projection:
    points: np.ndarray  # [m, 2] the rows in the plane
    kept: float  # share of the total variance the two axes keep (0..1)


def project(rows: np.ndarray) -> Projection:  # [m, d] -> [m, 2]
    """The first two principal components of the rows (centred), and the share of variance they keep."""
    centred = rows - rows.mean(axis=0)  # [m, d]
    _, s, vt = np.linalg.svd(centred, full_matrices=False)  # vt: [r, d]
    total = float(np.sum(s**2))
    axes = vt[:2]  # [2, d] (fewer when the rows span less)
    points = centred @ axes.T  # [m, d] x [d, k] -> [m, k]
    if points.shape[1] < 2:
        points = np.hstack([points, np.zeros((len(rows), 2 - points.shape[1]))])
    return Projection(points, float(np.sum(s[:2] ** 2)) / total if total > 0 else 1.0)


def line(x0: int, y0: int, x1: int, y1: int) -> list[tuple[int, int]]:
    """The dots of a straight segment (Bresenham), ends included."""
    dots, dx, dy = [], abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    err = dx + dy
    while True:
        dots.append((x0, y0))
        if (x0, y0) == (x1, y1):
            return dots
        e2 = 2 * err
        if e2 >= dy:
            err, x0 = err + dy, x0 + sx
        if e2 <= dx:
            err, y0 = err + dx, y0 + sy


class PathPicture:
    """Paths through the plane (E_i -> E'_i, or one token's vector layer after layer), each labelled
    at its end and marked "∘" at its start, plus labelled marks.

    paths: n arrays [k, 2] (k >= 2 points each); marks: [m, 2] (drawn as a dot and a dim label).
    """

    def __init__(self, paths: list, labels: list[str], marks=None, mark_labels: list[str] = (), title: str = "", height: int = 18):
        self.paths = [np.asarray(p, float) for p in paths]
        self.labels = labels
        self.marks = np.zeros((0, 2)) if marks is None or len(marks) == 0 else np.asarray(marks, float)
        self.mark_labels = list(mark_labels)
        self.title = title
        self.height = height

    def __rich_measure__(self, console, options):  # as wide as it draws (an export's figure is sized by this)
        from rich.measure import Measurement

        return Measurement(20, max(20, min(options.max_width, 120)))

    def __rich_console__(self, console, options):
        from rich.text import Text

        width = max(20, min(options.max_width, 120))
        cols, rows = width, self.height
        every = np.vstack([*self.paths, self.marks])  # [points, 2]
        xs, ys = every[:, 0], every[:, 1]
        lo_x, hi_x, lo_y, hi_y = xs.min(), xs.max(), ys.min(), ys.max()
        span_x, span_y = (hi_x - lo_x) or 1.0, (hi_y - lo_y) or 1.0

        def dot(p) -> tuple[int, int]:  # plane -> dot coordinates (2 x 4 dots a character; y grows downward)
            x = round((p[0] - lo_x) / span_x * (cols * 2 - 1))
            y = round((hi_y - p[1]) / span_y * (rows * 4 - 1))
            return int(x), int(y)

        bits = np.zeros((rows, cols), np.int64)
        style = [[None] * cols for _ in range(rows)]
        text = [[None] * cols for _ in range(rows)]  # labels written over the dots

        def plot(x: int, y: int, colour: str):
            bits[y // 4, x // 2] |= DOT[y % 4][x % 2]
            style[y // 4][x // 2] = colour

        def label(x: int, y: int, word: str, colour: str):
            r, c = y // 4, min(x // 2 + 1, cols - 1)
            c = max(0, min(c, cols - len(word)))
            for k, ch in enumerate(word):
                if c + k < cols:
                    text[r][c + k] = (ch, colour)

        for k, (p, word) in enumerate(zip(self.marks, self.mark_labels)):
            x, y = dot(p)
            plot(x, y, "dim")
            label(x, y, word, "dim")
        starts = []
        for i, (path, word) in enumerate(zip(self.paths, self.labels)):
            colour = PALETTE[i % len(PALETTE)]
            points = [dot(p) for p in path]
            for (x0, y0), (x1, y1) in zip(points, points[1:]):
                for x, y in line(x0, y0, x1, y1):
                    plot(x, y, colour)
            starts.append((points[0], colour))
            label(*points[-1], word, f"bold {colour}")
        for (x, y), colour in starts:  # a start is a small ring, unless a label already sits there
            if text[y // 4][x // 2] is None:
                text[y // 4][x // 2] = ("∘", colour)

        if self.title:
            yield Text(self.title, style="dim")
        for r in range(rows):
            out = Text()
            for c in range(cols):
                if text[r][c] is not None:
                    out.append(text[r][c][0], style=text[r][c][1])
                elif bits[r, c]:
                    out.append(chr(BRAILLE + int(bits[r, c])), style=style[r][c] or "")
                else:
                    out.append(" ")
            out.rstrip()
            yield out


def shift_picture(tokens: list[str], e: np.ndarray, e_prime: np.ndarray, height: int = 18) -> PathPicture:  # [n, d], [n, d]
    """E -> E' for every token, in the plane of the first two principal components of all 2n rows."""
    n = len(tokens)
    plane = project(np.vstack([e, e_prime]))  # [2n, 2]
    paths = [plane.points[[i, n + i]] for i in range(n)]
    title = (f"E → E′: each token's vector moves from ∘ to its label; the plane of the first two principal components "
             f"of E and E′ keeps {plane.kept:.0%} of their spread")
    return PathPicture(paths, tokens, title=title, height=height)


def project_path(token: str, hidden: np.ndarray, height: int = 14) -> PathPicture:  # [L + 1, d]
    """One token's vector from E through every layer's output, in the plane of its first two principal components."""
    from attn_cli.views.base import quoted

    plane = project(hidden)
    labels = ["E", *[str(l) for l in range(len(hidden) - 1)]]
    title = (f"{quoted(token)} layer by layer (∘ = E, then the output of each layer); the plane keeps {plane.kept:.0%} of the spread")
    return PathPicture([plane.points], [labels[-1]], marks=plane.points[1:-1], mark_labels=labels[1:-1], title=title, height=height)


def picture(result, options) -> list:
    """E -> E' as arrows (the lesson's heads), or the --focus token through a checkpoint's layers."""
    if result.e is not None:
        return [shift_picture(result.tokens, result.e, result.e_prime)]
    return [project_path(result.tokens[result.focus], result.focus_path)]
