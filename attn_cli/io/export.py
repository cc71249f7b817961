"""Pictures of a view for slides: SVG and HTML that need no network, at a width of their own.

Rich's exports are the base. Its SVG loads Fira Code from a CDN; here the font rules are taken out
and the text falls back to the system's monospace fonts, so the file is whole offline. Its HTML is a
white page; here it gets a <title> and the SVG's dark theme.
"""

import html
import re
from pathlib import Path

EXPORT_WIDTH = 100  # columns of an export when --width is not given, whatever the terminal
MONOSPACE = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace"
FONT_ASPECT = 0.6  # advance width / size of those fonts (DejaVu Sans Mono and Menlo: 0.602)
SUFFIXES = {"svg": (".svg",), "html": (".html", ".htm")}


def svg_format() -> str:
    """Rich's SVG template without its web fonts."""
    from rich._export_format import CONSOLE_SVG_FORMAT

    offline = re.sub(r"\s*@font-face \{\{.*?\}\}", "", CONSOLE_SVG_FORMAT, flags=re.DOTALL)
    return offline.replace("font-family: Fira Code, monospace;", f"font-family: {MONOSPACE};")


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
    line-height: 1.25;
    margin: 0;
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
        raise InputError(f"--{kind} {path}: an {kind.upper()} file's name ends in {wanted}, not {path.suffix or 'nothing'}")
    if not path.parent.is_dir():
        raise InputError(f"--{kind} {path}: there is no folder {path.parent}")
    return check_writable(path, force)


def export_console(width: int | None, color_system: str | None):
    """A console that records what is shown, for the exports only: its own width, and the terminal's
    colour system (256 colours look as they do there), or truecolor when the terminal has none."""
    import io

    from attn_cli.io.console import view_console

    return view_console(record=True, file=io.StringIO(), width=width or EXPORT_WIDTH, color_system=color_system or "truecolor")


def save(console, svg: Path | None, html_path: Path | None, *, title: str, force: bool) -> None:
    """Write the recorded view as SVG and/or HTML (each whole, then renamed into place)."""
    from rich.terminal_theme import SVG_EXPORT_THEME

    from attn_cli.io.atomic import write_atomic

    most = console.width - 10  # the SVG's title bar is as wide as the picture; a longer title would run over its buttons
    title = title if len(title) <= most else title[:most - 1] + "…"
    if svg is not None:
        picture = console.export_svg(title=title, theme=SVG_EXPORT_THEME, code_format=svg_format(),
                                     font_aspect_ratio=FONT_ASPECT, clear=html_path is None).encode("utf-8")
        write_atomic(svg, lambda f: f.write(picture), force=force)
    if html_path is not None:
        page = console.export_html(theme=SVG_EXPORT_THEME, code_format=html_format(title), inline_styles=True).encode("utf-8")
        write_atomic(html_path, lambda f: f.write(page), force=force)
