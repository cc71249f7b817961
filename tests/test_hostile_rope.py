"""RoPE settings as hostile input: Phi-3's longrope (its attention factor, its tables of factors, in config.json and in
a GGUF file) and Gemma 3's rope_parameters (transformers 5's, per layer type or one object). Each is honoured, or
refused in one `attn: ...` line naming the setting, never a traceback or a silently different model. And --ablate-with
without --ablate, which would change nothing, is refused the same way."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests import checkpoints
from tests.oracle import attn, one_line
from tests.test_hostile_gguf import write_gguf

PHI3_GGUF = checkpoints.gguf_fixture("tiny-phi3", "F32")
FLOAT32 = 6  # the GGUF value type of rope.scaling.attn_factor
BAD_NUMBERS = [0, -1.5, float("nan"), float("inf")]


def changed_folder(tmp_path: Path, name: str, change: dict, drop: tuple = ()) -> Path:
    """A copy of the tiny model `name` whose config.json has `change` merged in and `drop` left out."""
    folder = tmp_path / name
    shutil.copytree(checkpoints.FIXTURES / name, folder)
    config = {k: v for k, v in json.loads((folder / "config.json").read_text()).items() if k not in drop}
    (folder / "config.json").write_text(json.dumps(config | change))  # NaN and Infinity as Python's json writes them
    return folder


def phi3_rope(**change) -> dict:
    rope = json.loads((checkpoints.FIXTURES / "tiny-phi3" / "config.json").read_text())["rope_parameters"]
    return {k: v for k, v in (rope | change).items() if v is not None}


# --- Phi-3's longrope in config.json -------------------------------------------------------------------------


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_a_longrope_attention_factor_that_is_not_a_positive_number_is_refused_by_name(tmp_path, value):
    folder = changed_folder(tmp_path, "tiny-phi3", {"rope_parameters": phi3_rope(attention_factor=value)})
    one_line(attn("model", "info", str(folder)), 1, "attention_factor must be a number")


def test_a_transformers_4_rope_scaling_is_checked_as_rope_parameters_are(tmp_path):
    scaling = phi3_rope(attention_factor=float("nan"))
    folder = changed_folder(tmp_path, "tiny-phi3", {"rope_scaling": {"type": "su", **scaling}, "rope_theta": 10000.0}, drop=("rope_parameters",))
    one_line(attn("model", "info", str(folder)), 1, "attention_factor must be a number")


@pytest.mark.parametrize("value", [-2.0, float("nan")])
def test_a_longrope_factor_that_is_not_a_positive_number_is_refused_by_name(tmp_path, value):
    folder = changed_folder(tmp_path, "tiny-phi3", {"rope_parameters": phi3_rope(factor=value)})
    one_line(attn("model", "info", str(folder)), 1, "factor must be a number")


@pytest.mark.parametrize("key", ["short_factor", "long_factor"])
def test_longrope_without_a_table_of_factors_is_refused(tmp_path, key):
    folder = changed_folder(tmp_path, "tiny-phi3", {"rope_parameters": phi3_rope(**{key: None})})
    one_line(attn("model", "info", str(folder)), 1, f"rope scaling is longrope but has no {key}")


@pytest.mark.parametrize("bad", [float("inf"), 0, True, "1.0"])
def test_a_factor_that_is_not_a_positive_number_is_refused(tmp_path, bad):
    folder = changed_folder(tmp_path, "tiny-phi3", {"rope_parameters": phi3_rope(short_factor=[1.0] * 7 + [bad])})
    one_line(attn("model", "info", str(folder)), 1, "short_factor should be 8 positive numbers")


def test_longrope_in_another_family_is_checked_too(tmp_path):
    """Any family reads rope_scaling: a Llama with longrope but no original context is one line, not a KeyError later."""
    scaling = {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4}
    folder = changed_folder(tmp_path, "tiny-llama", {"rope_scaling": scaling}, drop=("original_max_position_embeddings",))
    one_line(attn("predict", "the cat", "--model", str(folder)), 1, "no original_max_position_embeddings")


# --- Phi-3's longrope in a GGUF file ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_a_gguf_attn_factor_that_is_not_a_positive_number_is_refused_by_name(tmp_path, value):
    path = write_gguf(tmp_path / "phi3.gguf", {"phi3.rope.scaling.attn_factor": (value, FLOAT32)}, base=PHI3_GGUF)
    one_line(attn("model", "info", str(path)), 1, "phi3.rope.scaling.attn_factor", "it must be a positive number")


@pytest.mark.parametrize("missing", ["rope_factors_short.weight", "rope_factors_long.weight"])
def test_a_gguf_file_with_one_table_of_longrope_factors_is_refused(tmp_path, missing):
    path = write_gguf(tmp_path / "phi3.gguf", base=PHI3_GGUF, without=(missing,))
    one_line(attn("model", "info", str(path)), 1, f"without {missing}", "longrope needs both")


def test_a_rewritten_phi3_gguf_file_still_runs_with_longrope(tmp_path):
    """The copies above differ from the fixture by one change only: the copy itself loads as longrope."""
    from attn_cli.models.loading import load

    scaling = load(str(write_gguf(tmp_path / "phi3.gguf", base=PHI3_GGUF))).spec.rope_scaling
    assert scaling["rope_type"] == "longrope" and scaling["original_max_position_embeddings"] == 64
    assert abs(scaling["attention_factor"] - 1.0801234) < 1e-6


# --- Gemma 3's rope_parameters ------------------------------------------------------------------------------------

LINEAR = {"rope_type": "linear", "factor": 8.0, "rope_theta": 1_000_000.0}


@pytest.mark.parametrize("change", [
    {"rope_parameters": LINEAR, "rope_local_base_freq": 10_000.0},  # one object: the global layers' (as Gemma 2's)
    {"rope_parameters": {"full_attention": LINEAR, "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0}}},
    {"rope_scaling": {"rope_type": "linear", "factor": 8.0}, "rope_theta": 1_000_000.0, "rope_local_base_freq": 10_000.0},  # transformers 4
], ids=["one-object", "per-layer-type", "transformers-4"])
def test_gemma3_rope_parameters_are_honoured_in_every_form(tmp_path, change):
    """Linear scaling by 8 on the global layers, written three ways: one model, and not the unscaled one."""
    from attn_cli.models.loading import load

    drop = ("rope_parameters",) if "rope_parameters" not in change else ()
    m = load(str(changed_folder(tmp_path, "tiny-gemma3", change, drop=drop)))
    assert m.spec.rope_scaling["rope_type"] == "linear" and abs(m.spec.rope_scaling["factor"] - 8.0) < 1e-12
    assert abs(m.spec.rope_theta - 1e6) < 1e-6 and abs(m.spec.rope_base(0) - 1e4) < 1e-6
    text = "The cat sat on the warm stone wall by the old mill"
    scaled = m.readout(m.run(text).streams()[-1])
    plain = load(str(checkpoints.FIXTURES / "tiny-gemma3"))
    reference = linear_reference(plain, text, 8.0)
    np.testing.assert_allclose(scaled, reference, rtol=1e-4, atol=1e-4 * float(np.abs(reference).max()))
    assert float(np.abs(scaled - plain.readout(plain.run(text).streams()[-1])).max()) > 1e-3


def linear_reference(plain, text: str, factor: float) -> np.ndarray:
    """The unscaled tiny Gemma 3 run with its global layers' tables made from positions / factor (what linear scaling is)."""
    from attn_cli.core.blocks import rotary_frequencies, rotary_tables

    spec, original = plain.spec, plain.rotary
    n = len(plain.tokenize(text).ids)

    def rotary(n_rows, offset=0, l=0, long=None):
        if spec.rope_base(l) != spec.rope_theta:
            return original(n_rows, offset, l, long)
        cos, sin = rotary_tables(offset + n_rows, rotary_frequencies(spec.d_head, spec.rope_theta) / np.float32(factor))
        return cos[offset:], sin[offset:]

    plain.rotary = rotary
    try:
        assert n > 1
        return plain.readout(plain.run(text).streams()[-1])
    finally:
        del plain.rotary


