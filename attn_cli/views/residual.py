"""The residual stream of a checkpoint: the mean update of each layer, and the --focus token's path through the layers."""

from rich import box
from rich.table import Table

from attn_cli.views.base import FitTable, Footnote, OneLine, key_label, quoted

def layer_table(result: "InspectResult") -> Table:
    table = FitTable(box=box.SIMPLE, title="the residual stream, layer by layer (mean over tokens)", title_justify="left")
    for name in ("layer", "‖x‖", "‖Δ attention‖", "‖Δ MLP‖", "cos(x, previous x)"):
        table.add_column(name, justify="right")
    table.add_row("E", f"{result.norms[0].mean():.2f}", "", "", "")
    for l in range(len(result.attn_norms)):
        table.add_row(str(l), f"{result.norms[l + 1].mean():.2f}", f"{result.attn_norms[l].mean():.2f}",
                      f"{result.mlp_norms[l].mean():.2f}", f"{result.layer_cosines[l].mean():.3f}")
    return table


def residual_table(result: "InspectResult") -> Table:
    i = result.focus_piece
    table = FitTable(box=box.SIMPLE, title=f"how {quoted(result.tokens[result.focus])} (piece #{i}) moves through the layers: E′ = E + ΔE, layer by layer",
                  title_justify="left")
    neighbors = any(row.nearest for row in result.residual)
    for name in ("layer", "‖x‖", "‖Δ attention‖", "‖Δ MLP‖", "cos prev", "cos E") + (("nearest",) if neighbors else ()):
        table.add_column(name, justify="left" if name.startswith("nearest") else "right")
    for row in result.residual:
        opt = lambda x, f: "" if x is None else format(x, f)  # noqa: E731
        cells = ["E" if row.layer == 0 else str(row.layer - 1), f"{row.norm:.2f}", opt(row.attn_update, ".2f"),
                 opt(row.mlp_update, ".2f"), opt(row.cosine_previous, ".3f"), f"{row.cosine_input:.3f}"]
        table.add_row(*cells, *([OneLine([key_label(t) for t in row.nearest])] if neighbors else []))  # one line a layer
    return table


NEIGHBORS_NOTE = ("odd tokens in the middle layers (bytes, markup, other scripts) are expected there: those layers' streams "
                  "are no longer in the input embeddings' basis, nor yet in the output's, and are compared with the input "
                  "embeddings all the same")


def layers(result: "InspectResult", options) -> list:
    from rich.rule import Rule

    return [Rule(style="dim"), layer_table(result), *([Footnote(result.caption)] if result.caption else [])]


def path(result: "InspectResult", options) -> list:
    table = residual_table(result)
    if not any(row.nearest for row in result.residual):
        return [table]
    return [table, Footnote("nearest by cosine to the input embeddings of the whole vocabulary"), Footnote(NEIGHBORS_NOTE)]
