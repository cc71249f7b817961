"""What every view draws with: bars, tables that fit, key labels and the colour of a weight."""

from rich.table import Table
from rich.text import Text


def bar(fraction: float, width: int = 24, style: str = "cyan") -> Text:
    """A horizontal bar for a value in [0, 1], with eighth-block resolution."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    return Text("█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part else ""), style=style)


def signed_bar(value: float, scale: float, width: int = 12) -> Text:
    """A bar that grows left (red) for negative values and right (green) for positive ones."""
    fraction = 0.0 if scale <= 0 else min(abs(value) / scale, 1.0)
    cells = round(fraction * width)
    left = " " * (width - cells) + ("█" if value < 0 else " ") * cells
    right = "█" * cells if value > 0 else ""
    text = Text(left, style="red")
    text.append("│", style="dim")
    text.append(right.ljust(width), style="green")
    return text


class Bar:
    """bar() as a table cell: a FitTable short of room scales every bar of the column alike (scaled())."""

    def __init__(self, fraction: float, width: int = 24, style: str = "cyan"):
        self.fraction, self.width, self.style = fraction, width, style

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        drawn = bar(self.fraction, self.width).cell_len
        return Measurement(min(BAR_FLOOR, drawn), drawn)

    def __rich_console__(self, console, options):
        yield bar(self.fraction, self.width, self.style)

    def scaled(self, factor: float) -> "Bar":
        return Bar(self.fraction, max(1, int(self.width * factor)), self.style)


class SignedBar:
    """signed_bar() as a table cell, scaled as Bar is: `width` cells each side of the axis."""

    def __init__(self, value: float, scale: float, width: int = 12):
        self.value, self.scale, self.width = value, scale, width

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        return Measurement(min(BAR_FLOOR, 2 * self.width + 1), 2 * self.width + 1)

    def __rich_console__(self, console, options):
        yield signed_bar(self.value, self.scale, self.width)

    def scaled(self, factor: float) -> "SignedBar":
        return SignedBar(self.value, self.scale, max(1, int(self.width * factor)))


MAX_ROWS = 200  # a table in the terminal shows at most this many rows; --json has them all


def more_rows(shown: int, total: int, what: str) -> Text:
    """The note under a table cut at MAX_ROWS."""
    return Text(f"... {total - shown:,} more {what} not shown ({total:,} in all); --json prints every one", style="yellow")


def human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def key_label(key: str) -> str:
    """A key as listed among others: punctuation quoted, so that "," reads as a key, not a separator."""
    return key if any(c.isalnum() for c in key) else f"“{key}”"


SHADES = " ░▒▓█"  # weight 0 .. 1 where there is no colour


BAR_FLOOR = 3  # a bar cut to fewer cells than this says nothing
LABEL_FLOOR = 5  # nor does a label cut to fewer than this ("crea…")


class FitTable(Table):
    """A Rich table that, in a console too narrow for it, gives up room in this order: bars (scaled
    alike), then labels (cut with "…", or wrapped at spaces), then the headers of numbers (wrapped at
    spaces); never a number. A table that still does not fit says so and lists its rows instead.

    A column holds bars when its cells are Bar or SignedBar, numbers when it is right-justified,
    labels otherwise; `add_column(..., kind="number" | "label" | "bar")` says so where that guess is wrong.
    """

    def add_column(self, header="", *, kind: str | None = None, **column):
        super().add_column(header, **column)
        self.hints = [*getattr(self, "hints", []), kind]

    def kinds(self) -> list[str]:
        def kind(column, hint) -> str:
            if hint is not None:
                return hint
            if any(isinstance(c, (Bar, SignedBar)) for c in column._cells) and all(isinstance(c, (Bar, SignedBar)) or c == "" for c in column._cells):
                return "bar"
            return "number" if column.justify == "right" else "label"

        return [kind(column, hint) for column, hint in zip(self.columns, getattr(self, "hints", [None] * len(self.columns)))]

    def __rich_console__(self, console, options):
        yield from fitted(self, console, options)


def fitted(table: FitTable, console, options):
    """(See FitTable.) The widths Rich would give, bars shrunk first; a copy of the table is drawn, never the table itself."""
    import copy

    def widths(t):  # -> each column's natural width and the least it may take, padding included
        wide = options.update_width(max(options.max_width, 4096))
        out = []
        for column, kind in zip(t.columns, kinds):
            m = t._measure_column(console, wide, column)
            pad = t._get_padding_width(column._index)
            fixed = kind == "number" or (kind == "label" and column.no_wrap)  # Rich shrinks neither
            out.append((m.maximum, m.maximum if fixed else min(m.maximum, pad + (BAR_FLOOR if kind == "bar" else LABEL_FLOOR))))
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
        return cell.plain if isinstance(cell, Text) else str(cell) if isinstance(cell, str) else ""

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
