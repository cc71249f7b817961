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

    A thumbnail has one cell per token while the sentence fits, two queries per character
    (upper and lower half blocks); longer sentences are pooled over token blocks, and the caption says so.
    """

    def __init__(self, result: "InspectResult", matrices=None):
        import numpy as np

        self.result = result
        w = np.array(result.weights if matrices is None else matrices, dtype=np.float64)  # [L, H, g, g]
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

        from attn_cli.analysis.units import pool

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


def overview(result: "InspectResult", options) -> list:
    from rich.text import Text

    weighed = options.weigh == "norm"
    what = "‖α f(x)‖ over the head's largest" if weighed else "weights"
    return [Text(f"model view: each square is one head's {what}, queries ↓ keys →; dark = 0, yellow = 1"
                 + ("" if result.allowed is None else "; black = masked"), style="dim"),
            ModelOverview(result, by_head_largest(result.value_norms) if weighed else None),
            *([Text(sink_note(result), style="dim")] if result.first_token is not None else []),
            Text("pick heads to see in full with --head LAYER.HEAD (or --layer L)", style="dim")]


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
    return (f"first token: {first.mean():.0%} of a head's weight on average (queries after it), most in {l}.{h} ({first[l, h]:.0%}); "
            f"{heavy} of {first.size} heads put over half their weight there")
