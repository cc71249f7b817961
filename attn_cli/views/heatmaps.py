"""The heads shown in full: what each head is, then its heatmap (and, asked for, its --focus row and own shift).

Several of the lesson's heads: their notes first, then the heatmaps one after another under a
one-line title each, so that the pictures end the screen together.
"""

from attn_cli import results
from attn_cli.views.heatmap import Heatmap


def heatmap(head: results.HeadView, tokens: list[str], stage: str, transpose: bool, legend: bool = True) -> Heatmap:
    import numpy as np

    matrix = head.stage_matrix(stage)
    keys = tokens
    if head.sink is not None and stage != "scores":  # the sink as one more key column (it has no Q.K; it writes nothing)
        column = head.sink_weights if stage == "weights" else np.zeros(len(tokens)) if stage == "norms" else np.full(len(tokens), head.sink)
        matrix, keys = np.column_stack([matrix, column]), [*tokens, results.SINK_TOKEN]
    kind = {"weights": "weights", "norms": "norms"}.get(stage, "scores")
    if transpose:
        return Heatmap(matrix.T, keys, tokens, kind=kind, corner="key ↓ query →", legend=legend)
    return Heatmap(matrix, tokens, keys, kind=kind, legend=legend)


def checkpoint_head_heading(head: "results.HeadView", result: "results.InspectResult", stage: str):
    from rich.text import Text

    title = Text(f"layer {head.layer} · head {head.index}", style="bold cyan")
    mask = "causal mask" if result.mask == "causal" else "no mask"
    if head.window is not None:  # a local layer: keys further back than its window look masked too
        mask += f" · sliding window of {head.window:,} keys (· further back: hidden, as the mask hides later keys)"
    title.append(f"  d_k={head.d_k} · {mask} · {stage}", style="dim")
    if head.special_weight is not None:
        title.append(f"\nthe hidden special tokens held {head.special_weight.mean():.0%} of this head's weight", style="yellow")
    return title


def shown_stage(options) -> str:
    """The matrix the heatmaps show: options.stage, or "norms" (||alpha_ij f(x_j)||) under --weigh norm."""
    return "norms" if options.weigh == "norm" else options.stage


def heading(head: "results.HeadView", result: "results.InspectResult", options, stage: str):
    from attn_cli.views.captions import head_heading

    if head.layer is None:
        return head_heading(head, result, stage, options.transpose)
    return checkpoint_head_heading(head, result, stage)


def heads(result: "results.InspectResult", options) -> list:
    """Each head shown in full: its heading and heatmap; with --focus the query's row, with --per-head its own shift."""
    from rich.rule import Rule

    from attn_cli.views.captions import heatmap_captions

    stage = shown_stage(options)
    headings = [heading(head, result, options, stage) for head in result.heads]
    apart = len(result.heads) > 1 and any("\n" in h.plain for h in headings)  # notes of several lines: all of them first
    tables = result.focus is not None or options.per_head  # a table under each heatmap: each needs its own legend
    parts: list = [Rule(style="dim")]
    if apart:
        parts += headings
    parts += heatmap_captions(result, options)
    if apart:
        parts.append(Rule(style="dim"))
    if not tables and len(result.heads) > 1:
        titles = [headings[h].split("\n")[0] if apart else headings[h] for h in range(len(result.heads))]
        maps = [heatmap(head, result.tokens, stage, options.transpose, legend=h == len(result.heads) - 1) for h, head in enumerate(result.heads)]
        return parts + [ScreenFit(titles, maps)]
    for h, head in enumerate(result.heads):
        parts.append(headings[h].split("\n")[0] if apart else headings[h])
        parts.append(heatmap(head, result.tokens, stage, options.transpose, legend=tables or h == len(result.heads) - 1))
        if result.focus is not None and head.layer is None:
            from attn_cli.views.focus import focus_table

            parts.append(focus_table(head, result.tokens, result.focus, result.scale))
        if options.per_head:
            from attn_cli.views.shift import head_shift_table

            parts.append(head_shift_table(result, h))
    return parts


class ScreenFit:
    """Several heads in full: one after another, or side by side where a terminal is too short to show them one after
    another (its screen would end on the last head alone) and the narrower grids then fit on it. Side by side, each
    head's title goes under its grid, as a figure's caption, and one legend under them all."""

    GAP = 3

    def __init__(self, titles: list, maps: list[Heatmap]):
        self.titles, self.maps = titles, maps

    def stacked(self) -> list:
        return [part for title, heatmap in zip(self.titles, self.maps) for part in (title, heatmap)]

    def __rich_console__(self, console, options):
        import copy
        import os

        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        from attn_cli.views.heatmap import colour_system

        screen = console.height if console.is_terminal or "LINES" in os.environ else None  # a file has no screen to fit
        tall = len(console.render_lines(Group(*self.stacked()), options.update(height=None), pad=False))
        if screen is None or console.record or tall <= screen:
            yield from self.stacked()
            return
        alone = [copy.copy(m) for m in self.maps]
        for m in alone:
            m.show_legend = False
        for k in range(len(self.maps), 1, -1):  # as many heads a row as fit their width
            width = (options.max_width - self.GAP * (k - 1)) // k
            if not all(shows_grid(m, width) for m in alone):
                continue
            grid = Table.grid(padding=(0, self.GAP, 0, 0))
            for _ in range(k):
                grid.add_column(width=width, max_width=width)
            for start in range(0, len(alone), k):
                row = [Group(m, Text("↑ ") + title) for m, title in zip(alone[start:start + k], self.titles[start:start + k])]
                grid.add_row(*row, *[""] * (k - len(row)))
            if len(console.render_lines(grid, options.update(height=None), pad=False)) < tall:
                yield grid
                system = colour_system(console)
                if system is not None:
                    yield self.maps[-1].legend(system)
                return
        yield from self.stacked()


def shows_grid(heatmap: Heatmap, width: int) -> bool:
    """Whether a heatmap in `width` columns still draws a cell for every weight with its rows labelled by token (a grid,
    or a compact grid that is not pooled): narrower than that, side by side would show less than one after another."""
    from attn_cli.views.heatmap import MIN_ROW_WORD, ROW_LABEL_WIDTH, cells

    if heatmap.layout(width, None) is not None:
        return True
    index, columns = heatmap.index_width(), len(heatmap.col_labels)
    label = min(index + 1 + min(cells(heatmap.row_labels), ROW_LABEL_WIDTH), width - columns - 1)  # as Heatmap.compact lays it out
    return label >= index + MIN_ROW_WORD and columns <= width - label - 1
