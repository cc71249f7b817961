"""One view alone as a figure for a slide (--export-view): titled, with its legend, as wide as it needs.

The heatmaps of several heads stand side by side while they fit FIGURE_WIDTH columns (a slide is
wider than it is tall); the model view gets square cells. The width is measured from what is drawn,
so that the picture holds the view with every label whole and no empty margin.
"""

from attn_cli.views.inspect import named

FIGURE_WIDTH = 320  # columns: side-by-side heatmaps wider than this are stacked
GAP = 3  # columns between side-by-side heatmaps


class Legend:
    """A heatmap's colour legend, drawn on whatever console it is printed on."""

    def __init__(self, heatmap):
        self.heatmap = heatmap

    def __rich_console__(self, console, options):
        from attn_cli.views.heatmap import colour_system

        system = colour_system(console)
        if system is not None:
            yield self.heatmap.legend(system)


def heatmap_figure(result, options) -> tuple[list, int]:
    from rich.console import Group
    from rich.table import Table

    from attn_cli.views.captions import heatmap_captions
    from attn_cli.views.heatmaps import heading, heatmap, shown_stage

    stage = shown_stage(options)
    maps = [heatmap(head, result.tokens, stage, options.transpose, legend=False) for head in result.heads]
    blocks = [Group(heading(head, result, options, stage).split("\n")[0], m) for head, m in zip(result.heads, maps)]
    widths = [m.natural_width() for m in maps]
    side = sum(widths) + GAP * (len(maps) - 1) <= FIGURE_WIDTH
    if side:
        row = Table.grid(padding=(0, GAP, 0, 0))
        for width in widths:
            row.add_column(width=width, no_wrap=True)
        row.add_row(*blocks)
        body, width = [row], sum(widths) + GAP * (len(maps) - 1)
    else:
        body, width = blocks, max(widths)
    return [*heatmap_captions(result, options), *body, Legend(maps[-1])], width


def overview_figure(result, options) -> tuple[list, int]:
    from rich.text import Text

    from attn_cli.views.heatmap import Heatmap
    from attn_cli.views.overview import ModelOverview, overview

    from attn_cli.views.overview import by_head_largest

    picture = ModelOverview(result, square=True, matrices=by_head_largest(result.value_norms) if options.weigh == "norm" else None)
    caption = overview(result, options)[1]
    scale = Heatmap([[0.0, 1.0]], ["a"], ["a", "b"])
    return [caption, picture, Legend(scale), Text("queries ↓ keys →, one square per token" if picture.shape[-1] <= picture.SQUARE_MAX
                                                   else f"pooled to {picture.SQUARE_MAX} blocks of tokens a side", style="dim")], picture.natural_width()


def figure(result, options, name: str, sentence: str, console) -> tuple[list, int]:
    """(the parts, the width in columns) of view `name` alone, under a title naming the sentence (and the model)."""
    from rich.text import Text

    if name == "heatmap" and not options.overview and result.heads:
        parts, width = heatmap_figure(result, options)
    elif name == "overview" and result.weights is not None:
        parts, width = overview_figure(result, options)
    else:
        view = named(name)
        missing = [need for need in view.needs if getattr(result, need) is None]
        parts = [] if missing else [p for p in view.parts(result, options) if type(p).__name__ != "Rule"]
        from attn_cli.views.base import Footnote, Unwidowed

        width = max((console.measure(p).maximum for p in parts if not isinstance(p, (Text, Footnote, Unwidowed))), default=0)  # notes wrap
    if not parts:
        from attn_cli.errors import InputError

        raise InputError(f"--export-view {name}: this sentence's result has no {name} to export")
    model = f"{result.model['name']} · " if result.model is not None else ""
    title = Text(f"{model}“{sentence}”", style="bold")
    return [title, *parts], max(width, 40)
