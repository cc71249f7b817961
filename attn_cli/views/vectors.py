"""`attn vectors info` as a table."""

from rich import box
from rich.table import Table

from attn_cli import results
from attn_cli.views.base import FitTable, human_bytes


def cut_middle(text: str, width: int) -> str:
    """`text` in at most `width` cells, its middle given up for "…": a path keeps its start and its file name."""
    from rich.cells import cell_len

    if cell_len(text) <= width:
        return text
    if width < 3:
        return "…"[:width]
    head, tail = text[: (width - 1) // 2], text[len(text) - (width - 1 - (width - 1) // 2):]
    while cell_len(head) + 1 + cell_len(tail) > width:  # wide characters: give up one more from the longer side
        head, tail = (head[:-1], tail) if cell_len(head) > cell_len(tail) else (head, tail[1:])
    return head + "…" + tail


class MiddleCut:
    """A cell of text that, short of room, loses its middle rather than its end (a path's file name matters most)."""

    def __init__(self, text: str):
        self.text = text

    def __rich_console__(self, console, options):
        from rich.text import Text

        yield Text(cut_middle(self.text, options.max_width), no_wrap=True, overflow="ignore")

    def __rich_measure__(self, console, options):
        from rich.cells import cell_len
        from rich.measure import Measurement

        return Measurement(min(cell_len(self.text), 3), cell_len(self.text))


def vectors_info(info: results.VectorsInfo) -> Table:
    table = FitTable(box=box.SIMPLE, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("path", MiddleCut(info.path))
    table.add_row("format", info.format)
    table.add_row("keys", f"{info.keys:,}")
    table.add_row("dimension", str(info.dimension))
    table.add_row("dtype", info.dtype)
    table.add_row("file size", human_bytes(info.file_bytes))
    table.add_row("load time", f"{info.load_seconds * 1000:.1f} ms")
    return table
