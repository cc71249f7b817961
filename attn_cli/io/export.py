"""Pictures of a view for slides: SVG and HTML that need no network, at a width of their own.

Rich's exports are the base. Its SVG loads Fira Code from a CDN; here the font rules are taken out
and the text falls back to the system's monospace fonts, so the file is whole offline. Its HTML is a
white page; here it gets a <title> and the SVG's dark theme, and its coloured cells fill their
whole line (inline blocks one line tall), so that cells of neighbouring lines meet without a seam.
Colours are the same whatever the terminal: truecolor, unless --colors asks for 256 or 16, drawn as
xterm shows them. NO_COLOR leaves an export without colours, unless --colors is typed: an option on
the command line overrides the variable (no-color.org).
"""

import html
import re
from pathlib import Path

EXPORT_WIDTH = 100  # columns of an export when --width is not given, whatever the terminal
MONOSPACE = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace"
FONT_ASPECT = 0.6  # advance width / size of those fonts (DejaVu Sans Mono and Menlo: 0.602)
SUFFIXES = {"svg": (".svg",), "html": (".html", ".htm"), "page": (".html", ".htm")}
KINDS = {"svg": "an SVG file's", "html": "an HTML file's", "page": "the page's"}


def svg_format() -> str:
    """Rich's SVG template without its web fonts, and with a width and height (a slide or an <img> shows it at its
    own size, not stretched to whatever box it is put in)."""
    from rich._export_format import CONSOLE_SVG_FORMAT

    offline = re.sub(r"\s*@font-face \{\{.*?\}\}", "", CONSOLE_SVG_FORMAT, flags=re.DOTALL)
    sized = offline.replace('viewBox="0 0 {width} {height}"', 'width="{width}" height="{height}" viewBox="0 0 {width} {height}"', 1)
    assert sized != offline, "Rich's SVG template changed: its <svg> tag has no viewBox to size"
    return sized.replace("font-family: Fira Code, monospace;", f"font-family: {MONOSPACE};")


HTML_FORMAT = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{{stylesheet}}
body {{{{
    color: {{foreground}};
    background-color: {{background}};
    margin: 0;
    padding: 1.5em;
}}}}
pre {{{{
    font-family: {font};
    font-size: 15px;
    line-height: 19px;
    margin: 0;
}}}}
pre span.cell {{{{
    display: inline-block;
    vertical-align: top;
    height: 19px;
}}}}
</style>
</head>
<body>
<pre><code style="font-family:inherit">{{code}}</code></pre>
</body>
</html>
"""


def html_format(title: str) -> str:
    """The page template with its title filled in (braces doubled: Rich formats the result again)."""
    safe = html.escape(title).replace("{", "{{").replace("}", "}}")
    return HTML_FORMAT.format(title=safe, font=MONOSPACE)


def check_export(path: Path | None, kind: str, force: bool) -> Path | None:
    """An export's destination, checked before any work: a name ending as the format does, a folder that
    exists, and no file overwritten without --force. Errors name the path."""
    if path is None:
        return None
    from attn_cli.io.atomic import check_writable
    from attn_cli.errors import InputError

    if path.suffix.lower() not in SUFFIXES[kind]:
        wanted = " or ".join(SUFFIXES[kind])
        raise InputError(f"--{kind} {path}: {KINDS[kind]} name ends in {wanted}, not {path.suffix or 'nothing'}")
    if not path.parent.is_dir():
        raise InputError(f"--{kind} {path}: there is no folder {path.parent}")
    return check_writable(path, force)


COLOR_SYSTEMS = {"truecolor": "truecolor", "256": "256", "16": "standard"}  # --colors -> Rich's colour system


def export_console(width: int | None, colors: str = "truecolor", typed: bool = False):
    """A console that records what is shown, for the exports only: its own width, and truecolor (or the
    256 or 16 colours --colors names), whatever the terminal it runs in; under NO_COLOR none, unless
    --colors was `typed`."""
    import io

    from attn_cli.io.console import view_console

    return view_console(record=True, file=io.StringIO(), width=width or EXPORT_WIDTH, color_system=COLOR_SYSTEMS[colors],
                        no_color=False if typed else None)


def theme(console):
    """Rich's dark export theme; on 16 colours, with xterm's palette, the one the colour ramps were chosen on."""
    from rich.terminal_theme import SVG_EXPORT_THEME, TerminalTheme

    if console.color_system != "standard":
        return SVG_EXPORT_THEME
    from attn_cli.views.colours import ANSI16

    order = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
    normal = [ANSI16[name] for name in order]
    bright = [ANSI16["bright_" + name] for name in order]
    return TerminalTheme(SVG_EXPORT_THEME.background_color, SVG_EXPORT_THEME.foreground_color, normal, bright)


CELL = re.compile(r'<span style="([^"]*background-color[^"]*)">([^<\n]*)</span>')


def seamless(page: str) -> str:
    """Coloured cells of Rich's HTML as inline blocks one line tall (see HTML_FORMAT): no seams between lines."""
    return CELL.sub(r'<span class="cell" style="\1">\2</span>', page)


NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")  # XML 1.0 forbids them (C1 and DEL: discouraged)


def xml_safe(text: str) -> str:
    """A picture's text with each character XML cannot hold written as its escape (\\x1b), as the terminal view shows it."""
    return NOT_XML.sub(lambda m: repr(m.group())[1:-1], text)


def save(console, svg: Path | None, html_path: Path | None, *, title: str, force: bool) -> list[str]:
    """Write the recorded view as SVG and/or HTML (each whole, then renamed into place); every character XML cannot hold,
    in the title or the view, is written as its escape, so that the file is well-formed. Returns what to say of each file."""
    from attn_cli.io.atomic import write_atomic, wrote
    from attn_cli.io.files import printable

    title = printable(title)
    most = console.width - 10  # the SVG's title bar is as wide as the picture; a longer title would run over its buttons
    title = title if len(title) <= most else title[:most - 1] + "…"
    notes = []
    if svg is not None:
        picture = xml_safe(console.export_svg(title=title, theme=theme(console), code_format=svg_format(),
                                              font_aspect_ratio=FONT_ASPECT, clear=html_path is None)).encode("utf-8")
        notes.append(wrote(write_atomic(svg, lambda f: f.write(picture), force=force), len(picture)))
    if html_path is not None:
        page = xml_safe(seamless(console.export_html(theme=theme(console), code_format=html_format(title), inline_styles=True))).encode("utf-8")
        notes.append(wrote(write_atomic(html_path, lambda f: f.write(page), force=force), len(page)))
    return notes


class Exports:
    """What inspect saves besides stdout: the view as SVG/HTML (whole, or one view alone as a figure) and the page."""

    def __init__(self, svg: Path | None = None, html: Path | None = None, width: int | None = None, colors: str = "truecolor",
                 view: str | None = None, page: Path | None = None, sentence: str = "", force: bool = False, colors_typed: bool = False):
        self.svg, self.html, self.width, self.colors, self.view = svg, html, width, colors, view
        self.page, self.sentence, self.force = page, sentence, force
        self.colors_typed = colors_typed  # --colors on the command line: it beats NO_COLOR

    @property
    def pictures(self) -> bool:
        return self.svg is not None or self.html is not None

    def recorder(self):
        """The console that records the whole view for --svg/--html (None: no picture, or one view alone)."""
        return export_console(self.width, self.colors, self.colors_typed) if self.pictures and self.view is None else None

    def save(self, recorded, result, options: dict, *, single: bool = True) -> list[str]:
        """Write what was asked: the recorded view or the figure of one view (`options`: the views.inspect.ViewOptions
        the terminal view was drawn with), and the page; returns what the command says of each file (where, how big)."""
        title = f"attn inspect: {self.sentence}" if single else "attn inspect"
        notes = []
        if self.pictures:
            if self.view is not None:
                from attn_cli.views.figure import figure
                from attn_cli.views.inspect import ViewOptions

                measure = export_console(4096, self.colors, self.colors_typed)
                parts, width = figure(result, ViewOptions(**options), self.view, self.sentence, measure)
                recorded = export_console(self.width or width, self.colors, self.colors_typed)
                for part in parts:
                    recorded.print(part)
            notes += save(recorded, self.svg, self.html, title=title, force=self.force)
        if self.page is not None:
            from attn_cli.io.page import write_page

            notes.append(write_page(result, self.page, title=title, sentence=self.sentence, force=self.force))
        return notes
