"""Exports for slides: whole offline, titled, dark, at their own width, and checked before any work."""

import re

import pytest
from typer.testing import CliRunner

from attn_cli.cli import app
from attn_cli.io.export import svg_format

runner = CliRunner()
LESSON = "A fluffy blue creature roamed the verdant forest."


def inspect(*args, columns: int = 80):
    return runner.invoke(app, ["inspect", LESSON, "--neighbors", "0", *map(str, args)], env={"COLUMNS": str(columns)})


def test_the_svg_needs_no_network(tmp_path):
    path = tmp_path / "lesson.svg"
    assert inspect("--svg", path).exit_code == 0
    picture = path.read_text()
    assert "@font-face" not in picture and not re.search(r"url\((?!#)", picture) and "cdnjs" not in picture  # url(#id): a clip path
    assert re.findall(r"https?://[^\s\"<]+", picture) == ["http://www.w3.org/2000/svg", "https://www.textualize.io"]  # a namespace, a comment
    assert "monospace" in picture and "@font-face" not in svg_format() and "{unique_id}-matrix" in svg_format()


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
    assert "creature" not in narrow.stdout.split("query ↓ key →")[1].splitlines()[0]  # cut in the 60-column terminal
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
