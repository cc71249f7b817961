"""The model view: every head of every layer as a small heatmap, layers down, heads across."""

from attn_cli.views.base import SHADES
from attn_cli.views.heatmap import MASKED, colour_system

MASKED_RGB = (14, 14, 14)


def weight_colour(x: float, system: str | None = "truecolor"):
    from rich.color import Color

    from attn_cli.views import colours

    if x != x:
        return Color.from_rgb(*MASKED_RGB)
    return colours.weight_colour(x, system)


class ModelOverview:
    """Every head of every layer as a small heatmap (the "model view"): layers down, heads across.

    In a terminal a thumbnail has one cell per token while the sentence fits, two queries per
    character (upper and lower half blocks); longer sentences are pooled over token blocks, and the
    caption says so. In an export each query is a line of coloured cells, no half blocks: a
    glyph never quite fills its line, and would leave seams; and each token two characters, so that
    a cell is as tall as it is wide (a line is twice as tall as a character is wide: one character a
    token would stretch every thumbnail to twice its height). `square` (a figure of the model view
    alone) does the same, at the figure's own width.
    """

    SQUARE_MAX = 48  # a figure pools longer sentences to this many tokens a side

    def __init__(self, result: "InspectResult", square: bool = False, matrices=None):
        import numpy as np

        self.result = result
        self.square = square
        self.matrices = result.weights if matrices is None else matrices  # [L, H, g, g]: pooled a layer at a time, never copied whole
        self.shape = np.shape(self.matrices)

    def visible(self, l: int):  # -> [g, g] bool or None: layer l's visible keys (a local layer's window hides more than the mask)
        r = self.result
        if r.allowed is None:
            return None
        return r.allowed if r.layer_allowed is None else r.layer_allowed[l]

    def size(self, max_width: int, square: bool | None = None) -> tuple[int, int]:  # -> (thumbnail side, heads per row)
        n_layers, n_heads, g = self.shape[:3]
        square = self.square if square is None else square
        label, cell = 4, 2 if square else 1
        side = min(g, self.SQUARE_MAX if square else g, max(2, ((max_width - label) // n_heads - 1) // cell))
        per_row = max(1, min(n_heads, (max_width - label) // (side * cell + 1)))
        return side, per_row

    def natural_width(self) -> int:
        n_heads, g = self.shape[1], self.shape[-1]
        cell = 2 if self.square else 1
        return 4 + n_heads * (min(g, self.SQUARE_MAX if self.square else g) * cell + 1)

    def pooled(self, side: int):  # -> [L, H, s, s]
        import numpy as np

        from attn_cli.analysis.units import pool

        layers = []
        for l in range(self.shape[0]):  # a layer at a time: float64 copies of one layer's heads, not of every layer's
            w = np.array(self.matrices[l], dtype=np.float64)  # [H, g, g]
            seen = self.visible(l)
            if seen is not None:
                w = np.where(seen, w, np.nan)
            pooled = pool(w, side)
            if self.shape[-1] > side and seen is not None:  # a block is masked when all of it is
                pooled = np.where(pool(np.where(seen, 1.0, 0.0)[None], side) == 0, np.nan, pooled)
            layers.append(pooled)
        return np.stack(layers)

    def __rich_console__(self, console, options):
        from rich.segment import Segment
        from rich.style import Style

        system = colour_system(console)
        square = self.square or (console.record and system is not None)  # an export's cells: two characters, square
        side, per_row = self.size(options.max_width, square)
        pooled = self.pooled(side)
        s = pooled.shape[-1]
        halves = system is not None and not console.record  # two queries a character: only in a terminal
        step, cell = (2 if halves else 1), (2 if square else 1)
        n_layers, n_heads = pooled.shape[:2]
        dim = Style(dim=True)
        for start in range(0, n_heads, per_row):
            heads = range(start, min(start + per_row, n_heads))
            yield Segment("    ", dim)
            for h in heads:
                yield Segment(f"h{h}".center(s * cell)[:s * cell] + " ", dim)
            yield Segment.line()
            for l in range(n_layers):
                if l and not (halves and s % 2):  # a gap between layers (an odd side of half blocks ends in one)
                    yield Segment.line()
                for r in range(0, s, step):
                    yield Segment(f"L{l}".ljust(4) if r == 0 else "    ", dim)
                    for h in heads:
                        for c in range(s):
                            top = pooled[l, h, r, c]
                            if system is None:
                                yield Segment(MASKED if top != top else SHADES[min(int(top * len(SHADES)), len(SHADES) - 1)])
                            elif not halves:
                                yield Segment(" " * cell, Style(bgcolor=weight_colour(top, system)))
                            else:
                                bottom = pooled[l, h, r + 1, c] if r + 1 < s else None
                                yield Segment("▀", Style(color=weight_colour(top, system), bgcolor=None if bottom is None else weight_colour(bottom, system)))
                        yield Segment(" ")
                    yield Segment.line()
        g = self.shape[-1]
        if console.record and s < g:  # an export's squares: what they hold, when fewer than the tokens
            yield Segment(f"each square pools the {g} tokens into {s} × {s} blocks (--export-view overview draws more)", dim)
            yield Segment.line()


def overview(result: "InspectResult", options) -> list:
    from rich.rule import Rule
    from rich.text import Text

    weighed = options.weigh == "norm"
    what = "‖α f(x)‖ over the head's largest" if weighed else "weights"
    return [Rule(style="dim"), Text(f"model view: each square is one head's {what}, queries ↓ keys →; dark = 0, yellow = 1"
                 + ("" if result.allowed is None else "; black = masked"), style="dim"),
            ModelOverview(result, matrices=by_head_largest(result.value_norms) if weighed else None),
            *([Text(sink_note(result), style="dim")] if result.first_token is not None else [])]


def next_step(result: "InspectResult", options) -> list:
    """The model view's last word, under the tables that follow it: how to see a head of it in full."""
    from rich.text import Text

    return [Text("see a head of the model view above in full: --head LAYER.HEAD, or --layer L", style="dim")]


def by_head_largest(norms):  # [L, H, g, g] -> [L, H, g, g] in [0, 1]
    """Each head's value-weighted norms over its largest, so that a thumbnail reads on the weights' 0-1 scale."""
    import numpy as np

    top = np.max(norms, axis=(-2, -1), keepdims=True)
    return np.divide(norms, top, out=np.zeros_like(norms, dtype=np.float64), where=top > 0)


def sink_note(result) -> str:
    """How much weight the heads park on the first token (a decoder's attention sink, StreamingLLM), in a line."""
    import numpy as np

    first = np.asarray(result.first_token)  # [L, H]
    l, h = np.unravel_index(int(np.argmax(first)), first.shape)
    heavy = int((first > 0.5).sum())
    return (f"first token: {first.mean():.0%} of a head's weight on average (queries after it)\n"  # a phrase a line: 80 columns cut none
            f"most in {l}.{h} ({first[l, h]:.0%}); {heavy} of {first.size} heads put over half their weight there")
