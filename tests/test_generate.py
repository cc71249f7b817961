"""`attn generate`: the cached loop against a full recompute, greedy output against transformers' generate
(tests/fixtures/models/generate-smollm2.npz, made by make_why_fixtures.py), sampling, the formats, Ctrl-C and the page."""

import json
import os
import signal
import subprocess
import sys
import time
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from tests import checkpoints
from tests.browser import Browser

LOGITS = 1e-4  # a cached step against the full pass over the whole sequence: float32, blocked differently
ROWS = 1e-3  # a step's attention row as kept: float16 (3 significant digits of weights up to 1)
ROOT = checkpoints.FIXTURES.parents[2]
FAMILIES = {"tiny-llama": checkpoints.tiny_llama_folder, "tiny-qwen2": checkpoints.tiny_qwen2_folder,
            "tiny-gpt2": checkpoints.tiny_gpt2_folder, "tiny-llama-gguf": lambda: checkpoints.gguf_fixture("tiny-llama", "Q8_0"),
            **{name: (lambda name=name: checkpoints.FIXTURES / name) for name in ("tiny-qwen3", "tiny-phi3", "tiny-gemma2", "tiny-gemma3")},
            "llama2-spm-gguf": lambda: checkpoints.FIXTURES / "gguf" / "llama2-spm.F16.gguf",
            "smollm2": checkpoints.smollm2_gguf}
SLOW = {"smollm2"}  # 30 layers, a full pass per step to compare with: seconds


@cache
def model(name: str):
    from attn_cli.models.loading import load

    return load(str(FAMILIES[name]()))


def run_steps(m, text, **kw):
    from attn_cli.analysis.generate import GenerateSettings, Generation

    run = Generation(m, text, GenerateSettings(**kw))
    list(run)
    return run


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow, pytest.mark.floats] if n in SLOW else []) for n in FAMILIES])
def test_every_cached_step_gives_the_logits_of_the_full_pass(name):
    m = model(name)
    run = run_steps(m, "The cat sat on the warm stone wall by the old mill, and the", steps=6)  # longer than the tiny Gemmas' windows
    ids = list(run.tokens.ids)
    for step in run.steps:
        full = m.readout(m.forward(ids).streams()[-1][-1:])[0]
        assert abs(step.logit - float(full[step.id])) <= LOGITS * max(1.0, abs(step.logit))
        assert step.id == int(np.argmax(full))  # greedy picks the full pass's argmax
        trace = m.forward(ids)
        rows = trace.stacked("attn.pattern")[:, :, -1]  # [L, H, t]
        np.testing.assert_allclose(step.attention.astype(np.float32), rows, atol=ROWS)
        ids.append(step.id)


@pytest.mark.slow
@pytest.mark.floats
def test_greedy_text_is_transformers_generate_token_for_token():
    o = np.load(checkpoints.FIXTURES / "generate-smollm2.npz", allow_pickle=False)
    m = model("smollm2")
    for s in range(int(o["n_prompts"])):
        chat = bool(o[f"p{s}_chat"])
        run = run_steps(m, str(o[f"p{s}_text"]), steps=int(o["steps"]), chat=chat)
        assert list(run.tokens.ids) == o[f"p{s}_prompt_ids"].tolist()  # --chat: apply_chat_template's ids
        assert [st.id for st in run.steps] == o[f"p{s}_new_ids"].tolist(), str(o[f"p{s}_text"])
        assert run.stop == ("eos" if o[f"p{s}_new_ids"][-1] in o["eos_ids"] else "steps")


