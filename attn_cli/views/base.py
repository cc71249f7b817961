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
    """A token (or a key) as every view shows it, from its label (models/pieces.py: a word without its leading space,
    "␣" for a space): a token without a letter or digit in quotes, so that "," reads as a token, not a separator; an
    invisible character (a no-break space) as its escape, written before a table is laid out so that its columns line
    up. The one rule of predict's, explain's, patch's, inspect's and tokens' token lists."""
    from attn_cli.io.files import printable

    shown = printable(key)
    word = key
    for name in WHITESPACE_NAMES:  # "\\n" (a newline's label) is no word
        word = word.replace(name, "")
    return shown if any(c.isalnum() for c in word) else f"“{shown}”"


WHITESPACE_NAMES = ("\\n", "\\t", "\\r")  # how models/pieces.py names a newline, a tab and a carriage return


class Footnote:
    """A note under a table, left-aligned and wrapped at the console's width, never leaving a formula's last
    word alone: a word of one character or without a letter ("Δ", "+", "=") stays with the word after it."""

    def __init__(self, text: str, style: str = "dim"):
        self.text, self.style = text, style

    def units(self) -> list[str]:
        units, held = [], ""
        for word in self.text.split():
            if len(word) == 1 or not any(c.isalnum() for c in word):
                held += word + " "
            else:
                units.append(held + word)
                held = ""
        return units + ([held.rstrip()] if held else [])

    def __rich_measure__(self, console, options):
        from rich.cells import cell_len
        from rich.measure import Measurement

        return Measurement(max(map(cell_len, self.units()), default=0), cell_len(" ".join(self.units())))

    def __rich_console__(self, console, options):
        from rich.cells import cell_len

        lines, line = [], []
        for unit in self.units():
            if line and cell_len(" ".join(line)) + 1 + cell_len(unit) > options.max_width:
                lines.append(line)
                line = [unit]
            else:
                line.append(unit)
        if line:
            lines.append(line)
        if len(lines) > 1 and len(lines[-1]) == 1 and len(lines[-2]) > 2:  # the last word not alone: the one before it comes down
            lines[-1].insert(0, lines[-2].pop())
        for line in lines:
            yield Text(" ".join(line), style=self.style)


class Unwidowed:
    """A Text wrapped at the console's width, its last word never alone on a line: the lines made a little narrower
    instead, where that needs no more of them."""

    def __init__(self, text: Text):
        self.text = text

    def __rich_measure__(self, console, options):
        from rich.measure import Measurement

        return Measurement.get(console, options, self.text)

    def __rich_console__(self, console, options):
        width = options.max_width
        lines = self.text.wrap(console, width)
        if len(lines) > 1 and len(lines[-1].plain.split()) == 1:
            for narrower in range(width - 1, width // 2, -1):
                tried = self.text.wrap(console, narrower)
                if len(tried) > len(lines):
                    break
                if len(tried[-1].plain.split()) > 1:
                    lines = tried
                    break
        yield lines


class OneLine:
    """A list as a table cell, its items ("Rome 0.77", "Florence 0.07") joined by ", " on one line: in a cell too
    narrow for all of them, those that fit and "…" (--json has every one). An item is never cut from its number, nor
    wrapped onto a second line."""

    def __init__(self, items: list[str], style: str = ""):
        self.items, self.style = list(items), style
        self.plain = ", ".join(self.items)  # what a table listed row by row (views/fit.py) shows

    def shown(self, width: int) -> str:
        from rich.cells import cell_len

        for k in range(len(self.items), 0, -1):
            text = ", ".join(self.items[:k]) + (", …" if k < len(self.items) else "")
            if cell_len(text) <= width:
                return text
        return self.items[0] if self.items else ""

    def __rich_measure__(self, console, options):
        from rich.cells import cell_len
        from rich.measure import Measurement

        full = cell_len(self.plain)
        least = cell_len(self.items[0] + (", …" if len(self.items) > 1 else "")) if self.items else 0
        return Measurement(min(least, full), full)

    def __rich_console__(self, console, options):
        yield Text(self.shown(options.max_width), style=self.style, no_wrap=True, overflow="ellipsis")


def quoted(token: str) -> str:
    """A token in a sentence, as a reader sees it: in quotes, its escapes ("\\n" for a newline) as they are, not doubled."""
    return f"'{token}'"


TOKENS_AT_EACH_END = 16  # a long text's token list shows this many at its start and at its end, and counts the rest


def token_line(tokens: list[str], mark: int | None = None, special: list[bool] | None = None) -> Text:
    """"tokens 0:The 1:cat ...": every token of a short text; of a long one its start, its end, the one marked, and how
    many are left out between them (--json lists every one)."""
    n, keep = len(tokens), TOKENS_AT_EACH_END
    shown = list(range(n)) if n <= 3 * keep else sorted({*range(keep), *range(n - keep, n), *([mark] if mark is not None else [])})
    text = Text("tokens ", style="bold")
    for k, i in enumerate(shown):
        if k and i > shown[k - 1] + 1:
            text.append(f"… {i - shown[k - 1] - 1:,} more … ", style="yellow")
        text.append(f"{i}:", style="dim")
        text.append(key_label(tokens[i]) + " ", style="bold cyan" if i == mark else "magenta" if special and special[i] else "")
    if len(shown) < n:
        text.append(f"({n:,} tokens)", style="dim")
    return text


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

    BAR_FLOOR, LABEL_FLOOR = BAR_FLOOR, LABEL_FLOOR

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
        if self.__rich_measure__(console, options).maximum <= options.max_width:  # it fits: drawn as Rich draws it
            yield from Table.__rich_console__(self, console, options)
            return
        from attn_cli.views.fit import fitted  # read only for a console too narrow

        yield from fitted(self, console, options)


def steered_line(steered: list) -> Text | None:
    """What --steer added, in one line (None: nothing): each control vector's file and scale, and the layers it reached."""
    if not steered:
        return None
    parts = [f"{steer_name(s)} × {s['scale']:g}" + (f" (resid_post {s['layers'][0]}..{s['layers'][-1]})" if s["layers"] else " (no layer)")
             for s in steered]
    return Text("steered: " + "; ".join(parts), style="bold magenta")


def steer_name(steer: dict) -> str:
    """What one steer came from: its file, or its inline pair as 'POS' − 'NEG'."""
    return steer["file"] if "file" in steer else f"{steer['pair'][0]!r} − {steer['pair'][1]!r}"
