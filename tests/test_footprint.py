"""The memory a run will take (models.footprint) against what a real run takes, and the one-line refusals built on it.

The estimate of `resident` (private memory and the file's pages read) must be within 1.5x of a subprocess's peak
(wait4's ru_maxrss) on SmolLM2 at three sizes each of predict, inspect --head L.H --json and inspect --page (lengths of a
long document), and generate --page (steps after a prompt from it).
"""

import os
import subprocess
import sys

import pytest

from attn_cli.models import footprint, loading
from tests import checkpoints
from tests.long_text import DOCUMENT, long_text

RATIO = 1.5
LENGTHS = (256, 640, 1280)
PAGE_LENGTHS = (128, 256, 384)  # inspect --page keeps every head's weights: n^2 x 270 cells
STEPS = (50, 150, 300)  # generate --page: 150 and 300 steps pass the page's bound (analysis.generate.PAGE_CELLS)
PROMPT = 64


def smollm2():
    return loading.load(str(checkpoints.smollm2_gguf()))


# A child's peak RSS (ru_maxrss) starts from its parent's resident memory at fork(), which Linux keeps across exec:
# after a long test session pytest holds gigabytes. So `attn` is started by a small Python of its own, whose
# wait4 reports the peak of attn alone.
LAUNCH = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-m", "attn_cli", *sys.argv[1:]])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def measure(args: list[str]) -> tuple[int, str]:
    """The peak resident bytes of `attn ARGS` run as a new process with one BLAS thread, and what it wrote to stdout."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", LAUNCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    *out, last = done.stdout.splitlines()
    code, kib = (int(x) for x in last.split())
    assert code == 0, done.stderr
    return kib * 1024, "\n".join(out)


def peak(args: list[str]) -> int:
    return measure(args)[0]


def runs(kind: str, size: int, tmp_path) -> tuple[list[str], object]:
    """(the arguments of a run of `kind` at `size`, a function of its stdout giving the estimate of its peak)."""
    from attn_cli.analysis.generate import HOLD_BYTES, PAGE_CELLS

    m, path = smollm2(), str(checkpoints.smollm2_gguf())
    if kind == "generate --page":
        text = long_text(m, PROMPT)
        prompt = len(m.tokenize(text).ids)
        made = lambda out: len(out.splitlines())  # noqa: E731  (one JSON line a step: the model may end its turn sooner)
        return (["generate", text, "--model", path, "--steps", str(size), "--jsonl", "--page", str(tmp_path / "g.html")],
                lambda out: footprint.generation(m, prompt, made(out), HOLD_BYTES, PAGE_CELLS))
    text = long_text(m, size)
    n = len(m.tokenize(text).ids)  # the cut may split a character's bytes, which the tokenizer then joins
    assert abs(n - size) <= 2
    every = m.n_layers * m.n_heads
    return {"predict": (["predict", text, "--model", path, "--json"], lambda out: footprint.estimate(m, n, logits_rows=1)),
            "inspect --head": (["inspect", text, "--model", path, "--head", "3.2", "--json"],
                               lambda out: footprint.estimate(m, n, cells=n * n, shown=n * n, logits_rows=0)),
            "inspect --page": (["inspect", text, "--model", path, "--page", str(tmp_path / "p.html")],
                               lambda out: footprint.estimate(m, n, cells=footprint.EVERY_HEAD_PLANES * every * n * n, streams=True,
                                                              logits_rows=0)),
            "explain --page": (["explain", text, "--model", path, "--json", "--page", str(tmp_path / "e.html")],
                               lambda out: footprint.estimate(m, n, logits_rows=0)),  # the page's map: 300 cells, within the margin
            }[kind]


@pytest.mark.slow
@pytest.mark.parametrize("kind, size", [(k, n) for k in ("predict", "inspect --head", "explain --page") for n in LENGTHS]
                         + [("inspect --page", n) for n in PAGE_LENGTHS] + [("generate --page", n) for n in STEPS])
def test_the_estimate_is_within_half_again_of_the_measured_peak(kind, size, tmp_path):
    args, estimate = runs(kind, size, tmp_path)
    measured, out = measure(args)
    guess = estimate(out)
    assert 1 / RATIO <= guess.resident / measured <= RATIO, (kind, size, guess.parts, measured)


@pytest.mark.slow
def test_a_run_past_the_limit_is_refused_in_one_line_naming_what_would_fit(run):
    path = checkpoints.smollm2_gguf()
    text = DOCUMENT.read_text(encoding="utf-8").strip()
    done = run("inspect", text, "--model", path, "--head", "3.2", "--json", "--max-memory", "300M")
    assert done.exit_code == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "inspect of 1 head over 4,100 tokens needs about" in done.stderr and "more than the 300.0 MB --max-memory allows" in done.stderr
    fits = int(done.stderr.split("at most ")[1].split(" tokens")[0].replace(",", ""))
    m = smollm2()
    estimate = lambda n: footprint.estimate(m, n, cells=n * n, shown=n * n, logits_rows=0).private  # noqa: E731
    assert estimate(fits) <= 300 << 20 < estimate(fits + 1)
    every = run("inspect", text, "--model", path, "--json", "--max-memory", "150M")
    assert every.exit_code == 2 and every.stderr.startswith("attn: inspect of 270 heads over 4,100 tokens needs about")
    assert "--head L.H or --layer L, or a text of at most" in every.stderr
    predicted = run("predict", text, "--model", path, "--max-memory", "200M")
    assert predicted.exit_code == 2 and predicted.stderr.startswith("attn: predict over 4,100 tokens needs about")
    assert run("predict", "hi", "--model", path, "--max-memory", "lots").stderr == \
        "attn: --max-memory 'lots': give a size such as 4G, 512M or 1.5GB\n"


def test_a_text_past_the_context_length_is_one_clear_line(run):
    path = checkpoints.smollm2_gguf()
    text = " ".join([DOCUMENT.read_text(encoding="utf-8").strip()] * 2)
    done = run("predict", text, "--model", path)
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr == "attn: 8,200 tokens, more than the 8,192 positions SmolLM2-135M-Instruct has; split the text\n"


def test_sizes_read_as_people_write_them():
    assert footprint.parse_size("4G") == 4 << 30 and footprint.parse_size("512M") == 512 << 20
    assert footprint.parse_size("1.5 GB") == int(1.5 * (1 << 30)) and footprint.parse_size("800000000") == 800000000
    assert footprint.parse_size("2GiB") == 2 << 30
    for bad in ("", "-1G", "0", "nanG", "4Q"):
        with pytest.raises(Exception, match="give a size"):
            footprint.parse_size(bad)


@pytest.mark.slow
def test_a_head_over_a_long_text_is_a_summary_in_the_terminal(run):
    """Pooled blocks, the strongest keys of a few queries and where every weight is: never a column per token."""
    m = smollm2()
    text = long_text(m, 600)
    done = run("inspect", text, "--model", checkpoints.smollm2_gguf(), "--head", "3.2", env={"COLUMNS": "100"})
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("head 3.2 over 6") and "pooled" in line for line in lines)
    assert "every query's weights: --json, or --page FILE" in done.stdout
    assert max(len(line) for line in lines) <= 100
    assert len(lines) < 200  # the token list, the residual table, then the summary


def test_a_generation_past_the_limit_is_refused_before_it_starts_naming_the_steps_that_fit(run, tmp_path):
    from attn_cli.analysis.generate import HOLD_BYTES, PAGE_CELLS

    path = checkpoints.smollm2_gguf()
    done = run("generate", "The capital of France is", "--model", path, "--steps", "8000", "--page", tmp_path / "g.html", "--max-memory", "400M")
    assert done.exit_code == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("attn: generate of 8,000 steps after ") and "more than the 400.0 MB --max-memory allows" in done.stderr
    fits = int(done.stderr.split("--steps ")[1].split(" would fit")[0].replace(",", ""))
    m = smollm2()
    prompt = len(m.tokenize("The capital of France is").ids)
    need = lambda s: footprint.generation(m, prompt, s, HOLD_BYTES, PAGE_CELLS).private  # noqa: E731
    assert 0 < fits < 8000 and need(fits) <= 400 << 20 < need(fits + 1)
    assert not (tmp_path / "g.html").exists()
    assert run("generate", "hi", "--model", path, "--max-memory", "1.5 gigs").exit_code == 2


def test_a_generation_page_past_its_bound_keeps_the_last_steps_and_says_what_it_left_out(run, tmp_path, monkeypatch):
    import json

    from attn_cli.analysis import generate

    monkeypatch.setattr(generate, "PAGE_CELLS", 2_000)
    page = tmp_path / "g.html"
    done = run("generate", "The cat sat on the", "--model", checkpoints.tiny_llama_folder(), "--steps", "30", "--json", "--page", page)
    assert done.exit_code == 0, done.stderr
    assert len(json.loads(done.stdout)["tokens"]) == 30  # the JSON keeps every step: only the page's rows are bounded
    html = page.read_text(encoding="utf-8")
    data = json.loads(html.split('<script type="application/json" id="data">')[1].split("</script>")[0])
    left, offsets = data["left"], data["offsets"]
    assert 0 < left < 30 and offsets[:left] == [None] * left and None not in offsets[left:]
    cells = data["layers"] * data["heads"]
    prompt = len(data["prompt"])
    assert sum(cells * (prompt + k) for k in range(left, 30)) <= 2_000 + cells * (prompt + 29)
    said = f"the attention of the first {left:,} steps left out to keep the page small: it keeps the last {30 - left:,} steps'"
    assert said in done.stderr and said in html and data["left_note"].startswith(said)


def test_a_page_past_the_limit_is_refused_before_the_pass_naming_the_text_that_fits(run, tmp_path):
    """A page shows every head: what would fit is a shorter text (not --head, which a page does not read)."""
    m = smollm2()
    text = long_text(m, 487)
    n = len(m.tokenize(text).ids)
    done = run("inspect", text, "--model", checkpoints.smollm2_gguf(), "--page", tmp_path / "p.html", "--max-memory", "1G")
    assert done.exit_code == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"attn: inspect of 270 heads over {n:,} tokens needs about") and "--head" not in done.stderr
    fits = int(done.stderr.split("a text of at most ")[1].split(" tokens")[0].replace(",", ""))
    every = m.n_layers * m.n_heads
    need = lambda k: footprint.estimate(m, k, cells=footprint.EVERY_HEAD_PLANES * every * k * k, streams=True, logits_rows=0).private  # noqa: E731
    assert need(fits) <= 1 << 30 < need(fits + 1) and not (tmp_path / "p.html").exists()


def test_an_explanation_past_the_limit_is_refused_before_the_pass(run, tmp_path):
    m = smollm2()
    text = long_text(m, 487)
    n = len(m.tokenize(text).ids)
    done = run("explain", text, "--model", checkpoints.smollm2_gguf(), "--page", tmp_path / "e.html", "--max-memory", "130M")
    assert done.exit_code == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"attn: explain over {n:,} tokens needs about") and "a text of at most" in done.stderr
    assert not (tmp_path / "e.html").exists()


def test_a_patching_run_past_the_limit_is_refused_before_the_first_pass(run, tmp_path):
    from attn_cli.analysis.patch import BATCH_BUDGET, HOLD_BYTES

    m = smollm2()
    clean, corrupt = "When Mary and John went to the store, John gave a drink to", "When Mary and John went to the store, Mary gave a drink to"
    done = run("patch", clean, corrupt, "--model", checkpoints.smollm2_gguf(), "--target", " Mary", "--versus", " John",
               "--page", tmp_path / "p.html", "--max-memory", "400M")
    n = len(m.tokenize(clean).ids)
    assert done.exit_code == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"attn: patch over {n:,} tokens needs about") and "more than the 400.0 MB --max-memory allows" in done.stderr
    assert footprint.patching(m, n, HOLD_BYTES, BATCH_BUDGET, True).private > 400 << 20 and not (tmp_path / "p.html").exists()


@pytest.mark.slow
@pytest.mark.skipif(__import__("tests.browser", fromlist=["Browser"]).Browser.find() is None, reason="no Chromium installed")
def test_a_step_the_generation_page_left_out_says_so_in_the_browser(run, tmp_path, monkeypatch):
    from attn_cli.analysis import generate
    from tests.browser import Browser

    monkeypatch.setattr(generate, "PAGE_CELLS", 2_000)
    page = tmp_path / "g.html"
    assert run("generate", "The cat sat on the", "--model", checkpoints.tiny_llama_folder(), "--steps", "30", "--page", page).exit_code == 0
    with Browser() as browser:
        browser.open(page)
        info = {}
        for k in (0, 29):
            browser.evaluate(f"document.getElementById('step').value = {k}; document.getElementById('step').dispatchEvent(new Event('input'))")
            info[k] = browser.evaluate("document.getElementById('info').textContent")
        errors = [c for c in browser.console if "error" in str(c).lower()]
    assert "the attention of the first" in info[0] and "left out to keep the page small" in info[0]
    assert "weights of the token it was read from, over positions 0 to" in info[29] and errors == []