def test_a_seed_repeats_a_sampled_run_and_top_k_1_is_greedy():
    from attn_cli.analysis.generate import Sampling

    m = model("tiny-llama")
    a = [s.id for s in run_steps(m, "The cat", steps=8, sampling=Sampling(1.0, seed=7)).steps]
    b = [s.id for s in run_steps(m, "The cat", steps=8, sampling=Sampling(1.0, seed=7)).steps]
    c = [s.id for s in run_steps(m, "The cat", steps=8, sampling=Sampling(1.0, seed=8)).steps]
    greedy = [s.id for s in run_steps(m, "The cat", steps=8).steps]
    assert a == b and a != c
    assert [s.id for s in run_steps(m, "The cat", steps=8, sampling=Sampling(1.0, top_k=1, seed=3)).steps] == greedy
    assert [s.id for s in run_steps(m, "The cat", steps=8, sampling=Sampling(1.0, top_p=1e-9, seed=3)).steps] == greedy


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-20, 20), min_size=2, max_size=30), st.integers(1, 30), st.floats(0.01, 1.0), st.integers(0, 2**32 - 1),
       st.floats(0.05, 3.0))
def test_a_draw_is_always_inside_top_k_and_top_p(logits, k, p, seed, temperature):
    from attn_cli.analysis.generate import Sampling, choose

    z = np.array(logits)
    i = choose(z, Sampling(temperature, top_k=k, top_p=p), np.random.default_rng(seed))
    order = np.argsort(-z / temperature, kind="stable")[:k]
    assert i in order.tolist()
    q = np.exp(z[order] / temperature - (z[order] / temperature).max())
    q /= q.sum()
    before = q[: order.tolist().index(i)].sum()  # the mass of the tokens ranked above the one drawn
    assert before < p + 1e-12  # it is inside the smallest prefix that reaches p


def cli(*args, input=None):
    from attn_cli.cli import app

    return CliRunner().invoke(app, ["generate", *args], input=input)


