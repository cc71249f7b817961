"""The view of `attn explain`: every head's and MLP's share of a logit as a layer × head map, the largest parts, the sum check."""

import numpy as np
from rich import box
from rich.text import Text

from attn_cli.views.base import FitTable, Unwidowed, key_label
from attn_cli.views.heatmap import Heatmap


def explain_view(result) -> list:
    m = result.model
    heading = Text(f"{m['name']} · {m['type']} · {m['layers']} layers × {m['heads']} heads", style="bold")
    tokens = Text("tokens ", style="bold")
    for i, token in enumerate(result.tokens):
        tokens.append(f"{i}:", style="dim")
        tokens.append(key_label(token) + " ", style="bold cyan" if i == result.position else "")
    what = what_is_split(result)
    at = f"at {key_label(result.tokens[result.position])!r} (#{result.position})"
    grid = np.concatenate([result.heads(), result.mlps()[:, None]], axis=1)  # [L, H + 1]
    columns = [str(h) for h in range(result.n_heads)] + ["MLP"]
    heatmap = Heatmap(grid, [str(l) for l in range(result.n_layers)], columns, kind="scores", corner="layer↓ head→")
    title = Text(f"what each head and MLP adds to {what} {at}", style="bold")
    embed = next(p.logit for p in result.components if p.kind == "embed")
    table = FitTable(box=box.SIMPLE, title=f"the {min(len(result.components), 12)} largest parts", title_justify="left")
    for name, justify in (("part", "left"), ("share", "right")):
        table.add_column(name, justify=justify)
    for p in result.largest(12):
        table.add_row(p.name, f"{p.logit:+.3f}")
    gap = result.total - result.logit
    own = f"the model's own {'logit' if result.versus is None else 'difference'}{' before its soft-cap' if result.cap else ''}"
    check = Text(f"the parts sum to {result.total:.4f}, {own} is {result.logit:.4f} (they differ by {abs(gap):.1e}); "
                 f"the embeddings add {embed:+.3f}", style="dim")
    if result.cap:
        check.append(f"; after the soft-cap {result.cap:g}·tanh(logit/{result.cap:g}), which no sum of parts can split, "
                     f"it is {result.capped:.4f}")
    note = Text("each part's share goes through the final norm with its scale frozen at this position"
                f"{' (and through its block’s second norm, frozen likewise)' if result.sandwich else ''}, "
                "as TransformerLens's logit attribution does", style="dim")
    parts = [heading, tokens]
    if result.ablation:
        parts.append(Text(f"{result.ablation.mode}-ablated: head{'s' if len(result.ablation.heads) > 1 else ''} "
                          f"{', '.join(result.ablation.names)} ({'zeros' if result.ablation.mode == 'zero' else 'its mean over the positions'} "
                          "in place of its output); the split below is of the run that follows", style="bold magenta"))
    return [Unwidowed(p) if isinstance(p, Text) else p for p in parts + [title, heatmap, table, check, note]]  # no word alone on a line


def what_is_split(result) -> str:
    target = f"{key_label(result.target['token'])!r}"
    if result.versus is None:
        return f"the logit of {target}"
    return f"the logit difference {target} − {key_label(result.versus['token'])!r}"
