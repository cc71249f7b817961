"""Exports for slides: whole offline, titled, dark, at their own width, and checked before any work."""

import re

import pytest
from typer.testing import CliRunner

from attn_cli.cli import app
from attn_cli.io.export import svg_format

runner = CliRunner()
LESSON = "A fluffy blue creature roamed the verdant forest."


def inspect(*args, columns: int = 80, env: dict | None = None):
    return runner.invoke(app, ["inspect", LESSON, "--neighbors", "0", *map(str, args)], env={"COLUMNS": str(columns), **(env or {})})


def test_the_svg_needs_no_network(tmp_path):
    path = tmp_path / "lesson.svg"
    assert inspect("--svg", path).exit_code == 0
    picture = path.read_text()
    assert "@font-face" not in picture and not re.search(r"url\((?!#)", picture) and "cdnjs" not in picture  # url(#id): a clip path
    assert re.findall(r"https?://[^\s\"<]+", picture) == ["http://www.w3.org/2000/svg", "https://www.textualize.io"]  # a namespace, a comment
    assert "monospace" in picture and "@font-face" not in svg_format() and "{unique_id}-matrix" in svg_format()


@pytest.mark.parametrize("view", [[], ["--export-view", "heatmap"]])
def test_an_svg_carries_its_width_and_height(tmp_path, view):
    """Put in a slide or an <img>, the picture keeps its own size: width and height are the viewBox's."""
    from xml.etree import ElementTree

    path = tmp_path / "lesson.svg"
    assert inspect("--svg", path, *view).exit_code == 0
    root = ElementTree.fromstring(path.read_text())  # well-formed XML
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    width, height = size(path.read_text())
    assert width > 100 and height > 100
    assert (float(root.get("width")), float(root.get("height"))) == pytest.approx((width, height), abs=1e-9)


def test_the_html_has_a_title_and_the_dark_theme(tmp_path):
    path = tmp_path / "lesson.html"
    assert inspect("--html", path).exit_code == 0
    page = path.read_text()
    assert f"<title>attn inspect: {LESSON}</title>" in page
    assert "background-color: #292929" in page and "<link" not in page and "url(" not in page


def test_the_export_width_is_its_own(tmp_path):
    path = tmp_path / "wide.svg"
    narrow = inspect("--svg", path, "--width", "140", columns=60)
    assert narrow.exit_code == 0
    assert "q ↓ k →" in narrow.stdout and "query ↓ key →" not in narrow.stdout  # numbered columns in the 60-column terminal
    picture = path.read_text()
    assert "creature" in picture and "creat…" not in picture
    default = tmp_path / "default.svg"
    assert inspect("--svg", default, columns=60).exit_code == 0
    widths = {p: float(re.search(r'viewBox="0 0 ([\d.]+)', p.read_text()).group(1)) for p in (path, default)}
    assert widths[path] > widths[default]  # 140 columns against the default 100


@pytest.mark.parametrize("flag,name", [("--svg", "a.png"), ("--svg", "a.html"), ("--html", "a.svg"), ("--html", "page")])
def test_a_suffix_that_does_not_match_is_refused(tmp_path, flag, name):
    result = inspect(flag, tmp_path / name)
    assert result.exit_code == 2 and result.stdout == "" and str(tmp_path / name) in result.stderr
    assert not (tmp_path / name).exists()


