"""Ablation (`--ablate`) and activation patching (`attn patch`) against transformers with forward hooks
(tests/fixtures/models/why-*.npz, made by make_why_fixtures.py), their invariants, and the commands."""

import json
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from tests import checkpoints

RELATIVE = 1e-4  # of the logits' size: float32 on both sides, summed in another order
FOLDERS = {"smollm2": checkpoints.smollm2_gguf, "tiny-llama": checkpoints.tiny_llama_folder, "tiny-qwen2": checkpoints.tiny_qwen2_folder}
MODELS = ["tiny-llama", "tiny-qwen2", pytest.param("smollm2", marks=pytest.mark.floats)]


@cache
def oracle(name: str):
    return dict(np.load(checkpoints.FIXTURES / f"why-{name}.npz", allow_pickle=False))


@cache
def model(name: str):
    from attn_cli.models.loading import load

    return load(str(FOLDERS[name]()))


def last_logits(m, ids, edits=()):  # -> [V] float64, the last position's
    from attn_cli.models.points import Keep

    trace = m.forward(ids, keep=Keep(points=("resid_post",), layers=[m.n_layers - 1], rows=[-1]), edits=list(edits))
    return m.readout(trace.get("resid_post", m.n_layers - 1))[0].astype(np.float64)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("mode", ["zero", pytest.param("mean", marks=pytest.mark.slow)])  # mean: in `pytest -m slow`
def test_ablated_logits_match_torch_hooks(name, mode):
    from attn_cli.analysis.ablate import Ablation, ablation_edits

    o, m = oracle(name), model(name)
    ids = [int(i) for i in o["clean_ids"]]
    top = o["ablate_top_ids"]
    for k, (l, h) in enumerate(o["ablate_heads"].tolist()):
        logits = last_logits(m, ids, ablation_edits(m, ids, Ablation([(l, h)], mode)))
        want = o[f"ablate_{mode}_top_logits"][k]
        tol = RELATIVE * max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(logits[top], want, rtol=0, atol=tol)
        lse = np.log(np.exp(logits - logits.max()).sum()) + logits.max()
        assert abs(lse - float(o[f"ablate_{mode}_logsumexp"][k])) <= tol
        assert not np.allclose(logits[top], o["clean_logits_last"][top], atol=tol)  # the ablation did change the run


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-qwen2", pytest.param("smollm2", marks=[pytest.mark.slow, pytest.mark.floats])])
def test_both_patching_maps_match_one_torch_forward_per_patch(name):
    from attn_cli.analysis.patch import PatchSettings, patch

    o, m = oracle(name), model(name)
    result = patch(m, str(o["clean_text"]), str(o["corrupt_text"]), PatchSettings(f"id:{int(o['target'])}", f"id:{int(o['versus'])}"))
    tol = RELATIVE * max(1.0, abs(float(o["clean_logit_diff"])), abs(float(o["corrupt_logit_diff"])))
    assert abs(result.clean_logit_diff - float(o["clean_logit_diff"])) <= tol
    assert abs(result.corrupt_logit_diff - float(o["corrupt_logit_diff"])) <= tol
    np.testing.assert_allclose(result.resid_pre, o["patch_resid_pre"], rtol=0, atol=tol)
    np.testing.assert_allclose(result.heads, o["patch_heads"], rtol=0, atol=tol)


def tiny_ids(text: str) -> list[int]:
    return model("tiny-llama").tokenize(text).ids


TEXTS = st.text(alphabet="abcdefgh ijklmnop", min_size=3, max_size=30).filter(lambda t: len(t.split()) >= 2)


