"""The heatmap: a matrix as a grid of coloured, numbered cells that keeps its numbers as long as it can.

Wider than the console, the grid gives up room in this order: column labels shorten to five
characters; then the columns are numbered (the rows say which token each number is) and every
cell keeps its number; then weights take two characters ("56" for .56), then one (tenths: "6",
blank below .05, "█" from .95). Past that, a compact grid of one character a weight, its rows
still labelled where there is room, pooled over blocks of tokens when even that is too wide;
and last a list of each row's largest entries.
"""

from attn_cli import results
from attn_cli.records import Record
from attn_cli.views.base import SHADES

LEGEND_STEPS = 10
MASKED = "·"
LABEL_WIDTH = 8  # column labels longer than this are abbreviated
ROW_LABEL_WIDTH = 13
TOP_KEYS = 3  # keys per row listed when not even the compact grid fits
MIN_LABEL = 5  # a column label cut shorter than this ("wh…") says nothing: number the columns instead
MIN_ROW_WORD = 4  # a numbered row keeps at least this much of its token ("3 crea…")
COMPACT_MIN_CELLS = 8  # the compact grid needs room for at least this many cells a row


def abbreviate(label: str, width: int, align: str = "") -> str:
    """`label` in `width` terminal cells ("…" where cut; wide characters count twice), padded if aligned."""
    from rich.cells import cell_len, set_cell_size

    if cell_len(label) > width:
        label = set_cell_size(label, max(width - 1, 0)).rstrip() + "…"
    pad = " " * max(width - cell_len(label), 0)
    return {"left": label + pad, "right": pad + label}.get(align, label)


def cells(labels: list[str]) -> int:
    from rich.cells import cell_len

    return max((cell_len(s) for s in labels), default=1)


def weight_text(w: float) -> str:
    """'.42' for a weight; '1.0' when it rounds to 1."""
    return "1.0" if w >= 0.995 else f"{w:.2f}"[1:]


def short_weight_text(w: float, digits: int = 2) -> str:
    """A weight in hundredths, two characters ('42' for .42, '05' for .05, '1.' when it rounds to 1), or in
    tenths, one ('4' for .42; blank below .05, '█' from .95)."""
    if digits == 2:
        return "1." if w >= 0.995 else f"{w:.2f}"[2:]
    return "█" if w >= 0.95 else " " if w < 0.05 else f"{w:.1f}"[2]


