"""The heatmap: a matrix as a grid of coloured, numbered cells, degrading to a compact grid, then to a list of each row's top entries."""

from attn_cli import results
from attn_cli.views.base import SHADES

LEGEND_STEPS = 10
MASKED = "·"
LABEL_WIDTH = 8  # column labels longer than this are abbreviated
ROW_LABEL_WIDTH = 13
TOP_KEYS = 3  # keys per row listed when not even the compact grid fits
MIN_LABEL = 5  # a column label cut shorter than this ("wh…") says nothing: draw the compact grid instead
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


def score_text(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 9.95 else f"{x:.0f}"


def colour_system(console) -> str | None:
    """The console's colour system: None without colour (NO_COLOR, a pipe); an export is drawn in full colour."""
    if console.no_color:
        return None
    if console.color_system is not None:
        return console.color_system  # "truecolor", "256", "standard" or "windows"
    return "truecolor" if console.record else None


class Heatmap:
    """A matrix as a grid of coloured cells with labelled rows and columns; NaN cells are masked.

    `kind` is "weights" (values in [0, 1], one sequential scale), "norms" (values from 0 up, the
    same scale up to the largest) or "scores" (any sign, a diverging scale around 0). When the grid is wider than the console it lists each row's
    largest entries instead, and says so.
    """

    def __init__(self, matrix, row_labels: list[str], col_labels: list[str], *, kind: str = "weights", corner: str = "query ↓ key →"):
        import numpy as np

        self.matrix = np.asarray(matrix, dtype=np.float64)  # [rows, cols], NaN = masked
        self.row_labels = row_labels
        self.col_labels = col_labels
        self.kind = kind
        self.corner = corner
        finite = self.matrix[np.isfinite(self.matrix)]
        self.span = float(np.max(np.abs(finite))) if finite.size else 1.0  # diverging scale's end
        self.cells = [[self.cell_text(x) for x in row] for row in self.matrix.tolist()]
        self.cell_width = max([len(c) for row in self.cells for c in row] + [3])
        self.label_width = min(max(cells(row_labels), cells([corner])), ROW_LABEL_WIDTH)

    def cell_text(self, x: float) -> str:
        if x != x:  # NaN: masked
            return MASKED
        return weight_text(x) if self.kind == "weights" else f"{x:.2f}" if self.kind == "norms" and x < 9.995 else score_text(x)

    def column_width(self, max_width: int) -> int | None:
        """The widest column (up to LABEL_WIDTH + 1) that fits, or None when even the narrowest does not."""
        widest = max(self.cell_width, min(cells(self.col_labels), LABEL_WIDTH)) + 1
        narrowest = max(self.cell_width, min(cells(self.col_labels), MIN_LABEL))  # + 1 space, - 1 excluded by range
        for width in range(widest, narrowest, -1):
            if self.label_width + 1 + width * len(self.col_labels) <= max_width:
                return width
        return None

    def colour(self, x: float, system: str | None):
        """(cell colour, text colour) on the console's colour system (attn_cli.views.colours: lightness follows the value)."""
        from attn_cli.views import colours

        if self.kind == "norms":
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
            line.append("0 ", style="dim")
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
        return Measurement(min(full, 40), full + LABEL_WIDTH * len(self.col_labels))

    def __rich_console__(self, console, options):
        width = self.column_width(options.max_width)
        system = colour_system(console)
        if width is not None:
            yield from self.grid(width, system)
        elif options.max_width - self.index_width() - 1 >= COMPACT_MIN_CELLS:
            yield from self.compact(options.max_width, system)
        else:
            yield from self.top_entries(options.max_width)
            return
        if system is not None:
            yield self.legend(system)

    def index_width(self) -> int:
        return len(str(max(len(self.row_labels), len(self.col_labels)) - 1))

    def compact(self, max_width: int, system: str | None):
        """One character cell per entry, token indices as the axes and the index -> token lists below.
        A matrix wider than the console is pooled over blocks of tokens first, and the caption says so."""
        from rich.segment import Segment
        from rich.style import Style
        from rich.text import Text

        label = self.index_width()
        rows, cols = self.matrix.shape
        room = max_width - label - 1
        block = -(-cols // room)  # ceil: tokens per cell along each axis
        matrix, row_starts, col_starts = self.pooled(block)
        dim = Style(dim=True)
        what = {"weights": "weight", "norms": "norm"}.get(self.kind, "score")
        if block == 1:
            cell = f"one cell per {what}"
        elif self.kind == "weights":
            cell = f"a cell per {block} × {block} block: its rows' mean weight on its keys"
        else:
            cell = f"a cell per {block} × {block} block: its mean score"
        yield Text(f"{self.corner} (token indices); {cell}", style="dim")
        # the column axis: the index every 10th cell, then a tick under it
        top, ticks = [" "] * len(col_starts), [" "] * len(col_starts)
        for c in range(0, len(col_starts), 10):
            digits = str(col_starts[c])
            top[c:c + len(digits)] = digits
            ticks[c] = "|"
        for line in (top, ticks):
            yield Segment(" " * label + " " + "".join(line[:len(col_starts)]).rstrip(), dim)
            yield Segment.line()
        for r, start in enumerate(row_starts):
            yield Segment(str(start).rjust(label) + " ", dim)
            for x in matrix[r]:
                if x != x:
                    yield Segment(MASKED if system is None else " ", dim)
                elif system is None:
                    shade = x if self.kind == "weights" else abs(x) / self.span if self.span else 0.0
                    yield Segment(SHADES[min(int(shade * len(SHADES)), len(SHADES) - 1)])
                else:
                    yield Segment(" ", Style(bgcolor=self.colour(float(x), system)[0]))
            yield Segment.line()
        if system is None:
            scale = "weight" if self.kind == "weights" else f"|score| / {self.span:.1f}"
            yield Text(f"{scale}: blank < .2 ≤ ░ < .4 ≤ ▒ < .6 ≤ ▓ < .8 ≤ █; · = masked", style="dim")
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

    def grid(self, width: int, system: str | None):
        from rich.segment import Segment
        from rich.style import Style

        dim = Style(dim=True)
        yield Segment(abbreviate(self.corner, self.label_width, "left") + " ", dim)
        for label in self.col_labels:
            yield Segment(abbreviate(label, width - 1, "right") + " ", Style(bold=True))
        yield Segment.line()
        for label, row, texts in zip(self.row_labels, self.matrix.tolist(), self.cells):
            yield Segment(abbreviate(label, self.label_width, "left") + " ", Style(bold=True))
            for x, text in zip(row, texts):
                if x != x:
                    yield Segment(text.rjust(width - 1), dim)
                elif system is None:  # no colour (a pipe, NO_COLOR): none to compute, attn_cli.views.colours not read
                    yield Segment(text.rjust(width - 1))
                else:
                    background, text_colour = self.colour(x, system)
                    yield Segment(text.rjust(width - 1), Style(bgcolor=background, color=text_colour))
                yield Segment(" ")
            yield Segment.line()

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


def heatmap(head: results.HeadView, tokens: list[str], stage: str, transpose: bool) -> Heatmap:
    import numpy as np

    matrix = head.stage_matrix(stage)
    keys = tokens
    if head.sink is not None and stage != "scores":  # the sink as one more key column (it has no Q.K; it writes nothing)
        column = head.sink_weights if stage == "weights" else np.zeros(len(tokens)) if stage == "norms" else np.full(len(tokens), head.sink)
        matrix, keys = np.column_stack([matrix, column]), [*tokens, results.SINK_TOKEN]
    kind = {"weights": "weights", "norms": "norms"}.get(stage, "scores")
    if transpose:
        return Heatmap(matrix.T, keys, tokens, kind=kind, corner="key ↓ query →")
    return Heatmap(matrix, tokens, keys, kind=kind)


def checkpoint_head_heading(head: "results.HeadView", result: "results.InspectResult", stage: str):
    from rich.text import Text

    title = Text(f"layer {head.layer} · head {head.index}", style="bold cyan")
    title.append(f"  d_k={head.d_k} · {'causal mask' if result.mask == 'causal' else 'no mask'} · {stage}", style="dim")
    if head.special_weight is not None:
        title.append(f"\nthe hidden special tokens held {head.special_weight.mean():.0%} of this head's weight", style="yellow")
    return title


def heads(result: "results.InspectResult", options) -> list:
    """Each head shown in full: its heading and heatmap; with --focus the query's row, with --per-head its own shift."""
    from rich.rule import Rule
    from rich.text import Text

    from attn_cli.views.captions import RELATIVE_NOTE, head_heading, stage_caption

    parts: list = []
    stage = "norms" if options.weigh == "norm" else options.stage
    if result.model is not None and stage not in ("weights", "norms"):  # a checkpoint's heading does not say what the stage shows
        parts.append(Text(stage_caption(stage, masked=result.mask == "causal", transposed=options.transpose), style="dim"))
        parts.append(Text(RELATIVE_NOTE, style="dim"))
    for h, head in enumerate(result.heads):
        parts.append(Rule(style="dim"))
        parts.append(head_heading(head, result, stage, options.transpose) if head.layer is None else checkpoint_head_heading(head, result, stage))
        parts.append(heatmap(head, result.tokens, stage, options.transpose))
        if result.focus is not None and head.layer is None:
            from attn_cli.views.focus import focus_table

            parts.append(focus_table(head, result.tokens, result.focus, result.scale))
        if options.per_head:
            from attn_cli.views.shift import head_shift_table

            parts.append(head_shift_table(result, h))
    return parts
