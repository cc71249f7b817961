"""Views for a newcomer: long sentences as a compact grid, captions that say what is on screen."""

import io

import numpy as np
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


def test_forty_words_get_a_compact_heatmap_within_80_columns():
    text = view(FORTY, "--head", "adjective", "--neighbors", "0")
    assert "query ↓ key → (token indices); one cell per weight" in text
    assert "do not fit" not in text and max(cell_len(line) for line in text.splitlines()) <= 80
    assert "40:night" in text.split("token indices")[1]  # the index -> token list under the grid


def test_wide_terminals_never_cut_labels_to_two_letters():
    for width in (120, 170):
        text = view(FORTY, "--head", "adjective", "--neighbors", "0", width=width)
        grid_rows = [line for line in text.splitlines() if line.startswith(("the ", "old "))]
        assert not any("…" in line for line in grid_rows)
        assert "token indices" in text


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


def test_analogy_header_lines_fit_80_columns():
    result = runner.invoke(app, ["analogy", "cats", "cat", "dog"], env={"COLUMNS": "80"})
    lines = result.stdout.splitlines()
    assert lines[1] == "cat is to cats as dog is to ?" and lines[2].startswith("3CosAdd: +cats +dog -cat")