@settings(max_examples=10, deadline=None)
@given(TEXTS, st.integers(0, 1), st.integers(0, 3))
def test_ablating_a_head_whose_output_is_already_zero_changes_nothing(text, layer, head):
    from attn_cli.models.loading import load
    from attn_cli.models.points import Zero

    m = load(str(checkpoints.tiny_llama_folder()))  # a copy of its own: its W_O is changed below
    d_head = m.spec.d_head
    w_o = m.weights.tensor(f"layers.{layer}.attn.o.w")
    w_o[head * d_head : (head + 1) * d_head] = 0  # the head writes nothing into the stream, whatever its z
    ids = m.tokenize(text).ids
    plain, ablated = last_logits(m, ids), last_logits(m, ids, [Zero("attn.z", layer, head=head)])
    np.testing.assert_allclose(ablated, plain, rtol=0, atol=1e-5 * max(1.0, np.abs(plain).max()))


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 1), st.integers(1, 10))
def test_patching_a_position_changes_no_logit_before_it(layer, p):
    from attn_cli.models.points import Keep, Patch

    m = model("tiny-llama")
    o = oracle("tiny-llama")
    clean, corrupt = [int(i) for i in o["clean_ids"]], [int(i) for i in o["corrupt_ids"]]
    keep = Keep(points=("resid_pre", "resid_post"))
    good = m.forward(clean, keep=keep)
    plain = m.readout(m.forward(corrupt, keep=keep).get("resid_post", 1))
    patched = m.forward(corrupt, keep=keep, edits=[Patch("resid_pre", layer, positions=[p], value=good.get("resid_pre", layer))])
    after = m.readout(patched.get("resid_post", 1))
    np.testing.assert_allclose(after[:p], plain[:p], rtol=0, atol=1e-5 * np.abs(plain).max())


def test_patching_every_position_of_layer_0_gives_back_the_clean_run():
    from attn_cli.models.points import Keep, Patch

    m, o = model("tiny-qwen2"), oracle("tiny-qwen2")
    clean, corrupt = [int(i) for i in o["clean_ids"]], [int(i) for i in o["corrupt_ids"]]
    keep = Keep(points=("resid_pre", "resid_post"))
    good = m.forward(clean, keep=keep)
    back = m.forward(corrupt, keep=keep, edits=[Patch("resid_pre", 0, value=good.get("resid_pre", 0))])
    np.testing.assert_allclose(m.readout(back.get("resid_post", 1)), m.readout(good.get("resid_post", 1)), rtol=0, atol=1e-5)


def cli(*args):
    from attn_cli.cli import app

    return CliRunner().invoke(app, list(args))


