import os

# One BLAS thread unless the run asks for another number: on a loaded 2-core machine OpenBLAS's
# second thread spins against the other processes and makes matrix-heavy tests several times
# slower (measured: 7 s -> 23 s for two model tests). .ci/run runs the suite again with 2 threads.
# Set before NumPy is first imported (here, by attn_cli below), and inherited by the subprocesses tests start.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import json

import pytest
from typer.testing import CliRunner

from attn_cli.cli import app
from attn_cli.vectors.loading import load


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
