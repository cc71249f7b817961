"""Views for a newcomer: long sentences as a compact grid, captions that say what is on screen."""

import io
import json
import re

import numpy as np
import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from attn_cli import views as render
from attn_cli.core.attention import causal_mask
from attn_cli.cli import app

runner = CliRunner()
FORTY = ("the old man who lived by the sea told us a long story about the storm that came one night when the boats "
         "were out and every family in the small town waited on the cold shore for them all night")  # 41 tokens
LESSON = "A fluffy blue creature roamed the verdant forest."


def rendered(renderable, width: int, color_system=None) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=color_system, force_terminal=color_system is not None).print(renderable)
    return out.getvalue()


def view(*args: str, width: int = 80) -> str:
    result = runner.invoke(app, ["inspect", *args], env={"COLUMNS": str(width), "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    return result.stdout


TWENTY = "the old man who lived by the sea told us a long story about the storm that came one night"  # 20 tokens


def grid_rows(text: str, tokens: list[str]) -> dict[int, list[str]]:
    """The numbered grid's rows: index -> the cells after "index token"."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[0].isdigit() and int(parts[0]) < len(tokens) and parts[1] == tokens[int(parts[0])]:
            rows[int(parts[0])] = parts[2:]
    return rows


def test_twenty_tokens_keep_their_weights_and_labels_in_80_columns(glove):
    text = view(TWENTY, "--head", "adjective", "--json")
    weights = json.loads(text)["heads"][0]["weights"]
    shown = view(TWENTY, "--head", "adjective")
    assert max(cell_len(line) for line in shown.splitlines()) <= 80 and "token indices" not in shown
    rows = grid_rows(shown, TWENTY.split())
    assert sorted(rows) == list(range(20))
    for i, cells in rows.items():  # every visible weight, in hundredths; the masked ones a dot
        assert cells == [render.short_weight_text(w) for w in weights[i][: i + 1]] + ["·"] * (19 - i)
    assert "weights in hundredths (56 = .56, 1. = 1.0)" in shown


def test_forty_tokens_keep_numbers_in_120_columns_and_row_labels_in_80():
    tokens = FORTY.split()
    wide = view(FORTY, "--head", "adjective", width=120)
    assert max(cell_len(line) for line in wide.splitlines()) <= 120 and "token indices" not in wide
    assert sorted(grid_rows(wide, tokens)) == list(range(len(tokens))) and "weights in tenths" in wide
    narrow = view(FORTY, "--head", "adjective")
    assert "query ↓ key → (token indices); one cell per weight" in narrow
    assert "do not fit" not in narrow and max(cell_len(line) for line in narrow.splitlines()) <= 80
    labelled = [line for line in narrow.splitlines() if line.startswith(("40 night ", " 0 the "))]
    assert len(labelled) == 2 and narrow.count("40:night") == 1  # the rows say which token each index is: no list under the grid


def test_tenths_and_hundredths_round_as_the_full_cells_do():
    for w in (0.0, 0.004, 0.049, 0.05, 0.149, 0.55, 0.949, 0.95, 0.994, 0.995, 1.0):
        assert render.short_weight_text(w) == ("1." if render.weight_text(w) == "1.0" else render.weight_text(w)[1:])
        tenth = round(w, 1)
        assert render.short_weight_text(w, 1) == ("█" if w >= 0.95 else " " if w < 0.05 else str(tenth)[2])


def test_a_pooled_grid_does_not_list_the_tokens_again():
    paragraph = " ".join([FORTY] * 3)  # 123 tokens: pooled at 80 columns
    text = view(paragraph, "--head", "adjective")
    assert "a cell per 2 × 2 block" in text
    assert text.count(" 0:the") == 1  # the tokens line above the heatmaps, once


def test_the_lesson_sentence_keeps_the_full_grid_at_80_columns():
    text = view(LESSON, "--neighbors", "0")
    assert "token indices" not in text and "query ↓ key →" in text


def test_the_compact_grid_is_coloured_with_a_legend():
    n = 40
    weights = np.where(causal_mask(n), 1.0 / np.arange(1, n + 1)[:, None], np.nan)
    text = rendered(render.Heatmap(weights, [f"w{i}" for i in range(n)], [f"w{i}" for i in range(n)]), 80, "truecolor")
    assert "\x1b[48;2;" in text and "lighter = more weight" in text


def test_pooled_weights_still_sum_to_one_per_row():
    n = 300
    weights = np.where(causal_mask(n), 1.0 / np.arange(1, n + 1)[:, None], np.nan)
    heatmap = render.Heatmap(weights, ["w"] * n, ["w"] * n)
    pooled, rows, cols = heatmap.pooled(4)
    assert pooled.shape == (75, 75) and rows[:3] == [0, 4, 8]
    assert np.allclose(np.nansum(pooled, axis=1), 1.0)
    assert np.isnan(pooled[0, 1]) and not np.isnan(pooled[1, 0])  # a block is masked only when all of it is
    text = rendered(heatmap, 80)
    assert "a cell per 4 × 4 block" in text and max(cell_len(line) for line in text.splitlines()) <= 80


def test_captions_follow_mask_and_transpose():
    plain = view(LESSON, "--neighbors", "0", "--mask", "none")
    assert "· = masked" not in plain and "each row sums to 1" in plain
    turned = view(LESSON, "--neighbors", "0", "--transpose")
    assert "softmax over each query's column: each column sums to 1" in turned and "each row sums" not in turned


def test_softmax_says_one_value_takes_all_the_mass():
    result = runner.invoke(app, ["softmax", "1", "inf", "2"], env={"COLUMNS": "80"})
    assert "1 value takes all the mass" in result.stdout
    result = runner.invoke(app, ["softmax", "inf", "inf", "2"], env={"COLUMNS": "80"})
    assert "2 values share the mass equally" in result.stdout


def test_punctuation_neighbours_are_quoted():
    assert render.key_label(",") == "“,”" and render.key_label("well") == "well" and render.key_label("'s") == "'s"


def test_an_invisible_key_is_escaped_before_its_table_is_laid_out():
    """A no-break space (SmolLM2's token 15442) is shown as its escape, quoted, and the columns after it stay in line."""
    import io

    from rich.table import Table

    from attn_cli.io.console import view_console

    assert render.key_label("\xa0") == "“\\xa0”" and render.key_label("a\u200b") == "a\\u200b"
    table = Table("top", "p", box=None)
    for keys, p in ([["is", "was"], "4.81e-51"], [["a", "\xa0"], "8.05e-11"]):
        table.add_row(", ".join(render.key_label(k) for k in keys), p)
    console = view_console(file=io.StringIO(), width=60, color_system=None)  # as attn prints: escapes made after layout too
    console.print(table)
    rows = [line for line in console.file.getvalue().splitlines() if "e-" in line]
    assert len({line.index("e-") for line in rows}) == 1, rows


def test_analogy_header_lines_fit_80_columns():
    result = runner.invoke(app, ["analogy", "cats", "cat", "dog"], env={"COLUMNS": "80"})
    lines = result.stdout.splitlines()
    assert lines[1] == "cat is to cats as dog is to ?" and lines[2].startswith("3CosAdd: +cats +dog -cat")


NARROW_COMMANDS = [
    ["softmax", "2", "1", "0.1", "--log"], ["similarity", "cat", "dog", "good"], ["analogy", "cats", "cat", "dog"],
    ["inspect", LESSON, "--neighbors", "3"], ["inspect", "the cat sat", "--focus", "cat"], ["heads", "list"],
    ["inspect", "One mole of carbon dioxide.", "--sense-set", "lesson", "--mask", "none"], ["vectors", "info"],
]


@pytest.mark.parametrize("args", NARROW_COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_at_40_columns_no_number_is_cut(args):
    """A cut number ends or starts at "…" ("5.…", "…31"); tables give up bars and labels first, or list their rows."""
    result = runner.invoke(app, args, env={"COLUMNS": "40", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert max(cell_len(line) for line in lines) <= 40
    numbers = "\n".join(line for line in lines if not line.strip().startswith("path "))  # a file's path is a label ("glove.6…")
    assert not re.search(r"[\d.]…|…\d", numbers), result.stdout


def test_a_table_that_cannot_fit_says_so_and_lists_its_rows():
    result = runner.invoke(app, ["similarity", "cat", "dog", "good"], env={"COLUMNS": "40", "NO_COLOR": "1"})
    text = " ".join(result.stdout.split())
    assert "this table needs" in text and "each row as a list" in text
    assert "cat dog aligned dot: 19.7391 cosine: 0.9218" in text  # every number of the row, whole
    wide = runner.invoke(app, ["similarity", "cat", "dog", "good"], env={"COLUMNS": "100", "NO_COLOR": "1"}).stdout
    assert "this table needs" not in wide and "19.7391" in wide


def test_narrow_bars_scale_alike_so_they_still_compare():
    from rich.console import Console as RichConsole

    table = render.FitTable()
    table.add_column("p", justify="right")
    table.add_column("")
    for p in (0.66, 0.24, 0.1):
        table.add_row(f"{p:.2f}", render.Bar(p))
    out = io.StringIO()
    RichConsole(file=out, width=16, color_system=None).print(table)
    bars = [len(re.sub(r"[^█▏▎▍▌▋▊▉]", "", line)) for line in out.getvalue().splitlines() if re.match(r"\W*0\.\d\d", line)]
    assert len(bars) == 3 and bars[0] > bars[1] >= bars[2] > 0 and bars[0] < 16 and max(cell_len(line) for line in out.getvalue().splitlines()) <= 16
