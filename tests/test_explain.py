"""`attn explain`: direct logit attribution against transformers with forward hooks (tests/fixtures/models/why-*.npz,
made by make_why_fixtures.py as TransformerLens computes it), the sum check, and the command's lines and formats."""

import json
import subprocess
import sys
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from tests import checkpoints

RELATIVE = 1e-4  # of the logit's size: float32 through 30 layers against float32 torch, decomposed in float64 on both sides


@cache
def oracle(name: str):
    return dict(np.load(checkpoints.FIXTURES / f"why-{name}.npz", allow_pickle=False))


@cache
def model(name: str):
    from attn_cli.models.loading import load

    path = {"smollm2": checkpoints.smollm2_gguf, "tiny-llama": checkpoints.tiny_llama_folder,
            "tiny-qwen2": checkpoints.tiny_qwen2_folder, "gemma3": checkpoints.gemma3_gguf}[name]()
    return load(str(path))


def explained(name: str, versus: bool = True):
    from attn_cli.analysis.explain import ExplainSettings, explain

    o = oracle(name)
    settings = ExplainSettings(target=f"id:{int(o['target'])}", versus=f"id:{int(o['versus'])}" if versus else None)
    return explain(model(name), str(o["clean_text"]), settings)


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-qwen2", pytest.param("smollm2", marks=pytest.mark.floats)])
@pytest.mark.parametrize("versus", [True, False])
def test_every_part_matches_torch_hooks(name, versus):
    o, result = oracle(name), explained(name, versus)
    pick = (lambda a: a[..., 0] - a[..., 1]) if versus else (lambda a: a[..., 0])
    logit = float(pick(o["dla_logit"]))
    tol = RELATIVE * max(1.0, abs(logit))
    assert [int(i) for i in o["clean_ids"]] == model(name).tokenize(str(o["clean_text"])).ids
    assert abs(result.logit - logit) <= tol
    np.testing.assert_allclose(result.heads(), pick(o["dla_heads"]), rtol=0, atol=tol)
    np.testing.assert_allclose(result.mlps(), pick(o["dla_mlps"]), rtol=0, atol=tol)
    embed = next(p.logit for p in result.components if p.kind == "embed")
    assert abs(embed - float(pick(o["dla_embed"]))) <= tol
    assert abs(result.total - result.logit) <= tol  # the sum check the view prints


def test_the_parts_are_every_head_and_mlp_once():
    result = explained("tiny-qwen2")
    m = model("tiny-qwen2")
    kinds = [p.kind for p in result.components]
    assert kinds.count("embed") == 1 and kinds.count("mlp") == m.n_layers and kinds.count("head") == m.n_layers * m.n_heads
    assert kinds.count("bias") == 0  # Qwen2's biases are on q, k, v (inside each head's output), none after W_O


@settings(max_examples=15, deadline=None)
@given(st.text(alphabet="abcdefghij klmnop.,", min_size=1, max_size=40).filter(str.strip))
def test_the_parts_always_sum_to_the_logit(text):
    from attn_cli.analysis.explain import ExplainSettings, explain

    result = explain(model("tiny-llama"), text, ExplainSettings())
    assert result.target["id"] == int(np.argmax(model("tiny-llama").readout(model("tiny-llama").forward(model("tiny-llama").tokenize(text)).streams()[-1][-1:])[0]))
    assert abs(result.total - result.logit) <= RELATIVE * max(1.0, abs(result.logit))


def run(*args, input=None):
    from attn_cli.cli import app

    return CliRunner().invoke(app, ["explain", *args], input=input)


def test_json_has_the_documented_fields():
    o = oracle("tiny-llama")
    r = run(str(o["clean_text"]), "--model", str(checkpoints.tiny_llama_folder()), "--target", f"id:{int(o['target'])}",
            "--versus", f"id:{int(o['versus'])}", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["target"]["id"] == int(o["target"]) and doc["versus"]["id"] == int(o["versus"])
    assert isinstance(doc["target"]["token"], str) and isinstance(doc["logit"], float)
    kinds = {c["kind"] for c in doc["components"]}
    assert kinds == {"embed", "head", "mlp"}
    for c in doc["components"]:
        assert set(c) == {"kind", "layer", "head", "logit"}
        assert (c["head"] is None) == (c["kind"] != "head") and (c["layer"] is None) == (c["kind"] == "embed")
    assert abs(sum(c["logit"] for c in doc["components"]) - doc["logit"]) <= 1e-4 * max(1, abs(doc["logit"]))


def test_no_versus_is_null_and_the_default_target_is_the_top_prediction():
    r = run("The cat sat on the warm stone wall.", "--model", str(checkpoints.tiny_llama_folder()), "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["versus"] is None
    m = model("tiny-llama")
    logits = m.readout(m.forward(m.tokenize("The cat sat on the warm stone wall.")).streams()[-1][-1:])[0]
    assert doc["target"]["id"] == int(np.argmax(logits))


def test_a_target_of_several_tokens_is_one_line_listing_them():
    r = run("The cat sat", "--model", str(checkpoints.tiny_llama_folder()), "--target", " stonewall")
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "tokens" in r.stderr and "'Ġston'" in r.stderr, r.stderr


def test_a_masked_lm_says_why_it_cannot_be_split():
    r = run("the cat [MASK] on the mat", "--model", str(checkpoints.FIXTURES / "tiny-bert-mlm"))
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "not linear" in r.stderr, r.stderr


def test_the_terminal_view_reads_in_80_columns_through_a_real_process():
    o = oracle("tiny-qwen2")
    p = subprocess.run([sys.executable, "-m", "attn_cli", "explain", str(o["clean_text"]), "--model", str(checkpoints.tiny_qwen2_folder()),
                        "--target", f"id:{int(o['target'])}", "--versus", f"id:{int(o['versus'])}"],
                       capture_output=True, text=True, env={"COLUMNS": "80", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(checkpoints.FIXTURES.parents[2])})
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    lines = p.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any(line.startswith("the parts sum to") for line in lines)
    assert "largest parts" in p.stdout and "MLP" in p.stdout


@pytest.mark.slow
@pytest.mark.floats
@pytest.mark.parametrize("text, target, versus", [("The capital of France is", None, None),
                                                  ("When Mary and John went to the store, John gave a drink to", " Mary", " John")])
def test_the_parts_sum_to_the_logit_on_the_real_gemma3(text, target, versus):
    """Gemma 3 270M: its sandwich norms frozen at the position, its 1 + w norms and sqrt(d) embeddings folded in at load.
    (Before both were, the parts summed to 9.6070 against 19.0915, and to -0.66 against a difference of 5.22.)"""
    from attn_cli.analysis.explain import ExplainSettings, explain

    result = explain(model("gemma3"), text, ExplainSettings(target=target, versus=versus))
    assert abs(result.total - result.logit) <= RELATIVE * max(1.0, abs(result.logit)), (result.total, result.logit)
    assert result.sandwich and result.cap is None