def test_the_path_is_checked_before_any_work(tmp_path):
    missing = tmp_path / "no" / "such" / "a.svg"
    result = runner.invoke(app, ["inspect", LESSON, "--head", "nonsense", "--svg", str(missing)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == f"attn: --svg {missing}: there is no folder {missing.parent}\n"


def test_width_without_an_export_is_a_usage_error():
    result = inspect("--width", "120")
    assert result.exit_code == 2 and "--width" in result.stderr


# --- figures for slides ---------------------------------------------------------------------------

import os
import subprocess
import sys

from attn_cli.views import colours
from tests import checkpoints


def fills(svg: str) -> set[str]:
    """The colours of the picture's cells (its background rectangles), the window's own left out."""
    return set(re.findall(r'<rect fill="(#[0-9a-f]{6})" x=[^>]*shape-rendering="crispEdges"', svg)) - {"#292929"}


def size(svg: str) -> tuple[float, float]:
    width, height = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups()
    return float(width), float(height)


def attn_in_a_terminal(args: list[str], env: dict) -> int:
    """attn with stdout on a pseudo-terminal (as in tmux), its output read and dropped."""
    main, child = os.openpty()
    done = subprocess.Popen([sys.executable, "-m", "attn_cli", *args], stdout=child, stderr=child, env=env)
    os.close(child)
    while True:
        try:
            if not os.read(main, 65536):
                break
        except OSError:  # the child closed its end
            break
    os.close(main)
    return done.wait(timeout=60)


def test_export_colours_do_not_depend_on_the_terminal(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("COLORTERM", "NO_COLOR", "FORCE_COLOR")}
    tmux, piped = tmp_path / "tmux.svg", tmp_path / "piped.svg"
    args = ["inspect", LESSON, "--neighbors", "0", "--head", "adjective"]
    assert attn_in_a_terminal([*args, "--svg", str(tmux)], env | {"TERM": "tmux-256color", "COLUMNS": "80"}) == 0
    assert subprocess.run([sys.executable, "-m", "attn_cli", *args, "--svg", str(piped)], env=env | {"TERM": "dumb"}, capture_output=True).returncode == 0
    assert fills(tmux.read_text()) == fills(piped.read_text()) and len(fills(piped.read_text())) > 20  # truecolor: many shades


@pytest.mark.parametrize("colors,palette", [("256", {colours.xterm256(i) for i in range(16, 256)}), ("16", set(colours.ANSI16.values()))])
def test_colors_256_and_16_draw_with_those_palettes_only(tmp_path, colors, palette):
    path = tmp_path / "lesson.svg"
    assert inspect("--head", "adjective", "--svg", path, "--colors", colors).exit_code == 0
    shown = {tuple(int(f[i:i + 2], 16) for i in (1, 3, 5)) for f in fills(path.read_text())}
    assert shown and shown <= palette and len(shown) >= 4


@pytest.mark.parametrize("colors", ["truecolor", "256", "16"])
def test_colors_typed_on_the_command_line_beat_no_color(tmp_path, colors):
    """no-color.org: an option on the command line overrides NO_COLOR; without one, NO_COLOR leaves the picture grey."""
    typed, left, plain = tmp_path / "typed.svg", tmp_path / "left.svg", tmp_path / "plain.svg"
    assert inspect("--head", "adjective", "--svg", typed, "--colors", colors, env={"NO_COLOR": "1"}).exit_code == 0
    assert inspect("--head", "adjective", "--svg", left, env={"NO_COLOR": "1"}).exit_code == 0
    assert inspect("--head", "adjective", "--svg", plain, env={"NO_COLOR": None}).exit_code == 0
    assert len(fills(typed.read_text())) >= 4 and not fills(left.read_text())
    if colors == "truecolor":
        assert fills(typed.read_text()) == fills(plain.read_text())


def test_export_view_heatmap_is_a_landscape_figure_of_the_heatmaps_alone(tmp_path):
    path = tmp_path / "figure.svg"
    result = inspect("--svg", path, "--export-view", "heatmap", columns=60)
    assert result.exit_code == 0, result.stderr
    picture = path.read_text()
    width, height = size(picture)
    assert width > 2 * height  # two heads side by side: a slide, not a page
    text = " ".join(re.findall(r">([^<>]+)</text>", picture)).replace("&#160;", " ")
    assert "“A fluffy blue creature roamed the verdant forest.”" in text and "head adjective" in text and "head context" in text
    assert "creature" in text and "creat…" not in text  # whole labels: the figure is as wide as they need
    assert "colour:" in text and "lighter = more weight" in text  # its legend
    assert "embedding shift" not in text and "ΔE = ΔE_ctx" not in text  # the one view alone


def test_export_view_refuses_what_it_cannot_show(tmp_path):
    assert "--export-view is for the --svg and --html pictures" in inspect("--export-view", "heatmap").stderr
    result = inspect("--svg", tmp_path / "a.svg", "--export-view", "overview")
    assert result.exit_code == 2 and "no overview to export" in result.stderr and not (tmp_path / "a.svg").exists()
    result = runner.invoke(app, ["inspect", LESSON, "--model", str(checkpoints.tiny_gpt2_folder()), "--svg", str(tmp_path / "b.svg"),
                                 "--export-view", "heatmap"])
    assert result.exit_code == 2 and "--head LAYER.HEAD" in result.stderr


def test_the_model_view_figure_has_square_cells_and_no_half_blocks(tmp_path):
    svg, html = tmp_path / "model.svg", tmp_path / "model.html"
    result = runner.invoke(app, ["inspect", "the cat sat on the mat", "--model", str(checkpoints.tiny_gpt2_folder()), "--svg", str(svg),
                                 "--html", str(html), "--export-view", "overview"])
    assert result.exit_code == 0, result.stderr
    picture = svg.read_text()
    width, height = size(picture)
    assert width > height and "▀" not in picture and len(fills(picture)) > 10
    cells = re.findall(r'<rect fill="#[0-9a-f]{6}" x="[\d.]+" y="[\d.]+" width="([\d.]+)" height="([\d.]+)"', picture)
    w, h = (float(v) for v in cells[len(cells) // 2])  # a cell of two characters: as wide as it is tall, within 10%
    assert abs(w / 2 - h) / h < 0.1 or abs(w - h) / h < 0.1


def test_html_cells_fill_their_line_so_no_seams_show(tmp_path):
    path = tmp_path / "model.html"
    assert runner.invoke(app, ["inspect", "the cat sat", "--model", str(checkpoints.tiny_gpt2_folder()), "--html", str(path)]).exit_code == 0
    page = path.read_text()
    coloured = re.findall(r'<span ([^>]*background-color[^>]*)>([^<]*)</span>', page)
    assert coloured and all(attrs.startswith('class="cell"') and "\n" not in text for attrs, text in coloured)
    assert "pre span.cell" in page and "display: inline-block" in page and "line-height: 19px" in page and "height: 19px" in page


def test_a_closed_pipe_still_gets_its_export_written(tmp_path):
    path = tmp_path / "lesson.svg"
    done = subprocess.run(f'"{sys.executable}" -m attn_cli inspect "{LESSON}" --svg "{path}" | head -1', shell=True, capture_output=True, text=True,
                          env=os.environ | {"COLUMNS": "80"})
    assert done.stdout.count("\n") == 1 and done.stderr == f"attn: wrote {path} ({path.stat().st_size / 1e3:.0f} kB)\n"
    assert path.read_text().startswith("<svg") and "ΔE_ctx" in path.read_text() and "verdant" in path.read_text()  # the whole view


def test_every_file_written_is_said_in_one_form_with_its_size(tmp_path):
    """--svg, --html, --page of inspect, and the pages of generate and explain: `attn: wrote FILE (SIZE[; more])`, one line each."""
    model = str(checkpoints.tiny_llama_folder())
    runs = {
        ("a.svg", "a.html", "a-page.html"): ["inspect", "the cat sat", "--model", model, "--svg", str(tmp_path / "a.svg"), "--html",
                                             str(tmp_path / "a.html"), "--page", str(tmp_path / "a-page.html")],
        ("g.html",): ["generate", "the cat", "--model", model, "--steps", "2", "--page", str(tmp_path / "g.html")],
        ("e.html",): ["explain", "the cat", "--model", model, "--page", str(tmp_path / "e.html")],
        ("p.html",): ["patch", "the cat sat", "the sat cat", "--model", model, "--target", "id:5", "--versus", "id:6", "--page", str(tmp_path / "p.html")],
    }
    for names, args in runs.items():
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.stderr)
        said = [line for line in result.stderr.splitlines() if " wrote " in line]
        assert len(said) == len(names), result.stderr
        for name, line in zip(names, said):
            size = (tmp_path / name).stat().st_size
            assert re.fullmatch(rf"attn: wrote {re.escape(str(tmp_path / name))} \({size / 1e3:.0f} kB(; .+)?\)", line), line


def test_the_model_view_in_an_export_has_square_cells_and_says_when_it_pools(tmp_path):
    """A line of an export is twice as tall as a character is wide: the model view gives each cell two characters (square,
    not stretched to twice its height), and says when its squares pool the tokens into blocks to fit the width."""
    long = "the cat sat on the mat and the dog ran to the door of the old red barn by the sea"
    for text, pooled in (("the cat sat", False), (long, True)):
        path = tmp_path / "view.html"
        result = runner.invoke(app, ["inspect", text, "--model", str(checkpoints.tiny_gpt2_folder()), "--html", str(path), "--force"])
        assert result.exit_code == 0, result.stderr
        page = path.read_text()
        cells = re.findall(r'<span class="cell" style="[^"]*background-color[^"]*">([^<]*)</span>', page)
        assert cells and all(len(c) % 2 == 0 for c in cells)
        said = re.findall(r"each square pools the (\d+) tokens into (\d+) × \2 blocks", page)
        assert bool(said) == pooled and all(int(s) < int(n) for n, s in said)
