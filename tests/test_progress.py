"""Bars of long work on stderr (models.progress, drawn by io.console): a pass's layers, patch's patches. Drawn only
when stderr is a terminal (a pseudo-terminal here), never on stdout: stdout is the same byte for byte with and without."""

import os
import subprocess
import sys
import threading

import pytest

from attn_cli.models import progress
from tests import checkpoints

LLAMA = str(checkpoints.FIXTURES / "tiny-llama")
PATCH = ["patch", "the cat sat", "the sat sat", "--model", LLAMA, "--target", "id:5", "--versus", "id:6"]
LONG = "the cat sat on the mat and the dog lay by the door " * 30  # several hundred of the tiny model's tokens
ATTN = "import sys\nimport attn_cli.io.console as c\nc.SHOW_AFTER = float(sys.argv.pop(1))\nsys.argv[0] = 'attn'\nfrom attn_cli.cli import main\nmain()"


def on_terminal(args: list[str], show_after: float = 0.0) -> tuple[bytes, str]:
    """(stdout, what was drawn on stderr) of attn with stderr a pseudo-terminal and stdout a pipe; bars drawn from the
    first step after `show_after` seconds."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", ATTN, str(show_after), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave, env=os.environ | {"OPENBLAS_NUM_THREADS": "1"})
    os.close(slave)
    drawn = []

    def read() -> None:  # as it is written: a full terminal would hold attn up
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other end closed
                return
            if not chunk:
                return
            drawn.append(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    out = proc.stdout.read()
    assert proc.wait(timeout=300) == 0, b"".join(drawn).decode(errors="replace")
    reader.join()
    os.close(master)
    return out, b"".join(drawn).decode(errors="replace")


def in_a_pipe(args: list[str]) -> tuple[bytes, bytes]:
    done = subprocess.run([sys.executable, "-c", ATTN, "0", *args], capture_output=True, timeout=300,
                          env=os.environ | {"OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


@pytest.mark.parametrize("args, bar", [
    (PATCH, "patches"),
    (PATCH + ["--json"], "patches"),
    (["inspect", LONG, "--model", LLAMA, "--json"], "layers"),
    (["predict", LONG, "--model", LLAMA], "layers"),
], ids=["patch", "patch --json", "inspect long", "predict long"])
def test_long_work_draws_a_bar_on_a_terminal_and_leaves_stdout_as_it_was(args, bar):
    out, drawn = on_terminal(args)
    total = 2 + 4 + 2 if bar == "patches" else 2  # patches: the two runs, (a) at each of 4 positions, (b) at each of 2 layers
    assert bar in drawn and f"/{total}" in drawn
    piped_out, piped_err = in_a_pipe(args)
    assert out == piped_out  # stdout: the same bytes, bar or not
    assert piped_err == b""  # in a pipe nothing is drawn


def test_short_work_draws_no_bar():
    out, drawn = on_terminal(["predict", "the cat sat", "--model", LLAMA, "--json"], show_after=60)
    assert "layers" not in drawn and out.startswith(b"{")


def test_only_the_outermost_work_is_told(monkeypatch):
    told = []

    class Bar:
        def __init__(self, what, total):
            self.what, self.total = what, total

        def __enter__(self):
            told.append([self.what, self.total, 0])
            return lambda k=1: told[-1].__setitem__(2, told[-1][2] + k)

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(progress, "listener", Bar)
    with progress.steps("patches", 3) as advance:
        for _ in range(3):
            with progress.steps("layers", 30) as inner:  # a pass inside a patch run: no bar of its own
                inner()
            advance()
    assert told == [["patches", 3, 3]]


def test_a_command_in_a_pipe_listens_for_nothing(run, monkeypatch):
    seen, original = [], progress.steps

    def spy(what, total):  # what each pass would tell
        seen.append((what, progress.listener))
        return original(what, total)

    monkeypatch.setattr(progress, "steps", spy)
    assert run("predict", "the cat sat", "--model", LLAMA, "--json").exit_code == 0
    assert seen == [("layers", None)]


@pytest.mark.slow
def test_smollm2s_patch_and_a_long_inspect_draw_their_bars_unforced():
    """SmolLM2: patch (tens of seconds) and inspect over 1,000 tokens of the long document (one head written: the pass is the long part), attn's own delay."""
    from attn_cli.models.loading import load
    from tests.long_text import long_text

    model = str(checkpoints.smollm2_gguf())
    text = long_text(load(model), 1000)
    for args, bar in ((["patch", "When Mary and John went to the store, John gave a drink to", "When Mary and John went to the store, Mary gave a drink to",
                        "--model", model, "--target", " Mary", "--versus", " John", "--json"], "patches"),
                      (["inspect", text, "--model", model, "--head", "0.0", "--json"], "layers")):
        out, drawn = on_terminal(args, show_after=1.0)
        assert bar in drawn and out.startswith(b"{")
