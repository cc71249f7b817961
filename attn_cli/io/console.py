"""The Rich console every view is printed on: user text printed literally, a width Rich can use.

Imported only when something is shown to a person.
"""

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

MIN_WIDTH, MAX_WIDTH = 40, 4096  # COLUMNS outside this range is taken as the nearest end
SHOW_AFTER = 1.0  # seconds: long work (models.progress) draws its bar once it has taken this long; a short pass draws none
_live = None  # the bars on screen: bars asked for inside them are drawn in them (Rich draws one live display at a time)


def view_width() -> int | None:
    """COLUMNS as a width Rich can use (COLUMNS=0 would print nothing), or None to ask the terminal."""
    columns = os.environ.get("COLUMNS", "")
    return min(max(int(columns), MIN_WIDTH), MAX_WIDTH) if columns.isdigit() else None


def view_console(*, record: bool = False, file=None, width: int | None = None, color_system: str | None = "auto",
                 no_color: bool | None = None):
    """A Rich console for a person that prints user text literally: no markup ("[red]" stays as
    typed), no emoji codes, and control characters in words, keys or file names escaped. `no_color`
    None: NO_COLOR decides; False: colours whatever NO_COLOR says (an option typed on the command line)."""
    from rich.console import Console, Group, RenderHook
    from rich.segment import Segment, Segments

    class Literal(RenderHook):
        def process_renderables(self, renderables):
            segments = out.render(Group(*renderables), out.options)
            return [Segments(s if s.control or s.text.isprintable() or s.text == "\n" else Segment(escape_controls(s.text), s.style)
                             for s in segments)]

    out = Console(record=record, highlight=False, markup=False, emoji=False, width=width or view_width(), file=file,
                  color_system=color_system, force_terminal=True if file is not None and color_system else None, no_color=no_color)
    out.push_render_hook(Literal())
    out.on_broken_pipe = lambda: closed_pipe(out)
    return out


def closed_pipe(out) -> None:
    """The reader went away: stop writing to it and say so as an OSError (Rich would exit at once), so that
    files being written (an --svg export) are finished before attn stops quietly (attn_cli.cli.main)."""
    import errno

    out.quiet = True
    raise BrokenPipeError(errno.EPIPE, "the reader of standard output went away")


def escape_controls(text: str) -> str:
    """Control characters as escapes; line breaks kept (they are the view's own)."""
    from attn_cli.io.files import printable

    return "\n".join(printable(line) for line in text.split("\n"))


@contextmanager
def progress_bars(*, fields: str = "", speed: bool = False, count: bool = False) -> Iterator[object | None]:
    """Transient Rich progress bars on stderr, or None when stderr is not a terminal (nothing drawn).

    Columns: the task's description, the bar, its percentage (or with `count`, "12/140", or "12"
    without a total), `fields` (a template such as "loss {task.fields[loss]}"), the transfer speed
    when `speed`, and the time elapsed.
    """
    global _live
    if not sys.stderr.isatty():
        yield None
        return
    if _live is not None:  # inside other bars (a sentence's layers under heads detect's sentences): their rows
        yield _live
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TransferSpeedColumn
    from rich.text import Text

    from attn_cli.io.output import console

    class Done(MofNCompleteColumn):  # "12/140", or "12" while the total is unknown
        def render(self, task):
            return super().render(task) if task.total is not None else Text(str(int(task.completed)), style="progress.download")

    columns = (TextColumn("{task.description}", markup=False), BarColumn(), Done() if count else TaskProgressColumn(),
               *([TextColumn(fields)] if fields else []), *([TransferSpeedColumn()] if speed else []), TimeElapsedColumn())
    with Progress(*columns, console=console(stderr=True), transient=True, redirect_stdout=False) as bars:  # stdout is never the bars'
        _live = bars
        try:
            yield bars
        finally:
            _live = None


@contextmanager
def reporting() -> Iterator[None]:
    """While a command runs: the steps of its long work (models.progress: a pass's layers, patch's patches) as a bar
    on stderr once the work has taken SHOW_AFTER seconds. Only on a terminal: never in a pipe, a file or stdout."""
    if not sys.stderr.isatty():
        yield
        return
    from attn_cli.models import progress

    previous, progress.listener = progress.listener, delayed_bar
    try:
        yield
    finally:
        progress.listener = previous


@contextmanager
def delayed_bar(what: str, total: int | None) -> Iterator[object]:
    """advance(k) over `total` steps of `what`, drawn ("layers ━━━ 12/30") from the first step after SHOW_AFTER seconds."""
    import time
    from contextlib import ExitStack

    start, done, shown = time.monotonic(), [0], []
    with ExitStack() as stack:
        def advance(k: int = 1) -> None:
            done[0] += k
            if shown:
                shown[0].update(shown[1], completed=done[0])
            elif time.monotonic() - start >= SHOW_AFTER and (bars := stack.enter_context(progress_bars(count=True))) is not None:
                shown.extend((bars, bars.add_task(what, total=total, completed=done[0])))

        try:
            yield advance
        finally:
            if shown:
                shown[0].remove_task(shown[1])


def counted(items, what: str, total: int | None = None, *, quiet_on_terminal_stdout: bool = False):
    """`items` as they are, counted on progress_bars ("sentences ━━━ 12/140"), and not over a view printed to the
    same terminal when `quiet_on_terminal_stdout`."""
    if quiet_on_terminal_stdout and sys.stdout.isatty():
        yield from items
        return
    with progress_bars(count=True) as bars:
        if bars is None:
            yield from items
            return
        task = bars.add_task(what, total=total)
        for item in items:
            yield item
            bars.advance(task)
