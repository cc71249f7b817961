"""The view of `attn tokens`: each piece with its id, the special ones marked, as llama.cpp's tokenize tool lists them."""

from rich import box
from rich.text import Text

from attn_cli.views.base import FitTable, Footnote, key_label


def tokens_view(result) -> list:
    m = result.model
    heading = Text(f"{m['name']} · {m['type']} · {len(result.pieces)} tokens" + (" (the chat template's rendering)" if result.chat else ""), style="bold")
    table = FitTable(box=box.SIMPLE)
    for name, justify in (("#", "right"), ("id", "right"), ("piece", "left"), ("text", "left"), ("", "left")):
        table.add_column(name, justify=justify)
    for i, p in enumerate(result.pieces):
        mark = "special" if p.special else "no vector" if p.id is None else ""
        table.add_row(str(i), "" if p.id is None else str(p.id), repr(p.piece)[1:-1] if not p.piece.isprintable() else p.piece,
                      key_label(p.text), Text(mark, style="dim"), style="bold magenta" if p.special else None)
    note = Footnote("text: each piece as attn's other views show it: a word without its leading space, a piece without a letter "
                    "or digit in quotes (“␣” a space)")
    return [heading, table, note]