def test_json_is_one_document_with_prompt_ids_tokens_and_stop():
    r = cli("The cat sat", "--model", str(checkpoints.tiny_llama_folder()), "--steps", "5", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["prompt_ids"] == model("tiny-llama").tokenize("The cat sat").ids
    assert len(doc["tokens"]) == 5 and doc["stop"] == "steps"
    for t in doc["tokens"]:
        assert {"step", "id", "token", "probability", "top", "sources"} <= set(t)
        assert 0 < t["probability"] <= 1 and t["top"][0]["probability"] >= t["top"][-1]["probability"]
        assert all(0 <= s["position"] < len(doc["prompt_ids"]) + t["step"] for s in t["sources"])


def test_jsonl_is_one_object_per_step_and_the_stop_on_stderr():
    r = cli("The cat sat", "--model", str(checkpoints.tiny_llama_folder()), "--steps", "4", "--jsonl")
    assert r.exit_code == 0, r.output
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [d["step"] for d in lines] == [0, 1, 2, 3]
    assert r.stderr == "attn: 4 new tokens; stopped: --steps reached\n"


@pytest.mark.parametrize("args, message", [
    (["-t", "-1"], "--temperature"), (["--top-p", "1.5", "-t", "1"], "--top-p"), (["--seed", "3"], "give --temperature"),
    (["--head", "9.0"], "--head 9.0"), (["--head", "x"], "LAYER.HEAD"),
])
def test_bad_options_are_one_line_and_exit_2(args, message):
    r = cli("The cat", "--model", str(checkpoints.tiny_llama_folder()), *args)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and message in r.stderr, r.stderr


def test_an_encoder_cannot_generate():
    r = cli("the cat", "--model", str(checkpoints.FIXTURES / "tiny-bert-mlm"))
    assert r.exit_code == 2 and "decoder" in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.slow
def test_200_tokens_fit_80_columns_and_a_screen_of_table():
    r = subprocess.run([sys.executable, "-m", "attn_cli", "generate", "The cat sat on the", "--model", str(checkpoints.tiny_llama_folder()),
                        "--steps", "200"], capture_output=True, text=True, env=os.environ | {"COLUMNS": "80", "LINES": "24", "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("each new token")):]
    assert len(table) <= 30  # the first and last steps, a count between: not 200 rows
    assert any("more (--jsonl or --page: all)" in line for line in table)


def test_ctrl_c_keeps_every_finished_step_and_exits_130(tmp_path):
    page = tmp_path / "g.html"
    with (tmp_path / "err").open("w") as errors:  # a file, not a pipe: nothing waits on it while stdout is read
        p = subprocess.Popen([sys.executable, "-m", "attn_cli", "generate", "The cat sat on the", "--model", str(checkpoints.tiny_llama_folder()),
                              "--steps", "100000", "--jsonl", "--page", str(page)],
                             stdout=subprocess.PIPE, stderr=errors, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)})
        first = p.stdout.readline()
        assert json.loads(first)["step"] == 0
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        out = p.stdout.read()  # through the same reader: readline may already hold later steps in its buffer
        p.stdout.close()
        p.wait(timeout=60)
    err = (tmp_path / "err").read_text()
    assert p.returncode == 130, err
    lines = [first] + out.splitlines()
    steps = [json.loads(line)["step"] for line in lines]  # every line whole
    assert steps == list(range(len(steps)))
    assert err.endswith("attn: interrupted\n") and "stopped: interrupted" in err
    html = page.read_text()  # written whole, with the steps made
    assert html.rstrip().endswith("</html>")
    assert f"{len(steps)} new tokens" in html or f"{len(steps) + 1} new tokens" in html  # a step made as Ctrl-C came may not be on stdout


needs_browser = pytest.mark.skipif(Browser.find() is None, reason="no Chromium installed (apt-get install chromium)")


@needs_browser
@pytest.mark.slow
def test_the_page_steps_through_the_tokens_and_shows_each_ones_attention(tmp_path):
    page = tmp_path / "g.html"
    r = cli("The cat sat on the", "--model", str(checkpoints.tiny_llama_folder()), "--steps", "6", "--json", "--page", str(page))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert "wrote" in r.stderr and str(page.name) in r.stderr
    m = model("tiny-llama")
    run = run_steps(m, "The cat sat on the", steps=6)
    with Browser() as browser:
        browser.open(page)
        browser.evaluate("document.getElementById('step').value = 3; document.getElementById('step').dispatchEvent(new Event('input'))")
        browser.evaluate("document.getElementById('layer').value = 1; document.getElementById('layer').dispatchEvent(new Event('change'))")
        browser.evaluate("document.getElementById('head').value = 2; document.getElementById('head').dispatchEvent(new Event('change'))")
        shown = browser.evaluate("[...document.querySelectorAll('#text span')].map(s => s.title)")
        info = browser.evaluate("document.getElementById('info').textContent")
        assert browser.requests == [] or all(u.startswith("file:") for u in browser.requests)
    want = run.steps[3].attention[1, 2]
    t = len(want)
    assert [float(x) for x in shown[:t]] == pytest.approx([round(float(w), 2) for w in want], abs=0.0051)
    assert all(x == "" for x in shown[t:])
    assert info.startswith(f"step 3: {json.dumps(doc['tokens'][3]['token'])}")


def test_on_a_terminal_the_text_streams_before_the_table(tmp_path):
    """stdout a terminal (a pty): the prompt, then the new text as it is made, then the table; the text is the decoded ids."""
    import pty
    import select

    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "attn_cli", "generate", "The cat sat on the", "--model", str(checkpoints.tiny_llama_folder()),
                          "--steps", "12"], stdout=slave, stderr=subprocess.PIPE, env=os.environ | {"COLUMNS": "80", "NO_COLOR": "1",
                                                                                                  "PYTHONPATH": str(ROOT)})
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        try:
            chunk = os.read(master, 65536) if ready else b""
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    assert p.wait(timeout=60) == 0, p.stderr.read()
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", out.decode().replace("\r\n", "\n"))  # the styles (dim, bold) a terminal gets
    run = run_steps(model("tiny-llama"), "The cat sat on the", steps=12)
    streamed = text.split("\n", 1)[1]  # after the model's line: the prompt and the new text, as written
    assert streamed.startswith(model("tiny-llama").tokenizer.decode(list(run.tokens.ids), skip_special_tokens=False))
    assert run.text() in streamed.replace("\n", "") or run.text().replace("\n", "") in streamed.replace("\n", "")
    assert text.index("new tokens; stopped") > text.index(run.steps[0].token)