@pytest.mark.parametrize("change, expected", [
    ({"full_attention": {"rope_type": "dynamic", "factor": 2.0}, "sliding_attention": {}}, "full_attention: rope scaling 'dynamic' is not supported"),
    ({"rope_type": "yarn", "factor": 4.0}, "rope scaling 'yarn' is not supported"),
    ({"full_attention": {"rope_type": "linear", "factor": -2}}, "factor must be a number"),
    ({"full_attention": {"rope_type": "linear"}}, "factor must be a number"),
    ({"rope_type": "linear", "factor": float("nan")}, "factor must be a number"),
    ({"full_attention": {"rope_theta": "big"}}, "rope_theta must be a number"),
    ({"full_attention": {}, "sliding_attention": {"rope_type": "linear", "factor": 2.0}}, 'sliding_attention: rope_type "linear" is not supported'),
    ({"full_attention": {}, "sliding_attention": {"rope_theta": -5}}, "sliding_attention: rope_theta must be a number"),
    ({"full_attention": {}, "rope_type": "linear"}, "rope_parameters has rope_type beside full_attention"),
    ({"sliding_attention": []}, "should be objects"),
    ([1], "rope_parameters should be an object"),
])
def test_gemma3_rope_parameters_it_cannot_run_are_one_line(tmp_path, change, expected):
    folder = changed_folder(tmp_path, "tiny-gemma3", {"rope_parameters": change})
    one_line(attn("model", "info", str(folder)), 1, expected)


# --- --ablate-with without --ablate ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["predict", "explain", "inspect"])
@pytest.mark.parametrize("value", ["mean", "zero"])
def test_ablate_with_without_ablate_is_one_line_and_exit_2(command, value):
    model = str(checkpoints.tiny_llama_folder())
    one_line(attn(command, "the cat", "--model", model, "--ablate-with", value), 2, f"--ablate-with {value}", "give --ablate L.H too")


def test_ablate_with_beside_ablate_runs():
    out = attn("predict", "the cat", "--model", str(checkpoints.tiny_llama_folder()), "--ablate", "0.1", "--ablate-with", "mean", "--json")
    assert out.code == 0, out
    assert out.stderr == "", out
