"""--focus on the lesson's heads: one query's row, its scores and the softmax distribution they become."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli import results
from attn_cli.views.base import Bar, FitTable, key_label, quoted

def focus_table(head: results.HeadView, tokens: list[str], i: int, scale: bool = True) -> Table:
    """Query i's row: the scaled scores and the softmax distribution they become."""
    table = FitTable(box=box.SIMPLE, title=f"what {quoted(tokens[i])} (#{i}) attends to, head {head.name}", title_justify="left")
    table.add_column("key")
    distance = " − distance" if head.distance is not None else ""
    table.add_column(("score/√d_k" if scale else "score (not /√d_k)") + distance, justify="right")
    table.add_column("weight", justify="right")
    table.add_column("softmax", kind="bar")
    for j, token in enumerate(tokens):
        if head.allowed is not None and not head.allowed[i, j]:
            table.add_row(Text(f"{j}:{key_label(token)}", style="dim"), Text("−∞ masked", style="dim"), Text("0", style="dim"), "")
            continue
        w = float(head.weights[i, j])
        table.add_row(f"{j}:{key_label(token)}", f"{head.masked[i, j]:.3f}", f"{w:.3f}", Bar(w))
    if head.sink is not None:
        w = float(head.sink_weights[i])
        table.add_row(f"{results.SINK_TOKEN} nothing", f"{head.sink:.3f}", f"{w:.3f}", Bar(w))
    return table
