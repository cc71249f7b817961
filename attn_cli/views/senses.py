"""The sense meter: each measured token's cosine with each sense, before and after the heads."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli import results
from attn_cli.views.base import Bar, FitTable, SignedBar

SENSE_BAR_SCALE = 0.1  # a change of this size fills the sense meter's bar, unless a larger one is shown


def sense_meter(result: results.InspectResult):
    """Mean cosine of each measured token with each sense's probe words, before and after the heads."""
    from rich.console import Group

    title = Text("sense meter", style="bold")
    title.append(": mean cosine with each sense's probe words, of E (before the heads) and E′ (after)", style="dim")
    table = FitTable(box=box.SIMPLE)
    for name in ("token", "sense", "before", "after", "change", ""):
        table.add_column(name, justify="right" if name in ("before", "after", "change") else "left")
    scale = max([abs(c) for row in result.senses for c in row.change] + [SENSE_BAR_SCALE])  # tiny changes keep tiny bars
    lines = []
    for row in result.senses:
        for k, (name, before, after, change) in enumerate(zip(row.names, row.before, row.after, row.change)):
            label = f"{row.index}:{row.token}" if k == 0 else ""
            shown = f"{change:+.3f}" if round(change, 3) != 0 else "0.000"
            table.add_row(label, name, f"{before:.3f}", f"{after:.3f}", shown, SignedBar(change, scale, 8))
        table.add_section()
        line = Text(f"  {row.index}:{row.token}", style="bold")
        line.append(f"  nearer to {row.nearest_before} before / {row.nearest_after} after")
        if row.nearest_before != row.nearest_after:
            if row.change[row.names.index(row.nearest_after)] > 0:
                line.append("  (changed)", style="bold green")
            else:  # nearest only because the old sense fell further: context did not bring it
                line.append(f"  (changed, but {row.nearest_after} did not gain: {row.nearest_before} fell more)", style="yellow")
        lines.append(line)
    return Group(title, table, *lines)


def meter(result: "results.InspectResult", options) -> list:
    from rich.rule import Rule

    return [Rule(style="dim"), sense_meter(result)] if result.senses else []
