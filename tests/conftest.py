import os

# One BLAS thread unless the run asks for another number: on a loaded 2-core machine OpenBLAS's
# second thread spins against the other processes and makes matrix-heavy tests several times
# slower (measured: 7 s -> 23 s for two model tests). .ci/run runs the suite again with 2 threads.
# Set before NumPy is first imported (here, by attn_cli below), and inherited by the subprocesses tests start.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import attn_cli
from attn_cli.cli import app
from attn_cli.vectors.loading import load


def pytest_sessionstart(session):
    """attn's bytecode written once for the run, as pip writes it for an installed package: the hundreds of `attn`
    processes the tests start then read it, rather than each compiling attn from source (which a fresh clone with
    PYTHONDONTWRITEBYTECODE set, or a read-only one, would otherwise do every time: 0.1 s a process)."""
    import compileall

    compileall.compile_dir(os.path.dirname(attn_cli.__file__), quiet=2)


def misalign_offset() -> int | None:
    """ATTN_TEST_MISALIGN=BYTES (.ci/run's last pass): a model's weights are moved BYTES past a 64-byte boundary."""
    value = os.environ.get("ATTN_TEST_MISALIGN")
    if not value:
        return None
    offset = int(value)
    assert offset > 0 and offset % 4 == 0 and offset % 64, f"ATTN_TEST_MISALIGN={value}: a multiple of 4 bytes, not of 64"
    return offset


def misaligned(a: np.ndarray, offset: int) -> np.ndarray:
    """A copy of `a` in the same memory order, starting `offset` bytes past a 64-byte (cache line) boundary."""
    if a.flags.f_contiguous and not a.flags.c_contiguous:
        return misaligned(a.T, offset).T
    buffer = np.empty(a.nbytes + 64 + offset, np.uint8)
    start = -buffer.ctypes.data % 64 + offset
    moved = buffer[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    moved[...] = a
    return moved


# What the user's shell may export that changes how attn (Rich) draws: colours, width, the terminal's kind. The
# suite runs without them, whatever the shell says (.ci/run's last pass exports them to check); a test that means
# one sets it itself (run(..., env={"NO_COLOR": "1"}), or os.environ | {...} for a subprocess).
TERMINAL_VARIABLES = ("NO_COLOR", "FORCE_COLOR", "TERM", "COLORTERM", "COLUMNS", "LINES", "JUPYTER_COLUMNS", "JUPYTER_LINES",
                      "TTY_COMPATIBLE", "TTY_INTERACTIVE", "PY_COLORS", "CLICOLOR_FORCE")


@pytest.fixture(scope="session", autouse=True)
def no_terminal_variables():
    """The terminal variables out of os.environ for the whole run: CliRunner's invocations, and the subprocesses
    the tests start with os.environ as their base, see none (session-wide, so session fixtures see none either)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in TERMINAL_VARIABLES:
            patch.delenv(name, raising=False)
        yield


@pytest.fixture(autouse=True)
def no_terminal_variables_set_by_another_test(monkeypatch):
    """Each test starts without them too, should an earlier one have set one in os.environ and left it."""
    for name in TERMINAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session", autouse=True)
def misaligned_weights():
    """Under ATTN_TEST_MISALIGN, every tensor a model reads (and every layer it holds) lies at another alignment than
    NumPy's allocator gives: BLAS blocks such arrays differently, and a test comparing floats without a tolerance fails.
    (In this process only; the CLI subprocesses the tests start read their weights as usual.)"""
    offset = misalign_offset()
    if offset is None:
        yield
        return
    from attn_cli.models import weights

    read, in_memory_order = weights.Weights.read, weights.in_memory_order

    def moved_read(self, key, into=None):
        got = read(self, key, into=into)
        return got if got is into else misaligned(got, offset)  # `into`: memory already moved, reused as the pass does

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(weights.Weights, "read", moved_read)
        patch.setattr(weights, "in_memory_order", lambda w: misaligned(in_memory_order(w), offset))
        yield


@pytest.fixture(scope="session")
def glove():
    """The shipped GloVe 6B 50d vectors."""
    return load()


@pytest.fixture
def run(monkeypatch):
    """Run the real CLI: run("softmax", "1", "2", input=...) -> click Result (stdout and stderr apart)."""
    monkeypatch.delenv("ATTN_VECTORS", raising=False)
    runner = CliRunner()

    def invoke(*args, input=None, env=None):
        return runner.invoke(app, [str(a) for a in args], input=input, env=env, catch_exceptions=False)

    return invoke


def parse_json(result):
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)
