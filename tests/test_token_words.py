"""A word of several tokens as --focus, and one rule for how a token reads in every command's token list."""

import re

import pytest

from tests import checkpoints

LLAMA = checkpoints.FIXTURES / "tiny-llama"  # its tokenizer cuts "verdant" into v er d an t


@pytest.mark.parametrize("command", ["inspect", "predict", "explain"])
def test_a_word_of_several_tokens_is_focused_on_its_last_with_one_line_saying_so(run, command):
    done = run(command, "the verdant forest", "--model", LLAMA, "--focus", "verdant", env={"COLUMNS": "100"})
    assert done.exit_code == 0, done.stderr
    assert done.stderr == "attn: --focus 'verdant' is 5 tokens (v er d an t): taking its last, 't' (#6)\n"
    by_index = run(command, "the verdant forest", "--model", LLAMA, "--focus", "6", env={"COLUMNS": "100"})
    assert by_index.stderr == "" and by_index.stdout == done.stdout  # the same as naming the piece by its index


def test_a_focus_that_is_no_token_nor_word_says_how_to_name_one_by_index(run):
    done = run("predict", "the verdant forest", "--model", LLAMA, "--focus", "verdure")
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr == ("attn: --focus 'verdure' is not one of the tokens: <|begin_of_text|> the v er d an t f ore st "
                           "(or give a token's index, 0 to 9)\n")


def token_list(out: str, start: str) -> str:
    """The token list that starts with `start` ("tokens", "clean"), its lines joined."""
    lines = out.split("\n")
    at = next(i for i, l in enumerate(lines) if l.startswith(start + " "))
    listed = lines[at]
    for line in lines[at + 1:]:
        if not re.match(r"^\d+:", line):
            break
        listed += line
    return listed


def test_every_command_shows_a_token_by_the_same_rule(run):
    text, other = "the forest,  trees", "the forest,  the"  # "," and a lone space "Ġ" are tokens of their own
    env = {"COLUMNS": "200"}
    lists = {
        "predict": token_list(run("predict", text, "--model", LLAMA, env=env).stdout, "tokens"),
        "explain": token_list(run("explain", text, "--model", LLAMA, env=env).stdout, "tokens"),
        "inspect": token_list(run("inspect", text, "--model", LLAMA, env=env).stdout, "tokens"),
        "patch": token_list(run("patch", text, other, "--model", LLAMA, "--target", "id:5", "--versus", "id:6", env=env).stdout, "clean"),
    }
    for command, listed in lists.items():
        assert "5:“,” 6:“␣” " in listed, (command, listed)
        assert "1:the " in listed, (command, listed)
    table = run("tokens", text, "--model", LLAMA, env=env).stdout
    rows = {l.split()[0]: l.split()[-1] for l in table.split("\n") if re.match(r"^\s+\d+\s", l)}
    assert rows["1"] == "the" and rows["5"] == "“,”" and rows["6"] == "“␣”"
    assert "text: each piece as attn's other views show it" in table
