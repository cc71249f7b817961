"""`attn heads stats`: every head's figures over a corpus beside even attention's, as two tables or one figure as a grid."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli.views.base import MAX_ROWS, more_rows

SHARES = ("entropy", "distance", "first", "special", "self", "previous")
DETECTED = ("previous", "duplicate", "induction", "first", "special", "self")
ABOUT = {
    "entropy": "mean entropy of a query's weights (nats)", "distance": "mean Σ_j α_ij |i - j|, in tokens",
    "first": "mean weight on the first token (queries after it)", "special": "mean weight on special tokens",
    "self": "mean weight on itself", "previous": "mean weight on the token before (queries after the first)",
}


def fmt(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def figures_table(result, names: tuple, key: str, title: str, top: int | None = None) -> list:
    """One table of `names` per head (the first `top` of them, in the result's order), even attention's row below."""
    table = Table(box=box.SIMPLE, title=title, title_justify="left")
    table.add_column("head")
    for name in names:
        column = key.format(name)
        table.add_column(name + (" ↓" if column == result.sorted_by else ""), justify="right")
    shown = min(MAX_ROWS, len(result.per_head) if top is None else top)
    for row in result.per_head[:shown]:
        table.add_row(f"{row['layer']}.{row['head']}", *(fmt(row[key.format(name)]) for name in names))
    table.add_section()
    table.add_row(Text("even (baseline)", style="dim"), *(fmt(result.even[key.format(name)]) for name in names))
    parts = [table]
    if len(result.per_head) > shown:
        parts.append(more_rows(shown, len(result.per_head), "heads"))
    return parts


def heading(result) -> Text:
    text = Text(f"{result.model}: {result.layers} layers × {result.heads} heads over {result.sentences:,} sentences "
                f"({result.queries:,} tokens)", style="bold")
    if result.failed:
        text.append(f"; {result.failed:,} lines failed", style="yellow")
    return text


def head_stats(result, grid: str | None = None, top: int | None = None) -> list:
    parts: list = [heading(result)]
    if grid is not None:
        from attn_cli.views.heatmap import Heatmap

        name = grid.removeprefix("detect_")
        about = f"head detector score on {name} ({result.error})" if grid.startswith("detect_") else ABOUT[grid]
        kind = "norms" if grid in ("entropy", "distance") else "scores" if grid.startswith("detect_") and result.error == "abs" else "weights"
        parts += [Text(f"{grid}: {about}; even attention: {fmt(result.even[grid])}", style="dim"),
                  Heatmap(result.grid(grid), [f"L{l}" for l in range(result.layers)], [f"h{h}" for h in range(result.heads)], kind=kind,
                          corner="layer↓ head→")]
        return parts
    order = "" if result.sorted_by is None else f"; heads by {result.sorted_by}, largest first"
    parts += figures_table(result, SHARES, "{}", f"where each head's weight goes (means over every query){order}", top)
    counts = ", ".join(f"{name} {result.detect_sentences.get(name, 0):,}" for name in DETECTED)
    parts += figures_table(result, DETECTED, "detect_{}", f"head detector scores ({result.error}), mean over the sentences with the pattern{order}",
                           top)
    parts.append(Text(f"sentences with each pattern: {counts}. " + "; ".join(f"{k}: {v}" for k, v in ABOUT.items()), style="dim"))
    return parts
