"""The Rich console every view is printed on: user text printed literally, a width Rich can use.

Imported only when something is shown to a person.
"""

import os

MIN_WIDTH, MAX_WIDTH = 40, 4096  # COLUMNS outside this range is taken as the nearest end


def view_width() -> int | None:
    """COLUMNS as a width Rich can use (COLUMNS=0 would print nothing), or None to ask the terminal."""
    columns = os.environ.get("COLUMNS", "")
    return min(max(int(columns), MIN_WIDTH), MAX_WIDTH) if columns.isdigit() else None


def view_console(*, record: bool = False, file=None, width: int | None = None, color_system: str | None = "auto"):
    """A Rich console for a person that prints user text literally: no markup ("[red]" stays as
    typed), no emoji codes, and control characters in words, keys or file names escaped."""
    from rich.console import Console, Group, RenderHook
    from rich.segment import Segment, Segments

    class Literal(RenderHook):
        def process_renderables(self, renderables):
            segments = out.render(Group(*renderables), out.options)
            return [Segments(s if s.control or s.text.isprintable() or s.text == "\n" else Segment(escape_controls(s.text), s.style)
                             for s in segments)]

    out = Console(record=record, highlight=False, markup=False, emoji=False, width=width or view_width(), file=file,
                  color_system=color_system, force_terminal=True if file is not None and color_system else None)
    out.push_render_hook(Literal())
    return out


def escape_controls(text: str) -> str:
    """Control characters as escapes; line breaks kept (they are the view's own)."""
    from attn_cli.files import printable

    return "\n".join(printable(line) for line in text.split("\n"))
