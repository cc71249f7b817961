"""The memory a run will take (models.footprint) against what a real run takes, and the one-line refusals built on it.

The estimate of `resident` (private memory and the file's pages read) must be within 1.5x of a subprocess's peak
(wait4's ru_maxrss) for predict and inspect --head L.H --json on SmolLM2 at three lengths of a long document.
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


def peak(args: list[str]) -> int:
    """The peak resident bytes of `attn ARGS` run as a new process with one BLAS thread."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", LAUNCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    code, kib = (int(x) for x in done.stdout.split()[-2:])
    assert code == 0, done.stderr
    return kib * 1024


@pytest.mark.slow
def test_the_estimate_is_within_half_again_of_the_measured_peak():
    m = smollm2()
    path = str(checkpoints.smollm2_gguf())
    for length in LENGTHS:
        text = long_text(m, length)
        n = len(m.tokenize(text).ids)  # the cut may split a character's bytes, which the tokenizer then joins
        assert abs(n - length) <= 2
        runs = {"predict": (["predict", text, "--model", path, "--json"], footprint.estimate(m, n, logits_rows=1)),
                "inspect": (["inspect", text, "--model", path, "--head", "3.2", "--json"],
                            footprint.estimate(m, n, cells=n * n, shown=n * n, logits_rows=0))}
        for name, (args, estimate) in runs.items():
            measured = peak(args)
            assert 1 / RATIO <= estimate.resident / measured <= RATIO, (name, n, estimate.parts, measured)


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
