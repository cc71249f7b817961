"""Rich views of the result objects. Imported only when output is for a person."""

from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli import results

if TYPE_CHECKING:
    from attn_cli.lesson import SoftmaxResult


def bar(fraction: float, width: int = 24, style: str = "cyan") -> Text:
    """A horizontal bar for a value in [0, 1], with eighth-block resolution."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    return Text("█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part else ""), style=style)


def signed_bar(value: float, scale: float, width: int = 12) -> Text:
    """A bar that grows left (red) for negative values and right (green) for positive ones."""
    fraction = 0.0 if scale <= 0 else min(abs(value) / scale, 1.0)
    cells = round(fraction * width)
    left = " " * (width - cells) + ("█" if value < 0 else " ") * cells
    right = "█" * cells if value > 0 else ""
    text = Text(left, style="red")
    text.append("│", style="dim")
    text.append(right.ljust(width), style="green")
    return text


MAX_ROWS = 200  # a table in the terminal shows at most this many rows; --json has them all


def more_rows(shown: int, total: int, what: str) -> Text:
    """The note under a table cut at MAX_ROWS."""
    return Text(f"... {total - shown:,} more {what} not shown ({total:,} in all); --json prints every one", style="yellow")


def human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


# --- vectors -------------------------------------------------------------------------------


def vectors_info(info: results.VectorsInfo) -> Table:
    table = Table(box=box.SIMPLE, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("path", info.path)
    table.add_row("format", info.format)
    table.add_row("keys", f"{info.keys:,}")
    table.add_row("dimension", str(info.dimension))
    table.add_row("dtype", info.dtype)
    table.add_row("file size", human_bytes(info.file_bytes))
    table.add_row("load time", f"{info.load_seconds * 1000:.1f} ms")
    return table


# --- softmax / analogy / similarity --------------------------------------------------------


def fmt_probability(p: float) -> str:
    """Four decimals; a tiny but nonzero value in scientific notation, never a misleading 0.0000."""
    if p == 0:
        return "0"
    return f"{p:.4f}" if p >= 5e-5 else f"{p:.2e}"


def fmt_log(x: float) -> str:
    return f"{x:.4f}" if abs(x) < 1e6 else f"{x:.4g}"


def softmax_view(result: "SoftmaxResult"):
    import math
    from math import fsum

    from rich.console import Group

    t = result.temperature
    exp_header = "exp(x - max)" if t == 1 else "argmax (T = 0)" if t == 0 else f"exp((x - max) / {t:g})"
    table = Table(box=box.SIMPLE)
    table.add_column("value", justify="right")
    table.add_column(exp_header, justify="right")
    table.add_column("probability", justify="right")
    table.add_column("")
    if result.log_probabilities is not None:
        table.add_column("log p", justify="right")
    logs = result.log_probabilities or [None] * len(result.values)
    for value, e, p, lp in list(zip(result.values, result.exps, result.probabilities, logs))[:MAX_ROWS]:
        row = [f"{value:.6g}", fmt_probability(e), fmt_probability(p), bar(p)]
        table.add_row(*row, *([fmt_log(lp)] if lp is not None else []))
    total = f"probabilities sum to {fsum(result.probabilities):.6f}"
    winners = sum(e > 0 for e in result.exps)
    if t == 0 or any(v == math.inf for v in result.values):
        why = "T = 0: argmax" if t == 0 else "+inf takes all"
        share = "1 value takes all the mass" if winners == 1 else f"{winners} values share the mass equally"
        summary = Text(f"{why}, {share}; {total}")
    else:
        summary = Text(f"sum of exp = {result.total:.6g}{f' (T = {t:g})' if t != 1 else ''}; {total}")
    if len(result.values) > MAX_ROWS:
        return Group(table, more_rows(MAX_ROWS, len(result.values), "values"), summary)
    return Group(table, summary)


def analogy_verdicts(result: results.AnalogyResult) -> list[str]:
    """The pattern, in words, exactly as the numbers came out."""
    dot = {p.key: p.dot for p in result.probes}
    lines = []
    if result.plural_above_singular is not None:
        n = len(result.pairs)
        if result.plural_above_singular:
            lines.append(f"Every plural scored above its singular ({n} of {n} pairs).")
        else:
            misses = [pair.split("/") for pair in result.plural_exceptions]
            detail = ", ".join(f"{p} {dot[p]:.2f} <= {s} {dot[s]:.2f}" for s, p in misses)
            lines.append(f"Not every plural scored above its singular: {len(misses)} of {n} pairs did not ({detail}).")
    if result.numbers_increasing is not None:
        chain = " < ".join(result.numbers)
        if result.numbers_increasing:
            values = " < ".join(f"{dot[w]:.2f}" for w in result.numbers)
            lines.append(f"{chain} held: {values}.")
        else:
            steps = [step.split("/") for step in result.numbers_breaks]
            detail = ", ".join(f"{u} {dot[u]:.2f} >= {v} {dot[v]:.2f}" for u, v in steps)
            lines.append(f"{chain} did not hold: it broke at {detail}.")
    return lines


def probe_tables(result: results.AnalogyResult) -> list:
    dot = {p.key: p.dot for p in result.probes}
    scale = max((abs(v) for v in dot.values()), default=0.0)
    tables = []
    if result.pairs:
        tables.append(Text("d · E(word), singular and plural side by side:"))
        pairs = Table(box=box.SIMPLE)
        for name in ("singular", "d · E", "", "plural", "d · E", ""):
            pairs.add_column(name, justify="right" if name == "d · E" else "left")
        for s, p in result.pairs[:MAX_ROWS]:
            pairs.add_row(s, f"{dot[s]:.2f}", signed_bar(dot[s], scale, 7), p, f"{dot[p]:.2f}", signed_bar(dot[p], scale, 7))
        tables.append(pairs)
        if len(result.pairs) > MAX_ROWS:
            tables.append(more_rows(MAX_ROWS, len(result.pairs), "pairs"))
    in_pairs = {w for pair in result.pairs for w in pair}
    rest = [p for p in result.probes if p.key not in in_pairs]
    if rest:
        tables.append(Text("d · E(word):" if not result.pairs else "d · E(word), the other probes:"))
        others = Table(box=box.SIMPLE)
        others.add_column("word")
        others.add_column("d · E", justify="right")
        others.add_column("")
        for p in rest[:MAX_ROWS]:
            others.add_row(p.key, f"{p.dot:.2f}", signed_bar(p.dot, scale, 7))
        tables.append(others)
        if len(rest) > MAX_ROWS:
            tables.append(more_rows(MAX_ROWS, len(rest), "probes"))
    return tables


def ranked_table(title: str, rows: list[tuple[str, float]], score: str):
    from rich.console import Group

    table = Table(box=box.SIMPLE)
    table.add_column("#", justify="right", style="dim")
    table.add_column("key")
    table.add_column(score, justify="right")
    for i, (key, value) in enumerate(rows, 1):
        table.add_row(str(i), key_label(key), f"{value:.4f}")
    return Group(*([Text(title)] if title else []), table)


def analogy_view(result: results.AnalogyResult):
    from rich.console import Group

    parts = [Text(f"d = E({result.a}) - E({result.b}), |d| = {result.norm:.4f}", style="bold")]
    parts += probe_tables(result)
    parts += [Text(line) for line in analogy_verdicts(result)]
    if result.neighbors:
        title = f"Nearest keys to d by cosine ({result.a} and {result.b} left out):"
        parts.append(ranked_table(title, [(n.key, n.cosine) for n in result.neighbors], "cosine"))
    if result.c is not None:
        a, b, c = result.a, result.b, result.c
        how = "3CosMul" if result.method == "cosmul" else "3CosAdd"
        title = f"{b} is to {a} as {c} is to ?"
        parts.append(Text(title, style="bold"))
        parts.append(Text(f"{how}: +{a} +{c} -{b}; the input words left out", style="dim"))
        rows = [(x.key, x.similarity) for x in result.answers or []]
        if rows:
            parts.append(ranked_table("", rows, "similarity"))
    return Group(*parts)


READINGS = {"aligned": "aligned", "unrelated": "unrelated", "opposed": "opposed", "undefined": "undefined"}


def fmt_percentile(pct: float | None) -> str:
    """Where a cosine falls among random pairs, without claiming 0% or 100% for a tail the sample did not reach."""
    if pct is None:
        return "-"
    return f"{pct:.1f}%" if 0.05 <= pct <= 99.95 else ("< 0.1%" if pct < 0.05 else "> 99.9%")


def dot_written_out(p: "PairSimilarity"):
    """The lesson's a · b = Σ a_i b_i: the largest products, and what the other components add."""
    from rich.console import Group

    table = Table(box=box.SIMPLE)
    for name in ("i", f"{p.a}_i", f"{p.b}_i", "product", ""):
        table.add_column(name, justify="right" if name else "left")
    scale = max((abs(t.product) for t in p.terms), default=0.0)
    for t in p.terms:
        table.add_row(str(t.component), f"{t.a:+.3f}", f"{t.b:+.3f}", f"{t.product:+.3f}", signed_bar(t.product, scale, 6))
    shown = sum(t.product for t in p.terms)
    total = Text(f"  {len(p.terms)} largest: {shown:+.4f}   the other {p.rest_count}: {p.rest:+.4f}   sum: {p.dot:.4f}")
    return Group(Text(f"{p.a} · {p.b} = Σ {p.a}_i × {p.b}_i over the {len(p.terms) + p.rest_count} components; the largest products:"), table, total)