@pytest.mark.parametrize("name", [n for n in FAMILIES if n not in SLOW])
def test_the_steps_texts_joined_are_the_text_the_model_wrote(name):
    """Each JSONL step has its `text`: joined, they rebuild what the model wrote (the --json document's text), newlines and
    characters split over byte-level tokens included, whatever the token labels (`\\n`) and pieces (`Ċ`) look like."""
    args = ("Once upon a time", "--model", str(FAMILIES[name]()), "--steps", "40", "-t", "5", "--seed", "3")
    lines = cli(*args, "--jsonl")
    assert lines.exit_code == 0, lines.output
    steps = [json.loads(line) for line in lines.stdout.splitlines()]
    doc = json.loads(cli(*args, "--json").stdout)
    assert "".join(s["text"] for s in steps) == doc["text"] == "".join(t["text"] for t in doc["tokens"])
    assert len(steps) == len(doc["tokens"]) and all(isinstance(s["text"], str) for s in steps)


@pytest.mark.parametrize("name", [n for n in FAMILIES if n not in SLOW])
def test_every_tokens_share_of_random_ids_joins_to_their_decoding(name):
    """Random ids, the worst a sampler can draw: lone bytes that are not UTF-8, SentencePiece byte runs, special tokens."""
    from attn_cli.analysis.generate import texts_of

    m, rng = model(name), np.random.default_rng(7)
    for _ in range(20):
        ids = [int(x) for x in rng.integers(0, m.spec.vocab_size, 30)]
        assert "".join(texts_of(m, ids)) == m.tokenizer.decode(ids, skip_special_tokens=False)


@pytest.mark.slow
def test_a_newline_step_has_its_newline_as_text():
    r = cli("Write a list of three fruits, one a line.", "--model", str(checkpoints.smollm2_gguf()), "--chat", "--steps", "16", "--jsonl")
    steps = [json.loads(line) for line in r.stdout.splitlines()]
    newline = [s for s in steps if s["piece"] == "Ċ"]
    assert newline and all(s["token"] == "\\n" and s["text"] == "\n" for s in newline)
    assert "\n" in "".join(s["text"] for s in steps)


@needs_browser
def test_the_page_shows_the_text_as_the_model_wrote_it(tmp_path):
    """The page's text is the prompt and the new tokens decoded: no space put around a token, a newline a line break
    (marked, so that its shade shows), never a literal \\n; a word is not broken across lines."""
    page = tmp_path / "g.html"
    args = ("One, two.\nThree", "--model", str(FAMILIES["llama2-spm-gguf"]()), "--steps", "12", "-t", "5", "--seed", "1")
    r = cli(*args, "--json", "--page", str(page))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    m = model("llama2-spm-gguf")
    ids = doc["prompt_ids"] + [t["id"] for t in doc["tokens"]]
    with Browser() as browser:
        browser.viewport(500, 800)
        browser.open(page)
        shown = browser.evaluate("document.getElementById('text').textContent")
        spans = browser.evaluate("[...document.querySelectorAll('#text span')].map(s => [s.textContent, s.className])")
        style = browser.evaluate("[getComputedStyle(document.getElementById('text')).whiteSpace, getComputedStyle(document.getElementById('text')).overflowWrap]")
    assert shown == m.tokenizer.decode(ids, skip_special_tokens=False)
    assert "One, two.\nThree" in shown and "\\n" not in shown
    assert len(spans) == len(ids) and all("nl" in c for t, c in spans if t.strip() == "" and "\n" in t)
    assert style == ["pre-wrap", "break-word"]
