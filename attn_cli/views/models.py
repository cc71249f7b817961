"""`attn model info` and `attn heads find`: a checkpoint's arithmetic, and its heads ranked on labelled links."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli.views.base import bar

def model_info(info: "ModelInfo") -> Table:
    table = Table(box=box.SIMPLE, show_header=False, title=f"{info.name} ({info.path})", title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(style="dim")
    table.add_row("architecture", info.type, info.description)
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
