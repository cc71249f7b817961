"""How far each token's embedding moved, E -> E' = E + Delta E, and how much of that the context wrote."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli import results
from attn_cli.views.base import FitTable, key_label

def shift_table(result: results.InspectResult, neighbors: bool = True) -> Table:
    """How far each token's embedding moved: E -> E' = E + Delta E, and how much of that the context wrote;
    with `neighbors` (and the result holding them), the keys nearest E and E'."""
    table = FitTable(box=box.SIMPLE, title="embedding shift E → E′ = E + ΔE (all heads)", title_justify="left", collapse_padding=True)
    table.add_column("token")
    table.add_column("‖E‖", justify="right")
    table.add_column("‖ΔE‖", justify="right")
    table.add_column("‖ΔE_ctx‖", justify="right")
    table.add_column("cos(E, E′)", justify="right")
    table.add_column("cos ctx", justify="right")
    neighbors = neighbors and result.near_input is not None
    if neighbors:
        table.add_column("nearest to E")
        table.add_column("nearest to E′")
        table.caption = "nearest keys by cosine over the vocabulary, the token itself left out"
    numbers = zip(result.input_norms, result.delta_norms, result.delta_context_norms, result.cosines, result.context_cosines)
    for i, (token, (norm, delta, context, cos, context_cos)) in enumerate(zip(result.tokens, numbers)):
        row = [token, f"{norm:.2f}", f"{delta:.2f}", f"{context:.2f}", f"{cos:.3f}", f"{context_cos:.3f}"]
        if neighbors:
            before, after = result.near_input[i], result.near_output[i]
            row.append(", ".join(map(key_label, before)))
            moved = Text()
            for k, key in enumerate(after):
                moved.append(key_label(key), style="" if key in before else "bold green")
                moved.append(", " if k < len(after) - 1 else "")
            row.append(moved)
        table.add_row(*row)
    return table


def head_shift_table(result: results.InspectResult, h: int) -> Table:
    """One head's update alone (--per-head): its size, its context and self parts, and the cosine shifts they cause."""
    head = result.heads[h]
    table = FitTable(box=box.SIMPLE, title=f"shift from head {head.name} alone", title_justify="left")
    for name in ("token", "‖ΔE‖", "‖ΔE_ctx‖", "‖ΔE_self‖", "cos(E, E+ΔE)", "cos ctx"):
        table.add_column(name, justify="left" if name == "token" else "right")
    cos, context_cos = result.head_cosines(h)
    norms = zip(*head.norm_rows(), cos, context_cos)
    for token, (delta, context, own, c, cc) in zip(result.tokens, norms):
        table.add_row(token, f"{delta:.2f}", f"{context:.2f}", f"{own:.2f}", f"{c:.3f}", f"{cc:.3f}")
    return table


NEIGHBORS_HINT = "--neighbors 3 adds the keys nearest E and E′; --per-head, each head's own shift"


def shift(result: "results.InspectResult", options) -> list:
    from rich.rule import Rule
    from rich.text import Text

    from attn_cli.views.captions import PARTS_CAPTION

    shown = bool(options.neighbors) and result.near_input is not None
    hint = [Text(NEIGHBORS_HINT, style="dim")] if options.neighbors is None else []
    return [Rule(style="dim"), shift_table(result, shown), Text(PARTS_CAPTION, style="dim"), *hint]
