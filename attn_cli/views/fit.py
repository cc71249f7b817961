"""A FitTable (views/base.py) in a console too narrow for it: bars give up room first, then labels, then the
headers of numbers; never a number. Read only when a table does not fit."""

from rich.table import Table
from rich.text import Text


def fitted(table, console, options):
    """(See FitTable.) The widths Rich would give, bars shrunk first; a copy of the table is drawn, never the table itself."""
    import copy

    def widths(t):  # -> each column's natural width and the least it may take, padding included
        wide = options.update_width(max(options.max_width, 4096))
        out = []
        for column, kind in zip(t.columns, kinds):
            m = t._measure_column(console, wide, column)
            pad = t._get_padding_width(column._index)
            fixed = kind == "number" or (kind == "label" and column.no_wrap)  # Rich shrinks neither
            out.append((m.maximum, m.maximum if fixed else min(m.maximum, pad + (table.BAR_FLOOR if kind == "bar" else table.LABEL_FLOOR))))
        return out

    kinds = table.kinds()
    shown = copy.copy(table)
    shown.columns = [copy.copy(c) for c in table.columns]
    for column, kind in zip(shown.columns, kinds):
        if kind == "label":
            column.overflow = "ellipsis" if column.overflow == "fold" else column.overflow
        else:
            column.no_wrap, column.overflow = True, "crop" if kind == "bar" else column.overflow
    room = options.max_width - shown._extra_width
    sizes = widths(shown)
    if sum(natural for natural, _ in sizes) > room and sum(least for _, least in sizes) > room:  # wrap the numbers' headers at spaces
        for column, kind in zip(shown.columns, kinds):
            if kind == "number" and isinstance(column.header, str) and " " in column.header:
                column.header = wrapped_header(column, console, options)
        sizes = widths(shown)
    excess = sum(natural for natural, _ in sizes) - room
    for column, kind, (natural, least) in zip(shown.columns, kinds, sizes):  # bars give up their room first
        if kind == "bar" and excess > 0:
            cut = min(excess, natural - least)
            pad = shown._get_padding_width(column._index)
            factor = (natural - cut - pad) / max(natural - pad, 1)
            column._cells = [cell.scaled(factor) if hasattr(cell, "scaled") else cell for cell in column._cells]
            column.max_width = natural - cut - pad
            excess -= cut
    need = sum(least for _, least in sizes) + shown._extra_width
    if need > options.max_width:
        yield Text(f"this table needs {need} columns and has {options.max_width}: each row as a list (wider terminal or --json)", style="yellow")
        yield from row_lists(shown, kinds)
        return
    yield from Table.__rich_console__(shown, console, options)


def row_lists(table, kinds: list[str]):
    """A table too wide for the console, a row at a time: its labels on a line, then each number under its
    header, one a line (bars left out: the numbers say it all)."""
    def plain(cell) -> str:
        return cell if isinstance(cell, str) else getattr(cell, "plain", "")  # a Text, a OneLine (views/base.py); a bar none

    if table.title:
        yield Text(plain(table.title), style="bold")
    for r in range(table.row_count):
        cells = [(c, kind, plain(c._cells[r])) for c, kind in zip(table.columns, kinds)]
        yield Text("  ".join(text for c, kind, text in cells if kind == "label" and text.strip()) or f"row {r + 1}", style="bold")
        for column, kind, text in cells:
            if kind == "number" and text.strip():
                header = " ".join(plain(column.header).split())
                yield Text(f"  {header}: {text}" if header else f"  {text}")


def wrapped_header(column, console, options) -> str:
    """A number column's header in lines no wider than its widest number (or its header's longest word)."""
    import textwrap

    from rich.measure import Measurement

    numbers = max((Measurement.get(console, options, cell).maximum for cell in column._cells), default=1)
    halves = (len(column.header) + 1) // 2 + 1  # two lines rather than three
    return "\n".join(textwrap.wrap(column.header, width=max(numbers, halves, *map(len, column.header.split()))))
