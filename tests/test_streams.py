"""Standard streams, signals and what is written: a closed or full stdout, Ctrl-C at any moment,
lines of stdin that are huge, blank or meet damaged data, OSError messages, CSV cells, colour
in a pipe, and a destination the user adds to while `attn` works.

Real subprocesses where only a process shows it (descriptors, buffering, signals, memory); the
real entry point in this process otherwise (tests/oracle.py).
"""

import os
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attn_cli.files import MAX_SHOWN_PATH, printable, shown_path
from tests import checkpoints
from tests.oracle import ATTN, attn, check

needs_script = pytest.mark.skipif(ATTN is None, reason="the attn console script is not installed")
G = checkpoints.tiny_gpt2_folder()
BAD_FD = "attn: cannot write to standard output (Bad file descriptor)\n"
FULL = "attn: cannot write to standard output (No space left on device)\n"
CONTROLS = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))]


def process_env(**extra) -> dict:
    """The environment of a real `attn`, without what would change its output, and buffered as a user's is."""
    drop = ("ATTN_VECTORS", "FORCE_COLOR", "NO_COLOR", "ATTN_DEBUG", "PYTHONUNBUFFERED")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "COLUMNS": "100", **extra}


def one_line(outcome, code: int, *parts: str):
    check(outcome)
    assert outcome.code == code, outcome
    assert outcome.stderr.count("\n") == 1 and outcome.stderr.startswith("attn: "), outcome
    for part in parts:
        assert part in outcome.stderr, outcome
    return outcome


# --- a closed or full standard output -------------------------------------------------------------


@needs_script
@pytest.mark.parametrize("args", [["softmax", "1", "2", "3"], ["softmax", "1", "2", "--json"], ["model", "info", str(G)]])
def test_a_closed_stdout_is_one_line_and_exit_1(args):
    done = subprocess.run([ATTN, *args], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=process_env(),
                          preexec_fn=lambda: os.close(1), timeout=60)
    assert (done.returncode, done.stderr.decode()) == (1, BAD_FD)


@needs_script
def test_a_closed_pipe_stays_quiet():
    """`| head -1`: the reader has what it wanted, and attn stops without a word (exit 1)."""
    lines = b"the cat sat\n" * 2000
    script = f"'{ATTN}' inspect - --jsonl --head identity --neighbors 0 | head -c 1 >/dev/null; echo ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", script], input=lines, capture_output=True, env=process_env(), timeout=120)
    assert done.stdout.decode().strip() == "1" and done.stderr == b""


@needs_script
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("args, stdin", [
    (["softmax", "1", "2", "--json"], b""), (["model", "info", str(G)], b""),
    (["inspect", "-", "--jsonl", "--head", "identity"], b"the cat\nthe dog\n"), (["softmax", "1", "2"], b""),
])  # fmt: skip
def test_a_full_disk_is_one_line_and_exit_1_when_stdout_is_buffered(args, stdin):
    """Without PYTHONUNBUFFERED (as a user's shell runs it), what is still in stdout's buffer must not
    fail a second time at exit ("Exception ignored in: <_io.TextIOWrapper ...>", exit 120)."""
    with open("/dev/full", "wb") as full:
        done = subprocess.run([ATTN, *args], input=stdin, stdout=full, stderr=subprocess.PIPE, env=process_env(), timeout=60)
    assert (done.returncode, done.stderr.decode()) == (1, FULL)


# --- OSError messages -----------------------------------------------------------------------------


LONG_NAMES = ["x" * 300 + "\x1b[31mRED\nline2", "y" * 300 + "\x1b]0;pwned\x07", "\x9b31m" + "z" * 400]


@pytest.mark.parametrize("name", LONG_NAMES)
@pytest.mark.parametrize("command", [["model", "info", "{p}"], ["inspect", "the cat", "--vectors", "{p}"], ["vectors", "convert", "{p}", "out"],
                                     ["similarity", "cat", "dog", "--vectors", "{p}"]])
def test_an_oserror_names_its_file_printably_and_shortly(tmp_path, monkeypatch, name, command):
    monkeypatch.chdir(tmp_path)
    out = one_line(attn(*[c.format(p=name) for c in command]), 1, "File name too long")
    assert all(c not in out.stderr[:-1] for c in CONTROLS), out
    assert len(out.stderr) < MAX_SHOWN_PATH + 100, out
    assert f"({len(name):,} characters)" in out.stderr
    assert not (tmp_path / "out").exists()


@given(st.text(max_size=400))
def test_a_shown_path_is_one_bounded_printable_line(text):
    shown = shown_path(text)
    assert all(c not in shown for c in CONTROLS)
    assert len(shown) <= MAX_SHOWN_PATH + len(f" ({len(text):,} characters)")
    if len(printable(text)) <= MAX_SHOWN_PATH:
        assert shown == printable(text)
