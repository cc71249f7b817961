"""Real checkpoints (`--model`; results in attn_cli.models.results): the model view, layers, residual updates, heads found."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli.views.base import SHADES, bar
from attn_cli.views.inspection import MASKED, RELATIVE_NOTE, colour_system, heatmap, stage_caption

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

        from attn_cli.analysis.model import pool

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
            from attn_cli.views.picture import project_path

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
