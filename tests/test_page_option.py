"""--page '' and --page - on every command that writes a page: one line on stderr, exit 2, nothing on stdout, no file.

The option is read as given (cli/options.page_file), before Typer makes it a Path: Path("") is the current folder (its
message was "--page .: ..." or ". exists; pass --force"), and generate wrote its page to a file named "-".
"""

import os

import pytest
from typer.testing import CliRunner

from tests import checkpoints

LLAMA = str(checkpoints.FIXTURES / "tiny-llama")
COMMANDS = {
    "inspect": ["inspect", "the cat sat"],
    "generate": ["generate", "the cat sat", "--model", LLAMA, "--steps", "2"],
    "explain": ["explain", "the cat sat", "--model", LLAMA],
    "patch": ["patch", "the cat sat", "the dog sat", "--model", LLAMA, "--target", "sat", "--versus", "cat"],
    "compare": ["compare", "the cat sat", "the dog sat", "--model", LLAMA],
}


def test_every_command_with_page_is_checked_here():
    from attn_cli.cli import app
    from typer.main import get_command

    group = get_command(app)
    with_page = {name for name, command in group.commands.items() if any("--page" in p.opts for p in command.params)}
    assert with_page == set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("given, says", [("", "--page '': give the page a file name"), ("-", "--page -: a page is written to a file, not to stdout")])
@pytest.mark.parametrize("form", ["apart", "joined"])
def test_an_empty_page_name_or_a_dash_is_one_line_and_exit_2(tmp_path, monkeypatch, command, given, says, form):
    from attn_cli.cli import app

    monkeypatch.chdir(tmp_path)
    option = ["--page", given] if form == "apart" else [f"--page={given}"]
    result = CliRunner().invoke(app, COMMANDS[command] + option)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"attn: {says}") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr and os.listdir(tmp_path) == []  # no page named "-", nothing half written
