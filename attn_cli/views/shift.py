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


UPDATE_DOMINATES = 1.0  # a mean ‖ΔE‖ / ‖E‖ from this on: E′ is more what the heads wrote than the word itself, and the view says so


def dominance_note(result: results.InspectResult) -> Text | None:
    """When the update outweighs E, say so plainly: E′ then shows what the heads wrote (often the same keys for every
    word), not what each word became. None when ΔE is smaller than E on average."""
    import numpy as np

    norms = result.input_norms
    ratios = np.divide(result.delta_norms, norms, out=np.zeros_like(norms), where=norms > 0)  # [n]
    if len(ratios) == 0 or float(ratios.mean()) < UPDATE_DOMINATES:
        return None
    top = int(np.argmax(ratios))
    note = (f"ΔE outweighs E here: ‖ΔE‖ is {ratios.mean():.1f}× ‖E‖ on average (up to {ratios[top]:.1f}×, {result.tokens[top]}), "
            "so E′ is mostly what the heads wrote into the word.")
    if result.near_output is not None:
        counts: dict[str, int] = {}
        for keys in result.near_output:
            for key in dict.fromkeys(keys):
                counts[key] = counts.get(key, 0) + 1
        shared = [k for k, c in sorted(counts.items(), key=lambda kv: -kv[1]) if c >= max(3, len(result.tokens) / 2)][:2]
        if shared:
            shown = ", ".join(f"{key_label(k)} for {counts[k]}" for k in shared)
            note += (f" The same keys are nearest to E′ of many tokens ({shown} of {len(result.tokens)}): that is the sentence's "
                     f"content written into every word, not each word turned into {key_label(shared[0])}.")
    low = int(np.argmin(result.cosines))
    note += f" cos(E, E′) says how much of each word is left (least: {result.tokens[low]}, {result.cosines[low]:.3f})."
    return Text(note, style="yellow")


NEIGHBORS_HINT = "--neighbors 3 adds the keys nearest E and E′; --per-head, each head's own shift"


def shift(result: "results.InspectResult", options) -> list:
    from rich.rule import Rule

    from attn_cli.views.captions import PARTS_CAPTION

    note = dominance_note(result)
    shown = bool(options.neighbors) and result.near_input is not None
    hint = [Text(NEIGHBORS_HINT, style="dim")] if options.neighbors is None else []
    return [Rule(style="dim"), shift_table(result, shown), *([note] if note is not None else []), Text(PARTS_CAPTION, style="dim"), *hint]
