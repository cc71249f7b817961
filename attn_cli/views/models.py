"""`attn model info` and `attn heads find`: a checkpoint's arithmetic, and its heads ranked on labelled links."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli.views.base import Bar, FitTable

def share_text(share: float) -> str:
    """A share of the parameters, to a digit that is not 0 (0.04%, not 0.0%)."""
    return f"{share:.1%}" if share >= 0.001 or share == 0 else f"{share:.2%}" if share >= 0.0001 else f"{share:.1e}"


def layer_groups(layers: list) -> list[tuple[str, list]]:
    """Layers that attend alike ("local" with a window, "global" without), with their RoPE base; nothing to show when all alike."""
    kinds = {}
    for row in layers:
        kinds.setdefault((row["window"], row["rope_base"]), []).append(row)
    if len(kinds) <= 1 and all(row["window"] is None for row in layers):
        return []
    return [("local layers" if rows[0]["window"] is not None else "global layers", rows) for rows in kinds.values()]


def spans(rows: list) -> str:
    """Layer numbers as runs: "0–4, 6–10, 12"."""
    numbers, runs = [row["layer"] for row in rows], []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in runs)


def about_layers(row: dict) -> str:
    window = f"a query sees its last {row['window']:,} keys (sliding window)" if row["window"] is not None else "a query sees every earlier key"
    return window + ("" if row["rope_base"] is None else f", RoPE base {row['rope_base']:,.0f}")


def model_info(info: "ModelInfo") -> Table:
    table = FitTable(box=box.SIMPLE, show_header=False, title=f"{info.name} ({info.path})", title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_column(style="dim")
    table.add_row("architecture", info.type, info.description)
    table.add_row("layers × heads", f"{info.layers} × {info.heads}", f"{info.layers * info.heads} heads")
    if info.kv_heads != info.heads:
        table.add_row("key/value heads", f"{info.kv_heads} a layer", f"grouped-query attention: each K/V head serves {info.heads // info.kv_heads} query heads")
    table.add_row("d_model", str(info.d_model), "the size of every token's vector E")
    table.add_row("d_k", str(info.d_k), "the query/key/value size of one head" + (" (d_model / heads)" if info.d_k * info.heads == info.d_model else ""))
    table.add_row("MLP width", str(info.d_ff), f"{info.activation}, {'gated: (act(x W_gate) * x W_up) W_down' if info.mlp == 'gated' else 'act(x W_in) W_out'}")
    table.add_row("norm · positions", f"{info.norm} · {info.position}", "RMSNorm" if info.norm == "rms" else "LayerNorm")
    table.add_row("vocabulary", f"{info.vocabulary:,}", f"up to {info.max_positions:,} positions")
    for label, rows in layer_groups(info.attention_layers):
        table.add_row(label, spans(rows), about_layers(rows[0]))
    if info.features:
        table.add_row("also", "", " · ".join(info.features))
    p = info.per_head
    table.add_section()
    d, k = p["w_q"]
    if info.kv_heads == info.heads:
        about = f"W_Q, W_K, W_V {d}×{k} each and W_O's share {k}×{d}: 4 × {d} × {k}; + {p['biases']} biases"
    else:
        g = info.heads // info.kv_heads
        about = f"W_Q {d}×{k}, W_O's share {k}×{d}, and 1/{g} of a shared W_K, W_V {d}×{k}: (2 + 2/{g}) × {d} × {k}; + {p['biases']} biases"
    table.add_row("one head", f"{p['weights']:,}", about)
    counts = info.parameters
    for name in [n for n in ("embeddings", "attention", "mlp", "layer_norms", "output") if n in counts]:
        share = counts[name] / counts["total"] if counts["total"] else 0.0
        table.add_row(name.replace("_", " "), f"{counts[name]:,}", share_text(share))
    table.add_row("total", f"{counts['total']:,}", "counted from the tensors in the file (a pooler, or an output head the view does not use, left out)")
    return table


def heads_found(found: "HeadsFound", top: int):
    from rich.console import Group

    title = Text(f"{found.model} on {found.file}: {found.queries} linked queries in {found.sentences} sentences", style="bold")
    if found.dropped:
        title.append(f" ({found.dropped} links dropped: a key after its query under the causal mask, or a word linked to itself)", style="dim")
    table = FitTable(box=box.SIMPLE)
    table.add_column("head", no_wrap=True)
    for key in FOUND_MEASURES:
        table.add_column(FOUND_LABELS[key], justify="right")
    table.add_column(FOUND_LABELS[found.sort], kind="bar")  # the measure the heads are sorted by, as a bar
    fmt = lambda x: "–" if x != x else f"{x:.3f}"  # noqa: E731
    shown = lambda x: 0.0 if x != x else x  # noqa: E731
    for row in found.heads[:top]:
        table.add_row(row["name"], *(fmt(row[k]) for k in FOUND_MEASURES), Bar(shown(row[found.sort]), 12))
    table.add_section()
    for row in found.baselines:
        table.add_row(Text(f"{row['name']} (baseline)", style="dim"), *(fmt(row[k]) for k in FOUND_MEASURES), Bar(shown(row[found.sort]), 12, "dim"))
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
FOUND_LABELS = {"top_on_key": "top on key", "exact_top": "exact top", "key_weight": "key weight", "top_beyond_previous": "beyond previous"}