def baseline_lines(base) -> list:
    """How the percentiles were computed, and a real pair that reads each way."""
    if base is None:
        return [Text("no baseline: the vectors have no two frequent keys with a direction", style="dim")]
    q = base.percentiles
    lines = [Text(f"percentile: the share of {base.pairs:,} random pairs of the {base.keys:,} most frequent keys\n"
                  f"(seed {base.seed}) with a smaller cosine; theirs: 5% {q['5']:.2f}, median {q['50']:.2f}, 95% {q['95']:.2f}.\n"
                  "Above the 95th percentile reads as aligned, below the 5th as opposed.", style="dim")]
    if base.examples:
        tries = Text("pairs from the sample to try:\n  ", style="dim")
        for k, (reading, (a, b)) in enumerate(base.examples.items()):
            tries.append(f"{a} {b}", style="bold")
            tries.append(f" ({reading})" + (", " if k < len(base.examples) - 1 else ""), style="dim")
        lines.append(tries)
    return lines


def similarity_view(result: "SimilarityResult"):
    from rich.console import Group

    norms = Text("norms: " + ", ".join(f"|{w}| = {n:.3f}" for w, n in zip(result.words, result.norms)), style="dim")
    undefined = [Text(ZERO_VECTOR_NOTE, style="yellow")] if any(p.cosine is None for p in result.pairs) else []
    if len(result.pairs) == 1:
        p = result.pairs[0]
        line = Text(f"{p.a} · {p.b} = {p.dot:.4f}   cosine = {fmt_cosine(p.cosine)}   ")
        line.append(READINGS[p.reading], style="bold")
        parts = [line]
        if p.percentile is not None:
            share = fmt_percentile(p.percentile).replace("> ", "").replace("< ", "")
            than = "at least " if p.percentile > 99.95 else "at most " if p.percentile < 0.05 else ""
            parts.append(Text(f"a cosine higher than {than}{share} of random pairs of frequent words", style="dim"))
        parts += [dot_written_out(p), norms, *undefined, *baseline_lines(result.baseline)]
        return Group(*parts)
    table = Table(box=box.SIMPLE)
    for name in ("a", "b", "dot", "cosine", "", "percentile", "reading"):
        table.add_column(name, justify="right" if name in ("dot", "cosine", "percentile") else "left", no_wrap=True)
    for p in result.pairs[:MAX_ROWS]:
        table.add_row(p.a, p.b, f"{p.dot:.4f}", fmt_cosine(p.cosine), signed_bar(p.cosine or 0.0, 1.0, width=6),
                      fmt_percentile(p.percentile), READINGS[p.reading])
    more = [more_rows(MAX_ROWS, len(result.pairs), "pairs")] if len(result.pairs) > MAX_ROWS else []
    return Group(table, *more, norms, *undefined, *baseline_lines(result.baseline))


