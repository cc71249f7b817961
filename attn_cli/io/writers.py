"""One writer per output format. Every command hands its result object here:

- table: the result's Rich view (a function from attn_cli.views), for a person;
- json: `result.to_dict()` as one indented document; jsonl: as one line;
- csv, tsv: `result.rows()`, tidy rows (one per observation) under a header, written by the csv
  module, so they load straight into pandas, R, DuckDB or a spreadsheet. A line break or a tab in
  a cell (predict's decoded `text`: a newline) is written as it is, inside a quoted cell, CSV's own
  way to hold one, and read back as it was. Every other control character is written as an escape
  (`\\x1b`, `\\r`), always: in a terminal (`attn ... --csv | cat`) it would colour it, set its title
  or move the cursor. With `--spreadsheet`, a text cell that
  begins with =, +, -, @ or a tab is written after a ' (as spreadsheets' own "text" marker), so that
  opening the file does not run it as a formula; only when asked, since the same cell read by
  pandas or R would then hold the quote (a "-" token would read "'-").

A result without `rows()` has no CSV: asking for it is a usage error naming what it has.
Adding a format means a member of `Format` and a branch in `write` (and in `write_lines`, for
`-`); every command then takes it as `--format NAME` and `--NAME` (cli.app reads `Format`).
"""

import sys
from collections.abc import Callable, Iterable, Iterator
from enum import Enum

from attn_cli.errors import InputError


class Format(str, Enum):
    """What a command prints: its terminal view, or its result as data (each written below)."""

    table = "table"  # the Rich view, for a person
    json = "json"  # one document
    jsonl = "jsonl"  # one object a line (with -: one per input line, as each is done)
    csv = "csv"  # tidy rows with a header, for pandas, R, DuckDB or a spreadsheet
    tsv = "tsv"


DELIMITERS = {Format.csv: ",", Format.tsv: "\t"}
LAYOUT = ("\n", "\t")  # control characters a quoted cell holds as they are: they lay text out and act on no terminal
CONTROL_ESCAPES = {c: repr(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in LAYOUT}  # C0, DEL, C1 -> \r, \x1b, \x9b ...
FORMULA_START = ("=", "+", "-", "@", "\t")  # what makes a spreadsheet read a cell as a formula (a CR first is escaped anyway)
formulas_as_text = False  # --spreadsheet (set by cli.app.RowsCommand for the command it runs)


def check_format(fmt: Format, result_type: type) -> None:
    """A usage error (before any work, where the command calls it first) when its result has no rows for CSV/TSV."""
    if fmt in DELIMITERS and not hasattr(result_type, "rows"):
        raise InputError(f"--{fmt.value}: this command's output has no {fmt.value} form; use --format table, json or jsonl")


def write(result, fmt: Format, view: str | None = None, *view_args) -> None:
    """`result` on stdout in `fmt`. The table format prints `render.<view>(result, *view_args)`
    (named, so Rich is imported only for a person) on the view console."""
    check_format(fmt, type(result))
    if fmt is Format.table:
        from attn_cli import views as render
        from attn_cli.io.console import view_console

        out = view_console()
        parts = getattr(render, view)(result, *view_args)
        for part in parts if isinstance(parts, list) else [parts]:
            out.print(part)
    elif fmt is Format.json:
        write_json(document(result))
    elif fmt is Format.jsonl:
        from attn_cli.io.output import json_line

        sys.stdout.write(json_line(result.to_dict()) + "\n")
    else:
        write_rows(result.rows(), fmt)


class RowWriter:
    """Rows as CSV or TSV: the header from the first row's keys, then one line per row."""

    def __init__(self, fmt: Format):
        self.delimiter, self.writer, self.as_text = DELIMITERS[fmt], None, formulas_as_text

    def write(self, rows: Iterable[dict]) -> None:
        import csv  # here, not at the top: JSON and the views start without it

        as_text = self.as_text
        for row in rows:
            if self.writer is None:
                self.writer = csv.DictWriter(sys.stdout, fieldnames=list(row), delimiter=self.delimiter, lineterminator="\n")
                self.writer.writeheader()
            self.writer.writerow({k: cell(v, as_text) for k, v in row.items()})


def write_rows(rows: Iterable[dict], fmt: Format) -> None:
    RowWriter(fmt).write(rows)


def cell(value, formulas_as_text: bool = False) -> object:
    """A CSV cell: booleans as true/false, None (masked, undefined) as an empty cell, floats in full;
    text with its control characters escaped (but a line break or a tab), and with `formulas_as_text` a ' before one that a
    spreadsheet would run as a formula (numbers are left alone: -0.5 stays a number)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        if not value.isprintable():
            value = value.translate(CONTROL_ESCAPES)
        if formulas_as_text and value.startswith(FORMULA_START):
            return "'" + value
    return value


def write_json(obj) -> None:
    """`obj` on stdout as indented JSON (attn_cli.io.output, and json, read only when JSON is written)."""
    from attn_cli.io.output import write_json as write

    write(obj)


def with_line(rows: Iterable[dict], line: int) -> Iterator[dict]:
    """Rows of input line `line` (with `-`): the line number first."""
    for row in rows:
        yield {"line": line, **row}


def document(result) -> dict:
    """The JSON object of `result`; a result that can stream its large arrays (inspect's [n, n]
    matrices, output.Rows) gives that form, written block by block by write_json."""
    return result.document() if hasattr(result, "document") else result.to_dict()


def write_lines(results: Iterable, fmt: Format, *, on_error: Callable[[int, str], None], show: Callable) -> int:
    """Each input line's result (attn_cli.io.lines.Line) in `fmt`; returns how many lines failed.

    json: one array; jsonl: one object per line as each is done; both carry `line` on every
    object, and a failed line is {"line": n, "error": ...}. csv/tsv: one table, `line` its first
    column, a failed line said by `on_error`. table: `show(results)` (views, SVG/HTML exports).
    """
    if fmt is Format.table:
        return show(results)
    failed = 0
    if fmt in DELIMITERS:
        rows = RowWriter(fmt)
        for item in results:
            if item.error is not None:
                failed += 1
                on_error(item.number, item.error)
            else:
                rows.write(with_line(item.result.rows(), item.number))
        return failed
    from attn_cli.io.output import json_line

    objects = (item.to_dict() for item in results)
    if fmt is Format.json:
        items = []
        for obj in objects:
            failed += "error" in obj
            items.append(obj)
        write_json(items)
        return failed
    write, flush = sys.stdout.write, sys.stdout.flush
    for obj in objects:
        failed += "error" in obj
        write(json_line(obj) + "\n")
        flush()
    return failed
