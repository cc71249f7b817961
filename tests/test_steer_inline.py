"""The inline --steer "POS|NEG"[:SCALE], --steer-layer L and --steer-layers A:B on predict, generate, inspect and compare:
the pair's direction is `attn direction POS NEG`'s, added as Add edits of resid_post at the layers asked for (llama.cpp's
layer range, both ends included, never layer 0), the same as its control-vector file; bad values are one line, exit 2."""

from functools import cache

import numpy as np
import pytest

from tests import checkpoints
from tests.conftest import parse_json
from tests.exact import assert_copied

GEMMA = checkpoints.FIXTURES / "tiny-gemma3"  # 7 layers: room for a span
TEXT = "the cat sat on the"


@cache
def gemma():
    from attn_cli.models.loading import load

    return load(str(GEMMA))


def pair_direction(positive: str, negative: str) -> np.ndarray:  # [L, d]: as `attn direction POS NEG` finds it
    from attn_cli import api

    return api.direction(gemma(), positive, negative).directions


def own_logits(edits) -> np.ndarray:  # [V]: the last position's logits of a pass with these edits
    from attn_cli import api

    return api.run_with_edits(gemma(), TEXT, edits)[0][-1].astype(np.float64)


def adds(direction: np.ndarray, scale: float, layers) -> list:
    from attn_cli.models.points import Add

    return [Add("resid_post", l, np.float32(scale) * direction[l].astype(np.float32)) for l in layers]


def predicted(run, *options) -> dict:
    got = parse_json(run("predict", TEXT, "--model", GEMMA, "--top", "3", "--json", *options))
    return got


@pytest.mark.parametrize("options, layers", [
    ([], range(1, 7)),
    (["--steer-layer", "3"], [3]),
    (["--steer-layers", "2:4"], [2, 3, 4]),
    (["--steer-layers", "5:"], [5, 6]),
    (["--steer-layers", ":2"], [1, 2]),
])
def test_an_inline_pair_is_attn_directions_direction_added_at_the_layers_asked_for(run, options, layers):
    direction = pair_direction("the cats", "the cat")
    got = predicted(run, "--steer", "the cats|the cat:2.5", *options)
    assert got["steered"] == [{"pair": ["the cats", "the cat"], "scale": 2.5, "layers": list(layers)}]
    logits = own_logits(adds(direction, 2.5, layers))
    for p in got["predictions"]:
        assert p["logit"] == pytest.approx(logits[p["id"]], rel=1e-4, abs=1e-4)
    assert [p["id"] for p in got["predictions"]] == [int(j) for j in np.argsort(-logits, kind="stable")[:3]]


def test_an_inline_pair_steers_as_its_control_vector_file_does_and_the_span_reaches_files_too(run, tmp_path):
    vector = tmp_path / "plural.gguf"
    assert run("direction", "the cats", "the cat", "--model", GEMMA, "-o", vector).exit_code == 0
    for options in ([], ["--steer-layers", "2:4"]):
        inline = predicted(run, "--steer", "the cats|the cat:3", *options)
        from_file = predicted(run, "--steer", f"{vector}:3", *options)
        assert from_file["steered"][0]["layers"] == inline["steered"][0]["layers"]
        assert [(p["id"], pytest.approx(p["logit"], rel=1e-5)) for p in inline["predictions"]] == \
               [(p["id"], p["logit"]) for p in from_file["predictions"]]
    steps = [parse_json(run("generate", TEXT, "--model", GEMMA, "-n", "4", "--json", "--steer", s, "--steer-layer", "3"))
             for s in ("the cats|the cat:3", f"{vector}:3")]
    assert steps[0]["text"] == steps[1]["text"] and steps[0]["steered"][0]["layers"] == [3]


def test_a_text_with_a_colon_keeps_it_when_no_scale_follows(run):
    got = predicted(run, "--steer", "note: cats|note: cat")
    assert got["steered"][0]["pair"] == ["note: cats", "note: cat"]
    assert_copied(got["steered"][0]["scale"], 1)  # the default scale, parsed from no text


def test_compare_and_inspect_take_the_inline_pair_and_the_span(run):
    got = parse_json(run("compare", TEXT, "--model", GEMMA, "--steer", "the cats|the cat:2", "--steer-layers", "3:4", "--json"))
    assert got["steered"] == [{"pair": ["the cats", "the cat"], "scale": 2.0, "layers": [3, 4]}]
    np.testing.assert_allclose([l["cosine_last"] for l in got["layers"][:3]], 1, atol=1e-5)  # before layer 3 nothing is added
    assert got["layers"][3]["cosine_last"] < 1
    done = run("inspect", TEXT, "--model", GEMMA, "--steer", "the cats|the cat:2", "--steer-layer", "5", "--layer", "1")
    assert done.exit_code == 0 and "steered: 'the cats' − 'the cat' × 2 (resid_post 5..5)" in done.stdout


COMMANDS = {
    "predict": ["predict", TEXT, "--model", GEMMA],
    "generate": ["generate", TEXT, "--model", GEMMA, "-n", "2"],
    "inspect": ["inspect", TEXT, "--model", GEMMA],
    "compare": ["compare", TEXT, "--model", GEMMA],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("options, says", [
    (["--steer", "the cats|the cat:nan"], "the scale must be a finite number, not nan"),
    (["--steer", "the cats|the cat:inf"], "the scale must be a finite number, not inf"),
    (["--steer", "the cats|the cats"], "the same text twice: no direction to add (zero norm)"),
    (["--steer", "a|b|c"], "give two texts, POS|NEG (one |)"),
    (["--steer", "|the cat"], "give two texts, POS|NEG (one |)"),
    (["--steer", "a|b", "--steer-layer", "0"], "--steer-layer 0: tiny-gemma3 is steered at layers 1 to 6 (never layer 0"),
    (["--steer", "a|b", "--steer-layer", "7"], "--steer-layer 7: tiny-gemma3 is steered at layers 1 to 6"),
    (["--steer", "a|b", "--steer-layers", "4:2"], "--steer-layers 4:2: tiny-gemma3 is steered at layers 1 to 6"),
    (["--steer", "a|b", "--steer-layers", "3"], "--steer-layers '3': give A:B"),
    (["--steer", "a|b", "--steer-layers", "x:2"], "--steer-layers 'x:2': give A:B"),
    (["--steer", "a|b", "--steer-layer", "2", "--steer-layers", "1:3"], "give --steer-layer L or --steer-layers A:B, not both"),
    (["--steer-layer", "2"], "--steer-layer says where --steer adds its directions; give --steer too"),
    (["--steer-layers", "1:2"], "--steer-layers says where --steer adds its directions; give --steer too"),
])
def test_bad_steering_is_one_line_and_exit_2(run, command, options, says):
    done = run(*COMMANDS[command], *options)
    assert done.exit_code == 2 and done.stdout == "", done.stdout
    assert done.stderr.startswith("attn: ") and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