def test_patch_json_has_raw_logit_differences_and_both_maps():
    o = oracle("tiny-llama")
    r = cli("patch", str(o["clean_text"]), str(o["corrupt_text"]), "--model", str(checkpoints.tiny_llama_folder()),
            "--target", f"id:{int(o['target'])}", "--versus", f"id:{int(o['versus'])}", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    m = model("tiny-llama")
    n = len(o["clean_ids"])
    assert np.array(doc["resid_pre"]).shape == (m.n_layers, n) and np.array(doc["heads"]).shape == (m.n_layers, m.n_heads)
    assert abs(doc["clean_logit_diff"] - float(o["clean_logit_diff"])) <= 1e-3
    assert np.array(doc["normalised"]["resid_pre"])[0, 4] == pytest.approx(1.0, abs=1e-4)  # layer 0 at the word that differs: the clean run


def test_texts_of_different_lengths_are_one_line_giving_both_counts():
    r = cli("patch", "The cat sat on the warm stone wall.", "The owl sat", "--model", str(checkpoints.tiny_llama_folder()),
            "--target", "id:5", "--versus", "id:6")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "12 tokens" in r.stderr and "6" in r.stderr, r.stderr


def test_a_masked_lm_can_be_patched_at_its_mask():
    r = cli("patch", "the cat [MASK] on the mat", "the dog [MASK] on the mat", "--model", str(checkpoints.FIXTURES / "tiny-bert-mlm"),
            "--target", "id:5", "--versus", "id:6", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["clean_tokens"][doc["position"]] == "[MASK]"


def test_predict_ablate_keeps_its_shape_and_names_the_heads():
    plain = json.loads(cli("predict", "The cat sat on the", "--model", str(checkpoints.tiny_llama_folder()), "--json").stdout)
    r = cli("predict", "The cat sat on the", "--model", str(checkpoints.tiny_llama_folder()), "--json", "--ablate", "1.2", "--ablate", "0.1")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["ablated"] == ["1.2", "0.1"] and doc["ablated_with"] == "zero"
    assert set(plain) <= set(doc) and len(doc["predictions"]) == len(plain["predictions"])
    assert [p["id"] for p in doc["own_predictions"]] == [p["id"] for p in plain["predictions"]]
    own = {p["id"]: p["probability"] for p in plain["predictions"]}
    for p in doc["predictions"]:
        if p["id"] in own:
            assert p["own_probability"] == pytest.approx(own[p["id"]], abs=1e-6)


def test_inspect_ablate_shows_the_attention_that_follows():
    args = ["inspect", "The cat sat on the warm stone wall.", "--model", str(checkpoints.tiny_llama_folder()), "--head", "1.2", "--json"]
    plain = json.loads(cli(*args).stdout)
    ablated = json.loads(cli(*args, "--ablate", "0.1", "--ablate-with", "mean").stdout)
    assert ablated["ablated"] == ["0.1"] and ablated["ablated_with"] == "mean"
    a, b = np.array(plain["heads"][0]["weights"]), np.array(ablated["heads"][0]["weights"])
    assert a.shape == b.shape and not np.allclose(a, b, atol=1e-4)  # a later layer's head reads another stream


@pytest.mark.parametrize("args, message", [
    (["--ablate", "7.0"], "layers 0 to 1"), (["--ablate", "x"], "LAYER.HEAD"), (["--ablate", "0.1", "--ablate-with", "median"], "median"),
])
def test_bad_ablations_are_one_line(args, message):
    r = cli("predict", "The cat", "--model", str(checkpoints.tiny_llama_folder()), *args)
    assert r.exit_code == 2 and message in r.stderr and r.stderr.count("\n") <= 2, r.stderr


@pytest.mark.slow
@pytest.mark.floats
def test_the_library_example_of_docs_explain_runs_and_says_what_the_commands_say(capsys):
    import re

    from tests import docs

    page = (docs.DOCS / "explain.md").read_text(encoding="utf-8")
    code = re.search(r"<!-- tested by tests/test_patch.py -->\s*```python\n(.*?)```", page, re.S)[1]
    exec(code, {"SMOLLM2": str(checkpoints.smollm2_gguf())})
    logit, ablated, _, head, best = capsys.readouterr().out.split()
    o = oracle("smollm2")
    assert abs(float(logit) - (float(o["dla_logit"][0]) - float(o["dla_logit"][1]))) <= 0.01  # the difference, as torch's hooks split it
    assert abs(float(ablated) - 3.08) <= 0.01 and head == "23.3"  # what `explain --ablate 23.3` and the map show
    assert abs(float(best) - float(np.max((o["patch_heads"] - o["corrupt_logit_diff"]) / (o["clean_logit_diff"] - o["corrupt_logit_diff"])))) <= 0.01


@pytest.mark.skipif(__import__("tests.browser", fromlist=["Browser"]).Browser.find() is None, reason="no Chromium installed")
@pytest.mark.parametrize("command", [pytest.param("explain", marks=pytest.mark.slow), "patch"])  # explain: in `pytest -m slow`
def test_the_page_names_the_cell_under_the_pointer(tmp_path, command):
    from tests.browser import Browser

    o = oracle("tiny-llama")
    page = tmp_path / f"{command}.html"
    texts = [str(o["clean_text"])] + ([str(o["corrupt_text"])] if command == "patch" else [])
    r = cli(command, *texts, "--model", str(checkpoints.tiny_llama_folder()), "--target", f"id:{int(o['target'])}",
            "--versus", f"id:{int(o['versus'])}", "--json", "--page", str(page))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    with Browser() as browser:
        browser.open(page)
        box = browser.evaluate("(() => { const cell = document.querySelectorAll('table.grid')[0].rows[2].cells[3]; "
                               "cell.scrollIntoView({block: 'center'}); const c = cell.getBoundingClientRect(); "
                               "return [c.x + c.width / 2, c.y + c.height / 2]; })()")  # layer 1, column 2, in view
        browser.hover(*box)
        said = browser.evaluate("document.getElementById('hover').textContent")
        assert browser.requests == [] or all(u.startswith("file:") for u in browser.requests)
    if command == "explain":
        part = next(c for c in doc["components"] if c["kind"] == "head" and c["layer"] == 1 and c["head"] == 2)
        assert said.startswith("head 1.2: ") and float(said.split()[2]) == pytest.approx(part["logit"], abs=6e-5)
    else:
        assert said.startswith("layer 1, position 2 ") and f"(raw {doc['resid_pre'][1][2]:.3f})" in said


@pytest.mark.skipif(__import__("tests.browser", fromlist=["Browser"]).Browser.find() is None, reason="no Chromium installed")
def test_the_explain_page_shows_the_text_read_and_the_largest_parts_and_every_page_one_theme(tmp_path):
    """explain --page: the tokens read (the position marked) and the largest parts, ranked as the terminal ranks them;
    the inspect, generate, explain and patch pages share one style sheet (io/page.css), each adding its own rules."""
    from attn_cli.io.page import HERE
    from tests.browser import Browser

    o = oracle("tiny-llama")
    folder = str(checkpoints.tiny_llama_folder())
    pages = {name: tmp_path / f"{name}.html" for name in ("explain", "patch", "generate", "inspect")}
    target = ("--target", f"id:{int(o['target'])}", "--versus", f"id:{int(o['versus'])}")
    runs = {"explain": ("explain", str(o["clean_text"]), "--model", folder, *target, "--json"),
            "patch": ("patch", str(o["clean_text"]), str(o["corrupt_text"]), "--model", folder, *target),
            "generate": ("generate", "the cat", "--model", folder, "--steps", "2"), "inspect": ("inspect", "the cat", "--model", folder)}
    outputs = {}
    for name, args in runs.items():
        r = cli(*args, "--page", str(pages[name]))
        assert r.exit_code == 0, r.output
        outputs[name] = r.stdout
    doc = json.loads(outputs["explain"])
    with Browser() as browser:
        browser.open(pages["explain"])
        tokens = browser.evaluate("[...document.querySelectorAll('#texts .tok')].map(s => [s.textContent, s.classList.contains('on')])")
        ranked = browser.evaluate("[...document.querySelectorAll('#ranked tr')].map(r => [r.cells[0].textContent, r.cells[1].textContent])")
        background = {}
        for name, page in pages.items():
            browser.open(page)
            background[name] = browser.evaluate("getComputedStyle(document.body).backgroundColor")
    assert [t for t, _ in tokens] == doc["tokens"] and [on for _, on in tokens] == [i == doc["position"] for i in range(len(doc["tokens"]))]
    largest = sorted(doc["components"], key=lambda c: -abs(c["logit"]))[:12]
    names = {"head": lambda c: f"head {c['layer']}.{c['head']}", "mlp": lambda c: f"MLP {c['layer']}", "embed": lambda c: "embeddings"}
    assert [name for name, _ in ranked] == [names[c["kind"]](c) for c in largest]
    assert [float(x) for _, x in ranked] == pytest.approx([c["logit"] for c in largest], abs=6e-4)
    theme = (HERE / "page.css").read_text(encoding="utf-8")
    for name, page in pages.items():
        assert f"<style>{theme}" in page.read_text(encoding="utf-8"), name
    assert len(set(background.values())) == 1, background