ZERO_VECTOR_NOTE = "cosine undefined: a zero vector has no direction, so it is neither aligned with nor opposed to anything"


def fmt_cosine(cosine: float | None) -> str:
    return "undefined" if cosine is None else f"{cosine:.4f}"


# --- inspect -------------------------------------------------------------------------------

LEGEND_STEPS = 10
MASKED = "·"
LABEL_WIDTH = 8  # column labels longer than this are abbreviated
ROW_LABEL_WIDTH = 13
TOP_KEYS = 3  # keys per row listed when not even the compact grid fits
MIN_LABEL = 5  # a column label cut shorter than this ("wh…") says nothing: draw the compact grid instead
COMPACT_MIN_CELLS = 8  # the compact grid needs room for at least this many cells a row


def stage_caption(stage: str, *, masked: bool, transposed: bool = False, scaled: bool = True) -> str:
    """What the heatmaps show at this stage; the masked cells (·) are explained only when there are any."""
    if stage == "scores":
        return "Q·Kᵀ before scaling" + (" (· = hidden by the mask in the next step)" if masked else "")
    if stage == "masked":
        matrix = "Q·Kᵀ / √d_k" if scaled else "Q·Kᵀ not divided by √d_k (--no-scale),"
        return matrix + (" with the mask applied (· = −∞, gets weight exactly 0)" if masked else " (no mask)")
    line = "column" if transposed else "row"
    return f"softmax over each query's {line}: each {line} sums to 1" + (" (· = masked, weight exactly 0)" if masked else "")

