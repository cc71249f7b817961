"""`attn inspect` over word vectors: the heatmap, the focus and shift tables, the sense meter."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli import results
from attn_cli.views.base import SHADES, bar, key_label, signed_bar


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
        from attn_cli.views import colours

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
                elif system is None:  # no colour (a pipe, NO_COLOR): none to compute, attn_cli.colours not read
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


def token_list(result: results.InspectResult) -> Text:
    text = Text("tokens ", style="bold")
    for i, token in enumerate(result.tokens):
        text.append(f"{i}:", style="dim")
        text.append(token + " ")
    return text


def head_heading(head: results.HeadView, result: results.InspectResult, stage: str, transpose: bool = False) -> Text:
    mask = "causal mask" if result.mask == "causal" else "no mask"
    text = Text(f"head {head.name}", style="bold cyan")
    text.append(f"  d_k={head.d_k} · {mask} · {stage}{'' if result.scale else ' · not divided by √d_k'}", style="dim")
    if head.distance is not None:
        text.append(f"\n{distance_note(head.distance)}", style="dim")
    if head.sink is not None:
        text.append(f"\n{sink_note(head.sink, 'column' if transpose else 'row')}", style="dim")
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


def sink_note(score: float, line: str = "row") -> str:
    return (f"{results.SINK_TOKEN}: a key every query sees that writes nothing (score {score:.3g}); "
            f"weight on it is an update not made, and each {line} sums to 1 with it")


def heatmap(head: results.HeadView, tokens: list[str], stage: str, transpose: bool) -> Heatmap:
    import numpy as np

    matrix = head.stage_matrix(stage)
    keys = tokens
    if head.sink is not None and stage != "scores":  # the sink as one more key column (it has no Q.K)
        column = head.sink_weights if stage == "weights" else np.full(len(tokens), head.sink)
        matrix, keys = np.column_stack([matrix, column]), [*tokens, results.SINK_TOKEN]
    kind = "weights" if stage == "weights" else "scores"
    if transpose:
        return Heatmap(matrix.T, keys, tokens, kind=kind, corner="key ↓ query →")
    return Heatmap(matrix, tokens, keys, kind=kind)


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
    if head.sink is not None:
        w = float(head.sink_weights[i])
        table.add_row(f"{results.SINK_TOKEN} nothing", f"{head.sink:.3f}", f"{w:.3f}", bar(w))
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
            if row.change[row.names.index(row.nearest_after)] > 0:
                line.append("  (changed)", style="bold green")
            else:  # nearest only because the old sense fell further: context did not bring it
                line.append(f"  (changed, but {row.nearest_after} did not gain: {row.nearest_before} fell more)", style="yellow")
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
        parts.append(head_heading(head, result, stage, transpose))
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
        from attn_cli.views.picture import shift_picture

        parts.append(shift_picture(result.tokens, result.e, result.e_prime))
    return parts
