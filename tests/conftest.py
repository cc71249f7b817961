import json

import pytest
from typer.testing import CliRunner

from attn_cli.cli import app
from attn_cli.vectors import load


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