SENSE_BAR_SCALE = 0.1  # a change of this size fills the sense meter's bar, unless a larger one is shown
RELATIVE_NOTE = "softmax depends only on differences between scores in a row: adding a constant to a row changes nothing"
PARTS_CAPTION = (  # a phrase a line, so that 80 columns never cut one
    "ΔE = ΔE_ctx + ΔE_self\n"
    "  context: Σ_{j≠i} w_ij v_j, what the other tokens wrote\n"
    "  self: w_ii v_i, a copy of the token's own value (through W_O, if any)\n"
    "  cos ctx = cos(E, E + ΔE_ctx): how far the context part alone turns E"
)


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

    `kind` is "weights" (values in [0, 1], one sequential scale) or "scores" (any sign, a
    diverging scale around 0). When the grid is wider than the console it lists each row's
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
        return weight_text(x) if self.kind == "weights" else score_text(x)

    def column_width(self, max_width: int) -> int | None:
        """The widest column (up to LABEL_WIDTH + 1) that fits, or None when even the narrowest does not."""
        widest = max(self.cell_width, min(cells(self.col_labels), LABEL_WIDTH)) + 1
        narrowest = max(self.cell_width, min(cells(self.col_labels), MIN_LABEL))  # + 1 space, - 1 excluded by range
        for width in range(widest, narrowest, -1):
            if self.label_width + 1 + width * len(self.col_labels) <= max_width:
                return width
        return None

    def colour(self, x: float, system: str | None):
        """(cell colour, text colour) on the console's colour system (attn_cli.colours: lightness follows the value)."""
        from attn_cli import colours

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
        import numpy as np
        from rich.segment import Segment
        from rich.style import Style
        from rich.text import Text

        label = self.index_width()
        rows, cols = self.matrix.shape
        room = max_width - label - 1
        block = -(-cols // room)  # ceil: tokens per cell along each axis
        matrix, row_starts, col_starts = self.pooled(block)
        dim = Style(dim=True)
        what = "weight" if self.kind == "weights" else "score"
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


def key_label(key: str) -> str:
    """A key as listed among others: punctuation quoted, so that "," reads as a key, not a separator."""
    return key if any(c.isalnum() for c in key) else f"“{key}”"


def token_list(result: results.InspectResult) -> Text:
    text = Text("tokens ", style="bold")
    for i, token in enumerate(result.tokens):
        text.append(f"{i}:", style="dim")
        text.append(token + " ")
    return text


def head_heading(head: results.HeadView, result: results.InspectResult, stage: str) -> Text:
    mask = "causal mask" if result.mask == "causal" else "no mask"
    text = Text(f"head {head.name}", style="bold cyan")
    text.append(f"  d_k={head.d_k} · {mask} · {stage}{'' if result.scale else ' · not divided by √d_k'}", style="dim")
    if head.distance is not None:
        text.append(f"\n{distance_note(head.distance)}", style="dim")
    if head.description:
        text.append(f"\n{head.description}", style="yellow" if head.noise else "dim")
    if head.top_weight_scaled is not None:
        text.append(
            f"\nwithout /√d_k: mean top weight {head.top_weight:.2f} (with: {head.top_weight_scaled:.2f})",
            style="bold yellow",
        )
    return text


def distance_note(distance: list) -> str:
    """What a key loses for where it stands, in words: "a key k tokens before the query loses 1.33·k, ..."."""
    before, after, itself = distance
    parts = [f"a key k tokens before the query loses {before:.3g}·k from its score" if before else "",
             f"k tokens after it {after:.3g}·k" if after else "", f"the query itself {itself:.3g}" if itself else ""]
    return "distance (ALiBi): " + (", ".join(p for p in parts if p) or "no cost")


def heatmap(head: results.HeadView, tokens: list[str], stage: str, transpose: bool) -> Heatmap:
    matrix = head.stage_matrix(stage)
    kind = "weights" if stage == "weights" else "scores"
    if transpose:
        return Heatmap(matrix.T, tokens, tokens, kind=kind, corner="key ↓ query →")
    return Heatmap(matrix, tokens, tokens, kind=kind)


def focus_table(head: results.HeadView, tokens: list[str], i: int, scale: bool = True) -> Table:
    """Query i's row: the scaled scores and the softmax distribution they become."""
    table = Table(box=box.SIMPLE, title=f"what {tokens[i]!r} (#{i}) attends to, head {head.name}", title_justify="left")
    table.add_column("key")
    distance = " − distance" if head.distance is not None else ""
    table.add_column(("score/√d_k" if scale else "score (not /√d_k)") + distance, justify="right")
    table.add_column("weight", justify="right")
    table.add_column("softmax")
    for j, token in enumerate(tokens):
        if head.allowed is not None and not head.allowed[i, j]:
            table.add_row(Text(f"{j}:{token}", style="dim"), Text("−∞ masked", style="dim"), Text("0", style="dim"), "")
            continue
        w = float(head.weights[i, j])
        table.add_row(f"{j}:{token}", f"{head.scaled[i, j]:.3f}", f"{w:.3f}", bar(w))
    return table


def shift_table(result: results.InspectResult) -> Table:
    """How far each token's embedding moved: E -> E' = E + Delta E, and how much of that the context wrote."""
    table = Table(box=box.SIMPLE, title="embedding shift E → E′ = E + ΔE (all heads)", title_justify="left", collapse_padding=True)
    table.add_column("token")
    table.add_column("‖E‖", justify="right")
    table.add_column("‖ΔE‖", justify="right")
    table.add_column("‖ΔE_ctx‖", justify="right")
    table.add_column("cos(E, E′)", justify="right")
    table.add_column("cos ctx", justify="right")
    neighbors = result.near_input is not None
    if neighbors:
        table.add_column("nearest to E")
        table.add_column("nearest to E′")
        table.caption = "nearest keys by cosine over the vocabulary, the token itself left out"
    numbers = zip(result.input_norms, result.delta_norms, result.delta_context_norms, result.cosines, result.context_cosines)
    for i, (token, (norm, delta, context, cos, context_cos)) in enumerate(zip(result.tokens, numbers)):
        row = [token, f"{norm:.2f}", f"{delta:.2f}", f"{context:.2f}", f"{cos:.3f}", f"{context_cos:.3f}"]
        if neighbors:
            before, after = result.near_input[i], result.near_output[i]
            row.append(", ".join(map(key_label, before)))
            moved = Text()
            for k, key in enumerate(after):
                moved.append(key_label(key), style="" if key in before else "bold green")
                moved.append(", " if k < len(after) - 1 else "")
            row.append(moved)
        table.add_row(*row)
    return table


def head_shift_table(result: results.InspectResult, h: int) -> Table:
    """One head's update alone (--per-head): its size, its context and self parts, and the cosine shifts they cause."""
    head = result.heads[h]
    table = Table(box=box.SIMPLE, title=f"shift from head {head.name} alone", title_justify="left")
    for name in ("token", "‖ΔE‖", "‖ΔE_ctx‖", "‖ΔE_self‖", "cos(E, E+ΔE)", "cos ctx"):
        table.add_column(name, justify="left" if name == "token" else "right")
    cos, context_cos = result.head_cosines(h)
    norms = zip(*head.norm_rows(), cos, context_cos)
    for token, (delta, context, own, c, cc) in zip(result.tokens, norms):
        table.add_row(token, f"{delta:.2f}", f"{context:.2f}", f"{own:.2f}", f"{c:.3f}", f"{cc:.3f}")
    return table


def sense_meter(result: results.InspectResult):
    """Mean cosine of each measured token with each sense's probe words, before and after the heads."""
    from rich.console import Group

    title = Text("sense meter", style="bold")
    title.append(": mean cosine with each sense's probe words, of E (before the heads) and E′ (after)", style="dim")
    table = Table(box=box.SIMPLE)
    for name in ("token", "sense", "before", "after", "change", ""):
        table.add_column(name, justify="right" if name in ("before", "after", "change") else "left")
    scale = max([abs(c) for row in result.senses for c in row.change] + [SENSE_BAR_SCALE])  # tiny changes keep tiny bars
    lines = []
    for row in result.senses:
        for k, (name, before, after, change) in enumerate(zip(row.names, row.before, row.after, row.change)):
            label = f"{row.index}:{row.token}" if k == 0 else ""
            shown = f"{change:+.3f}" if round(change, 3) != 0 else "0.000"
            table.add_row(label, name, f"{before:.3f}", f"{after:.3f}", shown, signed_bar(change, scale, 8))
        table.add_section()
        line = Text(f"  {row.index}:{row.token}", style="bold")
        line.append(f"  nearer to {row.nearest_before} before / {row.nearest_after} after")
        if row.nearest_before != row.nearest_after:
            line.append("  (changed)", style="bold green")
        lines.append(line)
    return Group(title, table, *lines)


def inspect_view(result: results.InspectResult, *, stage: str = "weights", transpose: bool = False, focus: int | None = None,
                 per_head: bool = False, picture: bool = False) -> list:
    """Everything `attn inspect` shows for one sentence, in order."""
    from rich.rule import Rule

    parts: list = [token_list(result)]
    if result.unknown:
        parts.append(Text(f"without a vector: {', '.join(dict.fromkeys(result.unknown))}", style="yellow"))
    position = "word vector + sinusoidal position" if result.position else "word vector only (--no-position)"
    parts.append(Text(f"E = {position}", style="dim"))
    parts.append(Text(stage_caption(stage, masked=result.mask == "causal", transposed=transpose, scaled=result.scale), style="dim"))
    if not result.scale:
        parts.append(Text("--no-scale: the scores go into softmax without the division by √d_k", style="yellow"))
    if stage in ("scores", "masked") or focus is not None:
        parts.append(Text(RELATIVE_NOTE, style="dim"))
    for h, head in enumerate(result.heads):
        parts.append(Rule(style="dim"))
        parts.append(head_heading(head, result, stage))
        parts.append(heatmap(head, result.tokens, stage, transpose))
        if focus is not None:
            parts.append(focus_table(head, result.tokens, focus, result.scale))
        if per_head:
            parts.append(head_shift_table(result, h))
    parts.append(Rule(style="dim"))
    parts.append(shift_table(result))
    parts.append(Text(PARTS_CAPTION, style="dim"))
    if result.senses:
        parts.append(sense_meter(result))
    if picture:
        from attn_cli.picture import shift_picture

        parts.append(shift_picture(result.tokens, result.e, result.e_prime))
    return parts



# --- heads ---------------------------------------------------------------------------------


def _figure(value) -> str:
    return "-" if value is None or value != value else f"{value:.2f}"


def heads_list(result: results.HeadsList) -> Table:
    table = Table(box=box.SIMPLE, title=f"attention heads (d = {result.dimension}; default: {' + '.join(result.default)})")
    table.add_column("head", style="bold")
    table.add_column("d_k", justify="right")
    table.add_column("learned")
    table.add_column("what it does / recorded metric")
    for head in result.heads:
        about = Text(head.description)
        if head.summary:
            about.append("\n" + head.summary, style="green")
        table.add_row(head.name, str(head.d_k), "yes" if head.trained else "no", about)
    return table


def head_trained(result: results.HeadTrained) -> Table:
    table = Table(box=box.SIMPLE, show_header=False, title=f"trained {result.path}")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("links", f"{result.links:,} ({result.train_sentences} sentences trained on, {result.heldout_sentences} held out)")
    table.add_row("d_k / steps / seed / mask", f"{result.d_k} / {result.steps} / {result.seed} / {result.mask}")
    table.add_row("final training loss", f"{result.final_loss:.4f}")
    if result.heldout:
        top, weight = result.heldout["top_on_key"], result.heldout["key_weight"]
        table.add_row("held-out: top weight on a linked key", Text(f"{_figure(top)} ").append(bar(top, 16)))
        table.add_row("held-out: weight on linked keys", Text(f"{_figure(weight)} ").append(bar(weight, 16)))
        table.add_row("held-out linked queries", str(result.heldout["queries"]))
    else:
        table.add_row("held-out", "no sentences held out (--holdout 0): nothing measured")
    return table


EVAL_COLUMNS = {
    "links": [("top_on_key", "top on key"), ("exact_top", "exact top"), ("key_weight", "key weight"), ("others_on_self", "others on self")],
    "senses": [("before", "before"), ("after", "after"), ("mean_cos", "cos(E,E′)"), ("mean_delta_ratio", "‖ΔE‖/‖E‖"),
               ("mean_context_ratio", "‖ΔE_ctx‖/‖E‖"), ("scale", "s")],
}


def heads_eval(result: results.HeadsEval):
    """A row per head (or the heads together) and per baseline, the measures as columns."""
    c = result.counts
    if result.format == "links":
        caption = (f"{c['queries']} linked queries in {c['sentences']} sentences; mask {result.mask}"
                   + (f"; {c['dropped']} link{'s' if c['dropped'] != 1 else ''} dropped (key after its query, hidden by the causal mask)"
                      if c["dropped"] else ""))
        caption += ("\ntop on key: the largest non-self weight is on a linked key; exact top: the linked keys are exactly "
                    "the largest non-self weights; key weight: mean weight on the linked keys; others on self: "
                    "mean weight of every other token on itself")
    else:
        caption = (f"{c['cases']} cases, sense set {result.sense_set}; mask {result.mask}"
                   + (f"; {c['skipped']} skipped (context after the word, hidden by the causal mask)" if c["skipped"] else ""))
        caption += ("\nbefore / after: share of cases where E / E′ of the word is nearer its intended sense than every other "
                    "(mean cosine with the probe words); the even rows spread the weight evenly over the visible tokens other than the word "
                    "(content words: not function words or punctuation), ΔE = s Σ_j w_ij E_j, s giving the heads' mean ‖ΔE‖/‖E‖")
    table = Table(box=box.SIMPLE, title=f"heads eval: {result.file}", title_justify="left", collapse_padding=True)
    table.add_column("", style="bold", no_wrap=True)
    for _, label in EVAL_COLUMNS[result.format]:
        table.add_column(label, justify="right")
    table.add_column("what", style="dim")
    for row in result.rows:
        name = Text(row["name"], style="" if row["kind"] == "baseline" else "bold cyan")
        figures = [row.get(key) for key, _ in EVAL_COLUMNS[result.format]]
        table.add_row(name, *["-" if x is None or x != x else f"{x:.3f}" for x in figures], row.get("about", ""))
    from rich.console import Group

    return Group(table, Text(caption, style="dim"))


# --- real models (--model): results in attn_cli.models.results ---------------------------------

MASKED_RGB = (14, 14, 14)
SHADES = " ░▒▓█"  # weight 0 .. 1 where there is no colour


def weight_colour(x: float, system: str | None = "truecolor"):
    from rich.color import Color

    from attn_cli import colours

    if x != x:
        return Color.from_rgb(*MASKED_RGB)
    return colours.weight_colour(x, system)


class ModelOverview:
    """Every head of every layer as a small heatmap (the "model view"): layers down, heads across.

    A thumbnail has one cell per token while the sentence fits, two queries per character
    (upper and lower half blocks); longer sentences are pooled over token blocks, and the caption says so.
    """

    def __init__(self, result: "ModelResult"):
        import numpy as np

        self.result = result
        w = np.array(result.weights, dtype=np.float64)  # [L, H, g, g]
        if result.allowed is not None:
            w = np.where(result.allowed, w, np.nan)
        self.weights = w

    def size(self, max_width: int) -> tuple[int, int]:  # -> (thumbnail side, heads per row)
        n_layers, n_heads, g = self.weights.shape[:3]
        label = 4
        side = min(g, max(2, (max_width - label) // n_heads - 1))
        per_row = max(1, min(n_heads, (max_width - label) // (side + 1)))
        return side, per_row

    def __rich_console__(self, console, options):
        import numpy as np
        from rich.segment import Segment
        from rich.style import Style

        from attn_cli.models.inspection import pool

        side, per_row = self.size(options.max_width)
        g = self.weights.shape[-1]
        pooled = pool(self.weights, side)  # [L, H, s, s]
        masked = None
        if g > side and self.result.allowed is not None:  # a block is masked when all of it is
            masked = pool(np.where(np.isnan(self.weights[:1, :1]), 0.0, 1.0), side)[0, 0] == 0
        if masked is not None:
            pooled = np.where(masked, np.nan, pooled)
        s = pooled.shape[-1]
        system = colour_system(console)
        colour = system is not None
        n_layers, n_heads = pooled.shape[:2]
        dim = Style(dim=True)
        for start in range(0, n_heads, per_row):
            heads = range(start, min(start + per_row, n_heads))
            yield Segment("    ", dim)
            for h in heads:
                yield Segment(f"h{h}".center(s)[:s] + " ", dim)
            yield Segment.line()
            for l in range(n_layers):
                if l:
                    yield Segment.line()  # a gap between layers
                step = 2 if colour else 1
                for r in range(0, s, step):
                    yield Segment(f"L{l}".ljust(4) if r == 0 else "    ", dim)
                    for h in heads:
                        for c in range(s):
                            top = pooled[l, h, r, c]
                            if not colour:
                                yield Segment(MASKED if top != top else SHADES[min(int(top * len(SHADES)), len(SHADES) - 1)])
                                continue
                            bottom = pooled[l, h, r + 1, c] if r + 1 < s else None
                            yield Segment("▀", Style(color=weight_colour(top, system), bgcolor=None if bottom is None else weight_colour(bottom, system)))
                        yield Segment(" ")
                    yield Segment.line()


def model_heading(result: "ModelResult") -> list:
    m = result.model
    parts = [Text(f"{m['name']} · {m['type']} · {m['layers']} layers × {m['heads']} heads · d_model {m['d_model']} · d_k {m['d_k']} · "
                  + ("causal mask" if result.mask == "causal" else "no mask"), style="bold")]
    text = Text("tokens ", style="bold")
    for i, (token, special) in enumerate(zip(result.tokens, result.special)):
        text.append(f"{i}:", style="dim")
        text.append(token + " ", style="magenta" if special else "")
    parts.append(text)
    notes = []
    if result.words:
        notes.append("word pieces merged into words (--words): a word's row is the mean over its pieces, its column the sum")
    if result.hide_special:
        import numpy as np

        held = np.asarray(result.special_weight)  # [L, H, g]
        notes.append(f"special tokens hidden (--hide-special): they held {held.mean():.0%} of the weight on average "
                     f"(up to {held.max():.0%} of a row), so the rows shown sum to less than 1")
    for note in notes:
        parts.append(Text(note, style="yellow"))
    return parts


def layer_table(result: "ModelResult") -> Table:
    table = Table(box=box.SIMPLE, title="the residual stream, layer by layer (mean over tokens)", title_justify="left")
    for name in ("layer", "‖x‖", "‖Δ attention‖", "‖Δ MLP‖", "cos(x, previous x)"):
        table.add_column(name, justify="right")
    table.add_row("E", f"{result.norms[0].mean():.2f}", "", "", "")
    for l in range(len(result.attn_norms)):
        table.add_row(str(l), f"{result.norms[l + 1].mean():.2f}", f"{result.attn_norms[l].mean():.2f}",
                      f"{result.mlp_norms[l].mean():.2f}", f"{result.layer_cosines[l].mean():.3f}")
    table.caption = UPDATE_CAPTIONS[result.model["type"]]
    return table


UPDATE_CAPTIONS = {
    "glove": "one layer of attn's own heads over GloVe + positions: E′ = E + ΔE, the heads' updates summed; no MLP",
    "bert": "BERT normalises after each block (post-LN): an update here is what the block and the LayerNorm after it changed together",
    "gpt2": "GPT-2 normalises before each block (pre-LN): the updates add to the stream exactly, x_l = x_{l-1} + Δ attention + Δ MLP",
}


def residual_table(result: "ModelResult") -> Table:
    i = result.focus_piece
    table = Table(box=box.SIMPLE, title=f"how {result.pieces[i]!r} (piece #{i}) moves through the layers: E′ = E + ΔE, layer after layer",
                  title_justify="left")
    neighbors = any(row.nearest for row in result.residual)
    for name in ("layer", "‖x‖", "‖Δ attention‖", "‖Δ MLP‖", "cos prev", "cos E") + (("nearest vocabulary tokens",) if neighbors else ()):
        table.add_column(name, justify="left" if name.startswith("nearest") else "right")
    for row in result.residual:
        opt = lambda x, f: "" if x is None else format(x, f)  # noqa: E731
        cells = ["E" if row.layer == 0 else str(row.layer - 1), f"{row.norm:.2f}", opt(row.attn_update, ".2f"),
                 opt(row.mlp_update, ".2f"), opt(row.cosine_previous, ".3f"), f"{row.cosine_input:.3f}"]
        table.add_row(*cells, *([", ".join(row.nearest)] if neighbors else []))
    if neighbors:
        table.caption = "nearest by cosine to the input embeddings of the whole vocabulary"
    return table


def model_view(result: "ModelResult", *, transpose: bool = False, overview: bool = True, picture: bool = False) -> list:
    """Everything `attn inspect --model` shows for one sentence, in order."""
    from rich.rule import Rule

    parts = model_heading(result)
    if overview:
        parts.append(Text("model view: each square is one head's weights, queries ↓ keys →; dark = 0, yellow = 1"
                          + ("" if result.allowed is None else "; black = masked"), style="dim"))
        parts.append(ModelOverview(result))
        parts.append(Text("pick heads to see in full with --head LAYER.HEAD (or --layer L)", style="dim"))
    else:
        stage = result.stage or "weights"
        if stage != "weights":
            parts.append(Text(stage_caption(stage, masked=result.mask == "causal", transposed=transpose), style="dim"))
            parts.append(Text(RELATIVE_NOTE, style="dim"))
        for l, h in result.selected:
            parts.append(Rule(style="dim"))
            head = result.head_view(l, h)
            title = Text(f"layer {l} · head {h}", style="bold cyan")
            title.append(f"  d_k={result.model['d_k']} · {'causal mask' if result.mask == 'causal' else 'no mask'} · {stage}", style="dim")
            if result.special_weight is not None:
                title.append(f"\nthe hidden special tokens held {result.special_weight[l, h].mean():.0%} of this head's weight", style="yellow")
            parts.append(title)
            parts.append(heatmap(head, result.tokens, stage, transpose))
    parts.append(Rule(style="dim"))
    parts.append(layer_table(result))
    if result.residual is not None:
        parts.append(residual_table(result))
        if picture:
            from attn_cli.picture import project_path

            parts.append(project_path(result.pieces[result.focus_piece], result.focus_path))
    return parts


def model_info(info: "ModelInfo") -> Table:
    table = Table(box=box.SIMPLE, show_header=False, title=f"{info.name} ({info.path})", title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(style="dim")
    kind = {"bert": "BERT encoder: every token sees every token", "gpt2": "GPT-2 decoder: causal mask"}[info.type]
    table.add_row("architecture", info.type, kind)
    table.add_row("layers × heads", f"{info.layers} × {info.heads}", f"{info.layers * info.heads} heads")
    table.add_row("d_model", str(info.d_model), "the size of every token's vector E")
    table.add_row("d_k", str(info.d_k), "d_model / heads: the query/key/value size of one head")
    table.add_row("MLP width", str(info.d_ff), info.activation)
    table.add_row("vocabulary", f"{info.vocabulary:,}", f"up to {info.max_positions} positions")
    p = info.per_head
    table.add_section()
    table.add_row("one head", f"{p['weights']:,}",
                  f"W_Q, W_K, W_V {p['w_q'][0]}×{p['w_q'][1]} each and W_O's share {p['w_o'][0]}×{p['w_o'][1]}: 4 × {p['w_q'][0]} × {p['w_q'][1]}; + {p['biases']} biases")
    counts = info.parameters
    for name in ("embeddings", "attention", "mlp", "layer_norms"):
        share = counts[name] / counts["total"] if counts["total"] else 0.0
        table.add_row(name.replace("_", " "), f"{counts[name]:,}", f"{share:.1%}")
    table.add_row("total", f"{counts['total']:,}", "counted from the tensors in model.safetensors (a pooler or LM head is not used)")
    return table


def heads_found(found: "HeadsFound", top: int):
    from rich.console import Group

    title = Text(f"{found.model} on {found.file}: {found.queries} linked queries in {found.sentences} sentences", style="bold")
    if found.dropped:
        title.append(f" ({found.dropped} links dropped: a key after its query under the causal mask, or a word linked to itself)", style="dim")
    table = Table(box=box.SIMPLE)
    for name in ("head", "top on key", "exact top", "key weight", "beyond previous", ""):
        table.add_column(name, justify="left" if name in ("head", "") else "right")
    fmt = lambda x: "–" if x != x else f"{x:.3f}"  # noqa: E731
    for row in found.heads[:top]:
        table.add_row(row["name"], *(fmt(row[k]) for k in FOUND_MEASURES), bar(0.0 if row[found.sort] != row[found.sort] else row[found.sort], 12))
    table.add_section()
    for row in found.baselines:
        table.add_row(Text(f"{row['name']} (baseline)", style="dim"), *(fmt(row[k]) for k in FOUND_MEASURES), "")
    parts = [title, table]
    previous = next(b for b in found.baselines if b["name"] == "previous")
    best = found.heads[0]
    if found.sort == "top_on_key" and previous["top_on_key"] >= best["top_on_key"]:
        verdict = Text(f"no head beats the previous-word baseline on top on key ({previous['top_on_key']:.3f}): "
                       "the labelled key is mostly the word just before", style="yellow")
        far = max(found.heads, key=lambda r: -1.0 if r["top_beyond_previous"] != r["top_beyond_previous"] else r["top_beyond_previous"])
        if far["top_beyond_previous"] == far["top_beyond_previous"]:
            verdict.append(f"; for the keys further back the best head is {far['name']} ({far['top_beyond_previous']:.3f}, --sort beyond)")
        parts.append(verdict)
    caption = Text(
        "top on key: share of queries whose largest weight (itself and special tokens left out) is on a labelled key; "
        "exact top: its labelled keys are exactly its largest weights; key weight: mean weight on the keys; "
        f"beyond previous: top on key with the previous word out of the running, over the {found.beyond_previous} queries with a key further back. "
        "Baselines: previous = all weight on the previous word; even = spread over the visible words. Word pieces merged into words.",
        style="dim")
    return Group(*parts, caption)


FOUND_MEASURES = ("top_on_key", "exact_top", "key_weight", "top_beyond_previous")
