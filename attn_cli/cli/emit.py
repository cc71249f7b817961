"""What the commands that take TEXT or - share: standard input read line by line, and each line's result written in the
chosen format (the terminal view, recorded and saved as SVG/HTML when asked), a failed line reported while the others go on."""

import typer

from attn_cli.cli.app import Format, say
from attn_cli.errors import InputError


def stdin_lines():
    """(line number, bytes) of standard input, read lazily (a million-line file streams). Each line is
    decoded by `line_text` as it is computed, so a line that is not UTF-8 fails alone."""
    from attn_cli.io.files import stdin_line_bytes

    return stdin_line_bytes()


def line_text(line: str | bytes) -> str:
    from attn_cli.io.files import decode_utf8

    return decode_utf8(line, "") if isinstance(line, bytes) else line


def emit(lines, compute, view, *, single: bool, output: Format, exports, options) -> None:
    """Each input line's result in the chosen format (the terminal view also saved as SVG/HTML, the page written).

    With several lines, a failed line is reported and the others go on; at the end, exit 1 if a line
    met damaged data, else 2 if any failed.
    One sentence given as an argument fails as any command does: one `attn: ...` line, nothing on stdout.
    """
    from attn_cli.io import writers

    if single:
        _, text = next(lines)
        result = compute(text)
        if output is Format.table:
            show([result], view, single=True, exports=exports, options=options)
            return
        try:
            if output is Format.json:  # indented and streamed: inspect's [n, n] matrices are written block by block
                writers.write_json(writers.document(result))
            else:
                writers.write(result, output)
        finally:
            if exports is not None:
                for note in exports.save(None, result, options):
                    say(note)
        return
    from attn_cli.io.console import counted
    from attn_cli.io.lines import Lines

    source = Lines(counted(lines, "lines", quiet_on_terminal_stdout=True))
    failed = writers.write_lines(
        source.results(compute), output, on_error=lambda n, e: say(f"line {n}: {e}"),
        show=lambda items: show(items, view, single=False, exports=exports, options=options),
    )
    if note := source.blank_note():
        say(note)
    if failed:
        say(f"{failed} of {source.read} lines failed" + (f" ({source.damaged} on damaged data)" if source.damaged else ""))
        raise typer.Exit(source.exit_code())


def show(items, view, *, single: bool, exports, options) -> int:
    """The terminal view of each sentence (a Line, or the one result); recorded and saved as SVG/HTML
    when asked (each written whole under a temporary name and then renamed, so a failed write leaves
    the old file as it was). A reader that goes away (`| head`) or a stdout that fails stops the view,
    not the files: they are written, then the failure ends attn as it does any command. Returns how many lines failed."""
    from rich.rule import Rule

    from attn_cli.io.console import view_console

    out = view_console()
    recorded = None if exports is None else exports.recorder()
    failed, closed, last = 0, None, None
    for item in items:
        number, result = (1, item) if single else (item.number, item.result)
        try:
            if not single and item.error is not None:
                raise InputError(item.error)
            parts = view(result, number)
        except InputError as e:
            if single:
                raise
            failed += 1
            say(f"line {number}: {e}")
            continue
        last = result
        if not single:
            parts = [Rule(f"line {number}", style="bold"), *parts]
        for part in parts:
            if closed is None:
                try:
                    out.print(part)
                except OSError as e:  # stdout failed (a closed pipe or stdout, a full disk): the files are still written
                    if e.filename is not None:
                        raise
                    closed = e
            if recorded is not None:
                recorded.print(part)
    if exports is not None and (last is not None or recorded is not None):
        for note in exports.save(recorded, last, options, single=single):
            say(note)
    if closed is not None:
        raise closed
    return failed
