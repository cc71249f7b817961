"""What a terminal of 80 x 24 ends on: the view asked for comes last, the model view first, and notes wrap cleanly."""

import io
import os
import re
import subprocess
import sys

import pytest
from rich.console import Console

from attn_cli.views.base import Footnote
from tests import checkpoints

# 24 words, fixed: SmolLM2 cuts them into 26 pieces (gulls and circled in two each), GloVe keeps 22 in its vocabulary
HARBOR = "The old harbor town woke slowly as fishing boats returned with their nets full and gulls circled above the quiet grey water near dawn"
THUMBNAIL = re.compile(r"^L\d+ ")  # a layer's first line of thumbnails in the model view


def attn(*args: str, lines: int = 24) -> subprocess.CompletedProcess:
    env = os.environ | {"COLUMNS": "80", "LINES": str(lines), "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("ATTN_VECTORS", None)
    done = subprocess.run([sys.executable, "-m", "attn_cli", *args], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def screen(stdout: str, lines: int = 24) -> list[str]:
    """What a terminal of `lines` rows shows when the command ends (the last row is the shell's prompt)."""
    return [l.rstrip() for l in stdout.rstrip("\n").split("\n")[-(lines - 1):]]


@pytest.mark.slow
def test_the_model_view_comes_first_and_the_screen_ends_on_numbers_and_the_next_step():
    out = attn("inspect", "--model", str(checkpoints.smollm2_gguf()), HARBOR).stdout.split("\n")
    view, layers = out.index(next(l for l in out if l.startswith("model view:"))), out.index(next(l for l in out if l.startswith("the residual stream")))
    assert view < layers and sum(bool(THUMBNAIL.match(l)) for l in out) == 30  # every layer's thumbnails, above the table
    shown = screen("\n".join(out))
    assert not any(THUMBNAIL.match(l) for l in shown) and not any(set(l.strip()) <= set("▀ ░▒▓█·") and l.strip() for l in shown)
    assert shown[-1].startswith("see a head of the model view above in full: --head LAYER.HEAD")
    assert any(l.strip().startswith("29 ") for l in shown)  # the table's last layer is on screen


@pytest.mark.slow
def test_the_focus_table_asked_for_ends_the_screen_below_the_model_view():
    out = attn("inspect", "--model", str(checkpoints.smollm2_gguf()), HARBOR, "--focus", "harbor").stdout.split("\n")
    titles = [i for i, l in enumerate(out) if l.startswith(("model view:", "the residual stream", "how 'harbor'"))]
    assert len(titles) == 3 and titles == sorted(titles) and out[titles[2]].startswith("how 'harbor'")  # in this order
    last = [l for l in out if THUMBNAIL.match(l)][-1]
    assert out.index(last) < titles[1]  # no thumbnail after the tables
    shown = screen("\n".join(out))
    caption = shown.index("nearest by cosine to the input embeddings of the whole vocabulary")
    assert shown[caption + 1].startswith("odd tokens in the middle layers") and shown[-1].endswith("all the same")  # its notes end it


def test_a_checkpoints_views_are_the_model_view_then_the_tables_then_what_was_asked_for():
    from attn_cli.views.inspect import VIEWS

    names = [v.name for v in VIEWS]
    asked = ("residual", "senses", "meter", "heatmap", "rollout", "picture")  # each only when an option asks for it
    assert names.index("overview") < names.index("layers") < names.index("next") < min(names.index(n) for n in asked)


@pytest.mark.parametrize("width", range(40, 131))
def test_a_footnote_never_leaves_a_formulas_last_word_alone(width):
    from attn_cli.models.families import gpt2, llama

    for caption in (llama.CAPTION, gpt2.CAPTION, llama.CAPTION.replace("Llama", "Qwen2")):
        out = io.StringIO()
        Console(file=out, width=width, height=24, color_system=None).print(Footnote(caption))
        lines = out.getvalue().rstrip("\n").split("\n")
        assert " ".join(" ".join(lines).split()) == " ".join(caption.split())  # every word, in order
        assert all(len(l) <= width for l in lines) and all(l == l.lstrip() for l in lines)  # left-aligned, not centred
        assert all(l.split()[-1] not in ("Δ", "+", "=") for l in lines) and all(l.strip() != "MLP" for l in lines)
        assert all(not l.startswith("MLP") for l in lines)  # "Δ MLP" stays together


def test_the_layer_tables_footnote_wraps_under_it_at_80_columns(run):
    out = run("inspect", "the cat sat on the mat", "--model", checkpoints.FIXTURES / "tiny-llama", env={"COLUMNS": "80"}).stdout.split("\n")
    at = next(i for i, l in enumerate(out) if l.startswith("Llama normalises"))
    assert out[at + 1] == "stream exactly, x_l = x_{l-1} + Δ attention + Δ MLP"


def test_two_heads_in_full_at_80x24_are_side_by_side_so_both_are_on_screen():
    shown = screen(attn("inspect", HARBOR).stdout)
    assert any("head adjective" in l and "head context" in l for l in shown[-3:])  # both heads' titles on one line, under their grids
    assert sum(l.count("9 returned") for l in shown) == 2  # each head's row of 'returned', on the screen at once


def test_heads_stay_one_after_another_where_the_screen_holds_them_or_in_a_file():
    tall = attn("inspect", HARBOR, lines=200).stdout
    assert not any("head adjective" in l and "head context" in l for l in tall.split("\n"))
    short = attn("inspect", "the big red dog").stdout  # 4 tokens: both heads fit one after another
    assert not any("head adjective" in l and "head context" in l for l in short.split("\n"))


def test_side_by_side_in_a_rich_console_of_80x24(monkeypatch):
    from attn_cli.analysis.inspect import InspectSettings, inspect
    from attn_cli.cli.options import load_vectors
    from attn_cli.heads.registry import resolve_heads
    from attn_cli.models.glove import GloveModel, Settings
    from attn_cli.views.inspect import ViewOptions, inspect_view

    monkeypatch.setenv("LINES", "24")
    vectors = load_vectors(None, None, False)
    heads, _ = resolve_heads(None, vectors.vector_size, 0)
    model = GloveModel(vectors, heads, Settings())
    parts = inspect_view(inspect(model, HARBOR, InspectSettings()), ViewOptions())
    out = io.StringIO()
    console = Console(file=out, width=80, height=24, color_system=None)
    for part in parts:
        console.print(part)
    lines = out.getvalue().rstrip("\n").split("\n")
    grid = [l for l in lines if "9 returned" in l]
    assert len(grid) == 1 and grid[0].count("9 returned") == 2 and all(len(l) <= 80 for l in lines)


def test_a_focus_tokens_title_and_its_nearest_tokens_read_as_text_not_byte_level_pieces(run):
    out = run("inspect", "the grey cat sat", "--model", checkpoints.FIXTURES / "tiny-llama", "--focus", "cat", "--neighbors", "3",
              env={"COLUMNS": "100"}).stdout
    title = next(l for l in out.split("\n") if l.startswith("how "))
    assert title.startswith("how 'cat' (piece #4) moves through the layers")  # the piece is "Ġcat"
    table = out[out.index(title):]
    assert "Ġ" not in table and "Ċ" not in table
    doc = run("inspect", "the grey cat sat", "--model", checkpoints.FIXTURES / "tiny-llama", "--focus", "cat", "--json").stdout
    assert '"token": "Ġcat"' in doc  # JSON keeps the piece as the tokenizer wrote it


def test_side_by_side_never_pools_a_grid_to_fit_more_heads_a_row(monkeypatch):
    import numpy as np
    from rich.text import Text

    from attn_cli.views.heatmap import Heatmap
    from attn_cli.views.heatmaps import ScreenFit

    monkeypatch.setenv("LINES", "24")
    n = 26
    weights = np.tril(np.ones((n, n)))
    weights /= weights.sum(axis=1, keepdims=True)  # [n, n]: each row spread evenly over the keys it may see
    tokens = [f"word{i}" for i in range(n)]
    fit = ScreenFit([Text(f"head {h}") for h in range(4)], [Heatmap(weights, tokens, tokens) for _ in range(4)])
    out = io.StringIO()
    Console(file=out, width=80, height=24, color_system=None).print(fit)
    lines = out.getvalue().split("\n")
    assert max(l.count("9 word9") for l in lines) == 2  # two heads a row, each grid whole: four would pool 26 tokens into blocks
    assert not any("block" in l for l in lines) and sum(l.count("↑ head") for l in lines) == 4


# At 80 and 120 columns: notes wrap at the terminal's width (never a word alone on a line), a lens or --focus row is
# one line (a token never cut from its number), and no header is cut.
CAPITALS = ("The capital of France is Paris, and the capital of Italy is", "The capital of France is Paris, and the capital of Spain is")
LLAMA = checkpoints.FIXTURES / "tiny-llama"


def at(width: int, *args: str) -> list[str]:
    env = os.environ | {"COLUMNS": str(width), "LINES": "200", "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("ATTN_VECTORS", None)
    done = subprocess.run([sys.executable, "-m", "attn_cli", *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [l.rstrip() for l in done.stdout.split("\n")]
    assert all(len(l) <= width for l in lines)
    assert not [l for l in lines if len(l.split()) == 1 and not l.lstrip().startswith("─")], "a word alone on a line"
    return lines


def table(lines: list[str], title: str) -> tuple[list[str], list[str]]:
    """The header lines and the row lines of the table under the line that starts with `title`."""
    start = next(i for i, l in enumerate(lines) if l.startswith(title))
    rule = next(i for i in range(start, len(lines)) if lines[i].strip() and set(lines[i].strip()) == {"─"})
    end = next(i for i in range(rule + 1, len(lines)) if not lines[i].strip())
    return [l for l in lines[start + 1 : rule] if l.strip()], lines[rule + 1 : end]


def one_line_a_layer(rows: list[str], layers: int):
    assert [r.split()[0] for r in rows] == ["E", *map(str, range(layers))]  # each row starts with its layer: none spills over


def lens_on_one_line_a_layer(model, width: int, layers: int):
    lines = at(width, "predict", CAPITALS[0], "--model", model, "--lens")
    header, rows = table(lines, "logit lens")
    assert header == [header[0]] and "…" not in header[0] and header[0].split()[:3] == ["layer", "top", "tokens"]
    one_line_a_layer(rows, layers)
    for row in rows:  # "TestSuite 0.45, rmsg 0.16, …": each token with its probability, the ones left out as "…"
        items = re.split(r"\s{3,}", row.strip())[1].split(", ")
        assert all(re.fullmatch(r".+ \d\.\d\d", item) for item in items[:-1] if item != "…") and items[0] != "…"
        assert items[-1] == "…" or re.fullmatch(r".+ \d\.\d\d", items[-1]), row
    assert any(l.startswith("odd tokens in the middle layers") for l in lines)
    return rows


def focus_on_one_line_a_layer(model, width: int, layers: int, text="The old harbor town woke slowly", word="harbor"):
    lines = at(width, "inspect", text, "--model", model, "--focus", word, "--neighbors", "3")
    header, rows = table(lines, "how ")
    assert header == [header[0]] and "…" not in header[0] and header[0].split()[-1] == "nearest"
    one_line_a_layer(rows, layers)
    assert any(l.startswith("odd tokens in the middle layers") for l in lines)


def patch_header_whole(model, width: int, clean: str, corrupt: str, *metric: str):
    lines = at(width, "patch", clean, corrupt, "--model", model, *metric)
    header = next(l for l in lines if l.startswith("layer↓ pos→"))  # one line, the corner whole
    positions = header.split()[2:]
    assert positions == list(map(str, range(len(positions))))  # each column its position, none cut, none staggered
    assert next(l for l in lines if l.startswith("layer↓ head→"))


def explain_whole(model, width: int):
    lines = at(width, "explain", CAPITALS[0], "--model", model)
    assert next(l for l in lines if l.startswith("layer↓ head→")).split()[-1] == "MLP"
    assert any(l.startswith("each part's share goes through the final norm") for l in lines)


def ablated_note_whole(model, width: int):
    lines = at(width, "predict", CAPITALS[0], "--model", model, "--ablate", "0.0", "--top", "3")
    assert "own: the model's own probability of that token, with every head on" in lines  # at the terminal's width, not the table's


@pytest.mark.parametrize("width", [80, 120])
def test_a_tiny_models_lens_focus_patch_and_explain_at(width):
    lens_on_one_line_a_layer(LLAMA, width, 2)
    ablated_note_whole(LLAMA, width)
    focus_on_one_line_a_layer(LLAMA, width, 2)
    patch_header_whole(LLAMA, width, "the forest, the trees and the river", "the forest, the the and the river", "--target", "id:5", "--versus", "id:6")
    explain_whole(LLAMA, width)


@pytest.mark.slow
@pytest.mark.parametrize("width", [80, 120])
def test_smollm2s_lens_focus_patch_and_explain_at(width):
    lens_on_one_line_a_layer(checkpoints.smollm2_gguf(), width, 30)
    ablated_note_whole(checkpoints.smollm2_gguf(), width)
    focus_on_one_line_a_layer(checkpoints.smollm2_gguf(), width, 30)
    patch_header_whole(checkpoints.smollm2_gguf(), width, *CAPITALS, "--target", " Rome", "--versus", " Madrid")
    explain_whole(checkpoints.smollm2_gguf(), width)


@pytest.mark.slow
@pytest.mark.parametrize("width", [80, 120])
def test_gemmas_lens_keeps_each_word_with_its_number_on_one_line_at(width):
    rows = lens_on_one_line_a_layer(checkpoints.gemma3_gguf(), width, 18)
    if width == 120:
        assert all(r.count(", ") == 2 and "…" not in r for r in rows)  # room for all three tokens of every layer