def score_text(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 9.95 else f"{x:.0f}"


def colour_system(console) -> str | None:
    """The console's colour system: None without colour (NO_COLOR, a pipe); an export is drawn in full colour."""
    if console.no_color:
        return None
    if console.color_system is not None:
        return console.color_system  # "truecolor", "256", "standard" or "windows"
    return "truecolor" if console.record else None


class Layout(Record):
    """How a grid is drawn: each column's width (its cell and the gap after it), the cells' text, the labels."""

    __slots__ = ("column", "digits", "numbered", "row_label")

    def __init__(self, column: int, digits: int, numbered: bool, row_label: int):
        self.column = column  # terminal cells a column takes, the space after its cell included
        self.digits = digits  # 3: a cell's own text (".42", "-1.3"); weights in 2 (hundredths) or 1 (tenths) characters
        self.numbered = numbered  # columns headed by their index, rows by "index token"
        self.row_label = row_label  # width of the row labels


class Heatmap:
    """A matrix as a grid of coloured cells with labelled rows and columns; NaN cells are masked.

    `kind` is "weights" (values in [0, 1], one sequential scale), "norms" (values from 0 up, the
    same scale up to the largest) or "scores" (any sign, a diverging scale around 0). `legend`: end with the line saying what a colour means (a run of
    heatmaps on one scale needs it once).
    """

    def __init__(self, matrix, row_labels: list[str], col_labels: list[str], *, kind: str = "weights", corner: str = "query ↓ key →",
                 legend: bool = True, columns: str | None = None, numbers: list[str] | None = None):
        import numpy as np

        self.matrix = np.asarray(matrix, dtype=np.float64)  # [rows, cols], NaN = masked
        self.row_labels = row_labels
        self.col_labels = col_labels
        self.kind = kind
        self.corner = corner
        self.show_legend = legend
        self.columns = columns  # what numbered columns are, when too narrow for their labels (default: the rows' tokens)
        self.numbers = numbers  # what numbered columns are headed with (default: a column's index where its row is the same token)
        finite = self.matrix[np.isfinite(self.matrix)]
        self.span = float(np.max(np.abs(finite))) if finite.size else 1.0  # diverging scale's end
        self.cells = [[self.cell_text(x) for x in row] for row in self.matrix.tolist()]
        self.cell_width = max([len(c) for row in self.cells for c in row] + [3])
        self.label_width = min(max(cells(row_labels), cells([corner])), ROW_LABEL_WIDTH)

    def cell_text(self, x: float, digits: int = 3) -> str:
        if x != x:  # NaN: masked
            return MASKED
        if self.kind == "weights":
            return weight_text(x) if digits == 3 else short_weight_text(x, digits)
        return f"{x:.2f}" if self.kind == "norms" and x < 9.995 else score_text(x)

    def column_width(self, max_width: int) -> int | None:
        """The widest labelled column (up to LABEL_WIDTH + 1) that fits, or None when even the narrowest does not."""
        widest = max(self.cell_width, min(cells(self.col_labels), LABEL_WIDTH)) + 1
        narrowest = max(self.cell_width, min(cells(self.col_labels), MIN_LABEL))  # + 1 space, - 1 excluded by range
        if self.numbers:  # columns with numbers of their own: every label whole, else the numbers
            if cells(self.col_labels) > LABEL_WIDTH:
                return None
            narrowest = widest - 1
        for width in range(widest, narrowest, -1):
            if self.label_width + 1 + width * len(self.col_labels) <= max_width:
                return width
        return None

    def layout(self, max_width: int, system: str | None) -> Layout | None:
        """The first grid that fits (see the module's docstring), or None: the compact grid's turn."""
        width = self.column_width(max_width)
        if width is not None:
            return Layout(width, 3, False, self.label_width)
        index = self.index_width()
        natural = index + 1 + min(cells(self.row_labels), ROW_LABEL_WIDTH)
        tries = [(self.cell_width + 1, 3), (3, 2), (2, 1)] if self.kind == "weights" else [(self.cell_width + 1, 3)]
        for column, digits in tries:
            room = max_width - 1 - column * len(self.col_labels)
            if room >= min(natural, index + 1 + MIN_ROW_WORD):
                if self.numbers:  # rows that are not the columns' tokens (layers): room for the corner, where there is some
                    natural = max(natural, cells([self.corner]))
                return Layout(column, digits, True, min(natural, room))
        return None

    def natural_width(self) -> int:
        """The width of the grid with every label whole (up to LABEL_WIDTH): what a figure of it is given."""
        return self.label_width + 1 + (max(self.cell_width, min(cells(self.col_labels), LABEL_WIDTH)) + 1) * len(self.col_labels)

    def colour(self, x: float, system: str | None):
        """(cell colour, text colour) on the console's colour system (attn_cli.views.colours: lightness follows the value)."""
        from attn_cli.views import colours

        if self.kind == "norms":  # the weights' scale, up to the largest norm
            cell = colours.weight_colour(x / self.span if self.span > 0 else 0.0, system)
        else:
            cell = colours.weight_colour(x, system) if self.kind == "weights" else colours.score_colour(x, self.span, system)
        return cell, colours.text_on(cell, system)

    def legend(self, system: str | None):
        """One line saying what a colour means."""
        from rich.style import Style
        from rich.text import Text

        line = Text()
        line.append("colour: ", style="dim")
        if self.kind == "weights":
            line.append("weight 0 ", style="dim")
            for k in range(LEGEND_STEPS + 1):
                line.append("█", style=Style(color=self.colour(k / LEGEND_STEPS, system)[0]))
            line.append(" 1 (lighter = more weight)", style="dim")
            return line
        if self.kind == "norms":
            line.append("norm 0 ", style="dim")
            for k in range(LEGEND_STEPS + 1):
                line.append("█", style=Style(color=self.colour(k / LEGEND_STEPS * self.span, system)[0]))
            line.append(f" {self.span:.2f} (lighter = larger)", style="dim")
            return line
        line.append(f"score {-self.span:.1f} ", style="dim")
        for k in range(-LEGEND_STEPS // 2, LEGEND_STEPS // 2 + 1):
            line.append("█", style=Style(color=self.colour(k / (LEGEND_STEPS // 2) * self.span, system)[0]))
        line.append(f" +{self.span:.1f} (dark = near 0; blue below, orange above)", style="dim")
        return line

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        full = self.label_width + 1 + (self.cell_width + 1) * len(self.col_labels)
        return Measurement(min(full, 40), max(full, self.natural_width()))

    def __rich_console__(self, console, options):
        system = colour_system(console)
        layout = self.layout(options.max_width, system)
        if layout is not None:
            yield from self.grid(layout, system)
        elif options.max_width - self.index_width() - 1 >= COMPACT_MIN_CELLS:
            yield from self.compact(options.max_width, system)
        else:
            yield from self.top_entries(options.max_width)
            return
        if system is not None and self.show_legend:
            yield self.legend(system)

    def index_width(self) -> int:
        return len(str(max(len(self.row_labels), len(self.col_labels)) - 1))

    def row_label(self, i: int, width: int) -> str:
        """Row i's label in a numbered grid: "index token", the index left out where the columns do not number that token."""
        label = self.row_labels[i]
        if i < len(self.col_labels) and self.col_labels[i] == label:
            label = f"{i:>{self.index_width()}} {label}"
        return abbreviate(label, width, "left")

    def column_heads(self, layout: Layout) -> list[str]:
        """The header line(s) of the columns: labels, or indices, each ending over its cell's last character
        (on two staggered lines when neighbours would touch)."""
        text = layout.column - 1
        if not layout.numbered:
            return ["".join(abbreviate(label, text, "right") + " " for label in self.col_labels)]
        heads = self.numbers or [str(j) if j < len(self.row_labels) and self.row_labels[j] == label else label
                                 for j, label in enumerate(self.col_labels)]
        lines = 1 if cells(heads) <= text else 2
        rows = [[" "] * (layout.column * len(heads) + 1) for _ in range(lines)]
        for j, head in enumerate(heads):
            end = j * layout.column + text
            head = abbreviate(head, text if lines == 1 else layout.column)
            rows[j % lines][max(end - len(head), 0):end] = head
        return ["".join(row) for row in rows]

    def grid(self, layout: Layout, system: str | None):
        from rich.segment import Segment
        from rich.style import Style
        from rich.text import Text

        dim, bold = Style(dim=True), Style(bold=True)
        text = layout.column - 1
        heads = self.column_heads(layout)
        corner = self.corner if cells([self.corner]) <= layout.row_label or not layout.numbered else self.short_corner()
        for k, line in enumerate(heads):
            yield Segment(abbreviate(corner if k == len(heads) - 1 else "", layout.row_label, "left") + " ", dim)
            yield Segment(line, bold)
            yield Segment.line()
        texts = self.cells if layout.digits == 3 else [[self.cell_text(x, layout.digits) for x in row] for row in self.matrix.tolist()]
        for i, (row, row_texts) in enumerate(zip(self.matrix.tolist(), texts)):
            label = self.row_label(i, layout.row_label) if layout.numbered else abbreviate(self.row_labels[i], layout.row_label, "left")
            yield Segment(label + " ", bold)
            for x, cell in zip(row, row_texts):
                if x != x:
                    yield Segment(cell.rjust(text), dim)
                elif system is None:  # no colour (a pipe, NO_COLOR): none to compute, attn_cli.views.colours not read
                    yield Segment(cell.rjust(text))
                else:
                    background, text_colour = self.colour(x, system)
                    yield Segment(cell.rjust(text), Style(bgcolor=background, color=text_colour))
                yield Segment(" ")
            yield Segment.line()
        if layout.numbered:
            note = self.columns or ("columns: keys by row number" if self.corner.startswith("query") else "columns: queries by row number")
            note += {3: "", 2: "; weights in hundredths (56 = .56, 1. = 1.0)", 1: "; weights in tenths (6 = .6; blank < .05; █ ≥ .95)"}[layout.digits]
            yield Text(note, style="dim")

    def short_corner(self) -> str:
        """"query ↓ key →" as "q ↓ k →", "layer↓ pos→" as "l↓ p→"."""
        def short(word: str) -> str:
            if word.isalpha():
                return word[0]
            return word[0] + word[-1] if word[:-1].isalpha() and word[-1] in "↓→" else word

        return " ".join(short(word) for word in self.corner.split())

    def compact(self, max_width: int, system: str | None):
        """One character cell per entry, token indices as the column axis; rows labelled "index token" where
        there is room. A matrix wider than the console is pooled over blocks of tokens first, and the caption
        says so (the tokens line above the heatmaps lists the indices: a pooled grid does not repeat them)."""
        from rich.segment import Segment
        from rich.style import Style
        from rich.text import Text

        index = self.index_width()
        rows, cols = self.matrix.shape
        label = min(index + 1 + min(cells(self.row_labels), ROW_LABEL_WIDTH), max_width - cols - 1)
        if label < index + MIN_ROW_WORD or cols > max_width - label - 1:  # no room for the tokens: indices alone
            label = index
        block = -(-cols // (max_width - label - 1))  # ceil: tokens per cell along each axis
        matrix, row_starts, col_starts = self.pooled(block)
        dim = Style(dim=True)
        what = {"weights": "weight", "norms": "norm"}.get(self.kind, "score")
        if block == 1:
            cell = f"one cell per {what}"
        elif self.kind == "weights":
            cell = f"a cell per {block} × {block} block: its rows' mean weight on its keys"
        else:
            cell = f"a cell per {block} × {block} block: its mean {what}"
        yield Text(f"{self.corner} (token indices); {cell}", style="dim")
        # the column axis: the index every 10th cell, then a tick under it
        top, ticks = [" "] * len(col_starts), [" "] * len(col_starts)
        for c in range(0, len(col_starts), 10):
            digits = str(col_starts[c])
            top[c:c + len(digits)] = digits  # the last index may run past the grid, never past the console
            ticks[c] = "|"
        for line in (top, ticks):
            yield Segment((" " * label + " " + "".join(line).rstrip())[:max_width], dim)
            yield Segment.line()
        for r, start in enumerate(row_starts):
            if label > index:
                yield Segment(self.row_label(start, label) + " ", Style(bold=True))
            else:
                yield Segment(str(start).rjust(label) + " ", dim)
            for x in matrix[r]:
                if x != x:
                    yield Segment(MASKED if system is None else " ", dim)
                elif system is None:
                    shade = x if self.kind == "weights" else abs(x) / self.span if self.span else 0.0  # norms: over the largest, as scores
                    yield Segment(SHADES[min(int(shade * len(SHADES)), len(SHADES) - 1)])
                else:
                    yield Segment(" ", Style(bgcolor=self.colour(float(x), system)[0]))
            yield Segment.line()
        if system is None:
            scale = "weight" if self.kind == "weights" else f"norm / {self.span:.2f}" if self.kind == "norms" else f"|score| / {self.span:.1f}"
            yield Text(f"{scale}: blank < .2 ≤ ░ < .4 ≤ ▒ < .6 ≤ ▓ < .8 ≤ █; · = masked", style="dim")
        if block == 1 and label == index:  # the rows could not say which token each index is
            yield from self.token_lists()

    def token_lists(self):
        from rich.text import Text

        for name, labels in (("rows", self.row_labels), ("columns", self.col_labels)):
            if name == "columns" and labels == self.row_labels:
                break
            listed = Text(f"{'tokens' if labels == self.col_labels else name}: ", style="dim")
            for i, token in enumerate(labels):
                listed.append(f"{i}:", style="dim")
                listed.append(token + (" " if i < len(labels) - 1 else ""))
            yield listed

    def pooled(self, block: int):  # -> [r, c] matrix, row block starts, column block starts
        """The matrix over blocks of `block` tokens: weights as the mean over a block's rows of the sum over
        its columns (rows still sum to 1), scores as the block's mean; a block is masked when all of it is."""
        import numpy as np

        rows, cols = self.matrix.shape
        row_starts, col_starts = list(range(0, rows, block)), list(range(0, cols, block))
        if block == 1:
            return self.matrix, row_starts, col_starts
        pad_r, pad_c = -rows % block, -cols % block
        padded = np.pad(self.matrix, ((0, pad_r), (0, pad_c)), constant_values=np.nan)  # [R*b, C*b]
        cells = padded.reshape(len(row_starts), block, len(col_starts), block)  # [R, b, C, b]
        masked = np.isnan(cells).all(axis=(1, 3))  # [R, C]
        with np.errstate(invalid="ignore"):
            if self.kind == "weights":
                summed = np.nansum(cells, axis=3)  # [R, b, C]: each row's weight on the block of keys
                real_rows = ~np.isnan(cells).all(axis=(2, 3))  # [R, b]: rows that exist (not padding)
                pooled = np.where(real_rows[:, :, None], summed, np.nan)
                matrix = np.nanmean(pooled, axis=1)  # [R, C]
            else:
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # an all-masked block: NaN, as it should be
                    matrix = np.nanmean(cells, axis=(1, 3))
        return np.where(masked, np.nan, matrix), row_starts, col_starts

    def top_entries(self, max_width: int):
        """Each row's largest entries as a list: what is left when the grid is too wide."""
        import numpy as np
        from rich.text import Text

        yield Text(
            f"{len(self.col_labels)} columns do not fit in {max_width} characters: "
            f"showing the {TOP_KEYS} largest entries of each row instead, keys as index:token (widen the terminal or use --json)",
            style="yellow",
        )
        for i, (label, row) in enumerate(zip(self.row_labels, self.matrix)):
            shown = np.where(np.isnan(row), -np.inf, row)
            best = [j for j in np.argsort(-shown, kind="stable")[:TOP_KEYS] if np.isfinite(shown[j])]
            line = Text(abbreviate(f"{i}:{label}", self.label_width, "left") + " → ", style="bold", no_wrap=True, overflow="ellipsis")
            line.append(", ".join(f"{j}:{self.col_labels[j]} {self.cell_text(row[j])}" for j in best) or "(all masked)")
            line.truncate(max_width, overflow="ellipsis")
            yield line
