"""The view of `attn compare`: the two runs' streams layer by layer beside a baseline, their next tokens, a head's maps,
their continuations; the layers in three groups of columns, so that a 30-layer model's comparison fits 80 x 24."""

import math

import numpy as np
from rich.text import Text

from attn_cli.views.base import FitTable, Unwidowed, key_label, steered_line, token_line

GROUPS = 3  # groups of layer columns side by side


def compare_view(result) -> list:
    m = result.model
    parts = [Text(f"{m['name']} · {m['type']} · {m['layers']} layers × {m['heads']} heads", style="bold"), *runs_lines(result)]
    if result.first is None:
        parts.append(Text("A and B read the same tokens with nothing added: the two runs are the same (cosine 1, KL 0)", style="bold"))
    parts += [Unwidowed(layers_caption(result)), layer_table(result), *([Unwidowed(apart)] if (apart := apart_line(result)) else []),
              Unwidowed(next_caption(result)), next_table(result)]
    if result.maps is not None:
        parts += head_maps(result)
    if result.continuations is not None:
        parts += continuation_lines(result)
    return parts


def runs_lines(result) -> list:
    """A's tokens, then B's (or that B is A's text again), then what steered B."""
    same = result.texts[0] == result.texts[1]
    a = Text("A ", style="bold") + token_line(result.tokens[0])[len("tokens "):]
    b = Text("B the same text", style="bold") if same else Text("B ", style="bold") + token_line(result.tokens[1])[len("tokens "):]
    steered = steered_line(result.steered)
    if steered is None:
        return [a, b]
    return [a, b + Text(", ") + steered] if same else [a, b, Text("B ", style="bold") + steered]


def layers_caption(result) -> Text:
    """One line: what the layer table's columns are (docs/directions.md says why nb is the baseline)."""
    m = result.cosine.shape[1]
    mean = "" if result.first is None else f"; mean of {result.mean_from()}..{m - 1}"
    return Text(f"cos(A, B) by {result.aligned}, per layer: last position{mean}; nb: A at p vs p + 1", style="bold")


def cos_text(x) -> str:
    return "" if x is None or math.isnan(x) else f"{x:.3f}"


def layer_table(result):
    """Layers down the rows and across GROUPS groups of columns: layer, last, mean (bold where below nb), nb."""
    L = len(result.cosine)
    rows = -(-L // GROUPS)
    groups = -(-L // rows)
    table = FitTable(box=None, padding=(0, 1, 0, 0), show_edge=False)
    for g in range(groups):
        if g:
            table.add_column("", kind="label", width=1)
        for name in ("layer", "last", "mean", "nb"):
            table.add_column(name, justify="right")
    mean, last, base, apart = result.mean(), result.last(), result.baseline, set(result.apart())
    for r in range(rows):
        cells = []
        for g, l in enumerate(range(r, r + groups * rows, rows)):
            cells += ["│"] if g else []
            if l >= L:
                cells += [""] * 4
                continue
            cells += [str(l), cos_text(last[l]), Text(cos_text(None if mean is None else mean[l]), style="bold" if l in apart else ""),
                      cos_text(None if base is None else base[l])]
        table.add_row(*cells)
    return table


def apart_line(result) -> Text | None:
    """How far apart, in units of A's neighbouring tokens: (1 − mean) / (1 − nb), its range over the layers, and the layers past 1
    (None: two identical runs)."""
    ratio = result.ratio()
    if ratio is None:
        return None if result.first is None else Text("one position: no neighbouring tokens to measure against", style="dim")
    layers = result.apart()
    past = f"layer{'s' * (len(layers) != 1)} {spans(layers)}" if layers else "none"
    return Text(f"(1 − mean)/(1 − nb): {np.nanmin(ratio):.2f} to {np.nanmax(ratio):.2f} (1: as far as A's neighbours); above 1: {past}",
                style="bold")


def spans(layers: list[int]) -> str:
    """[3, 4, 5, 9] -> "3-5, 9"."""
    out, start = [], None
    for i, l in enumerate(layers):
        if start is None:
            start = l
        if i == len(layers) - 1 or layers[i + 1] != l + 1:
            out.append(str(start) if start == l else f"{start}-{l}")
            start = None
    return ", ".join(out)


def next_caption(result) -> Text:
    text = f"next token: KL(A‖B) {result.kl[0]:.3g}, KL(B‖A) {result.kl[1]:.3g} nats"
    if result.kl_scale is not None:
        text += f"; A one token earlier vs A: {result.kl_scale:.3g}"
    return Text(text, style="bold")


def next_table(result):
    table = FitTable(box=None, padding=(0, 1, 0, 0), show_edge=False)
    for name, justify in (("A", "left"), ("p", "right"), ("B", "left"), ("p", "right"), ("rose", "left"), ("A→B", "right"),
                          ("fell", "left"), ("A→B", "right")):
        table.add_column(name, justify=justify)
    lists = (result.top_a, result.top_b, result.rose, result.fell)
    for k in range(max(map(len, lists))):
        cells = []
        for which, rows in zip(("a", "b", None, None), lists):
            if k >= len(rows):
                cells += ["", ""]
                continue
            row = rows[k]
            cells += [key_label(row["token"]), f"{row[which]:.3f}" if which else f"{row['a']:.2f}→{row['b']:.2f}"]
        table.add_row(*cells)
    return table


def head_maps(result) -> list:
    from attn_cli.views.heatmap import Heatmap

    l, h = result.head
    a, b = result.maps
    labels = [f"{p}:{key_label(t)}" for p, t in enumerate(result.labels[0])]
    cols = [key_label(t) for t in result.labels[0]]
    return [Text(f"head {l}.{h} in A", style="bold"), Heatmap(a, labels, cols, legend=False),
            Text(f"head {l}.{h} in B", style="bold"), Heatmap(b, labels, cols, legend=False),
            Text(f"head {l}.{h}: B − A, in hundredths of a weight (rows and columns: A's {result.aligned}s)", style="bold"),
            Heatmap(100 * (b - a), labels, cols, kind="scores", legend=False)]


def continuation_lines(result) -> list:
    """The two greedy continuations side by side, from the token where they part (the shared start above them)."""
    from rich import box
    from rich.table import Table

    c = result.continuations
    a, b, part = c["a"], c["b"], c["part"]
    n = max(len(a["ids"]), len(b["ids"]))
    if part is None:
        return [Unwidowed(Text(f"greedy, {n} tokens: the same continuation in both runs", style="bold")),
                Unwidowed(Text("A, B " + repr("".join(a["texts"])), style="cyan"))]
    same = "".join(a["texts"][:part])
    where = f"the same {part} token{'s' * (part != 1)}, {same!r}, then they part" if part else "they part at the first token"
    head = Text(f"greedy, {n} tokens: {where}", style="bold")
    table = Table(box=box.MINIMAL, expand=True, show_edge=False, padding=(0, 1))
    table.add_column("A" + (" …" if part else ""), ratio=1, style="cyan")
    table.add_column("B" + (" …" if part else ""), ratio=1, style="magenta")
    table.add_row(*(repr("".join(side["texts"][part:]))[1:-1] for side in (a, b)))
    return [Unwidowed(head), table]
