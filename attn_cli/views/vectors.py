"""`attn vectors info` as a table."""

from rich import box
from rich.table import Table

from attn_cli import results
from attn_cli.views.base import FitTable, human_bytes


def vectors_info(info: results.VectorsInfo) -> Table:
    table = FitTable(box=box.SIMPLE, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("path", info.path)
    table.add_row("format", info.format)
    table.add_row("keys", f"{info.keys:,}")
    table.add_row("dimension", str(info.dimension))
    table.add_row("dtype", info.dtype)
    table.add_row("file size", human_bytes(info.file_bytes))
    table.add_row("load time", f"{info.load_seconds * 1000:.1f} ms")
    return table
