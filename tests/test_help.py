"""A newcomer's first look: `attn` alone, every --help (examples, summaries, placeholders, defaults), completion."""

import os
import re
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from attn_cli.cli import app
from attn_cli.cli.app import START, tidy_help

runner = CliRunner()
COMMAND = typer.main.get_command(app)
tidy_help(COMMAND)


def leaves(command, path=()):
    subs = getattr(command, "commands", None)
    if not subs:
        yield path, command
        return
    for name, sub in subs.items():
        yield from leaves(sub, (*path, name))


LEAVES = list(leaves(COMMAND))
PLACEHOLDER = re.compile(r"^([A-Z][A-Z0-9_]*|[a-z0-9]+(\|[a-z0-9]+)+|[A-Z][A-Z0-9_=,.:]*(\|[A-Z0-9_=,.:]+)*)$")


def help_text(*args: str) -> str:
    result = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_attn_alone_shows_how_to_start_on_stdout_and_exits_0():
    result = runner.invoke(app, [], env={"COLUMNS": "80"})
    assert result.exit_code == 0 and result.stdout == START and result.stderr == ""
    tried = [line.split("  ")[0].strip() for line in START.splitlines() if line.startswith("  attn ")]
    assert len(tried) == 3
    assert max(len(line) for line in START.splitlines()) <= 80


@pytest.mark.parametrize("path", [p for p, _ in LEAVES], ids=" ".join)
def test_every_command_has_two_or_three_examples_that_fit_80_columns(path):
    text = help_text(*path)
    examples = text.split("Examples:\n", 1)[1].splitlines()
    commands = [line.strip() for line in examples if line.strip()]
    assert 2 <= len(commands) <= 3 and all(c.startswith(("attn ", "echo ")) for c in commands) and " ".join(path) in commands[0], commands
    assert max(map(len, text.splitlines())) <= 80


def test_command_lists_show_whole_summaries():
    for args in [(), ("heads",), ("vectors",), ("model",)]:
        text = help_text(*args)
        assert "..." not in text.split("Commands:", 1)[1]
    assert "Run attention heads over a sentence: Q/K/V, scaling, the causal\n              mask, softmax" in help_text()


@pytest.mark.parametrize("path,command", LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_placeholders_are_capitals_or_the_choices_and_defaults_are_shown(path, command):
    ctx = typer.Context(command, info_name="attn")
    for param in command.params:
        if getattr(param, "is_flag", False) or param.name == "help":
            continue
        metavar = param.make_metavar(ctx).removesuffix("...")
        assert PLACEHOLDER.match(metavar), f"{' '.join(path)} {param.name}: {metavar}"
        if isinstance(param, typer.core.TyperOption) and param.default is not None and not param.multiple:
            assert param.show_default is not False or "Default" in (param.help or ""), f"{param.name} hides its default"
    usage = help_text(*path).splitlines()[0]
    assert not re.search(r"[{}<>]", usage), usage


def test_stage_names_its_default():
    assert "Default: weights." in " ".join(help_text("inspect").split())


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_scripts_and_answers(shell):
    env = os.environ | {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    script = subprocess.run([sys.executable, "-m", "attn_cli", "--show-completion", shell], capture_output=True, text=True, env=env)
    assert script.returncode == 0 and "_ATTN_COMPLETE" in script.stdout
    answer = subprocess.run([sys.executable, "-m", "attn_cli"], capture_output=True, text=True,
                            env=env | {"_ATTN_COMPLETE": "complete_bash", "COMP_WORDS": "attn inspect x --mask ", "COMP_CWORD": "4"})
    assert answer.returncode == 0 and answer.stdout.split() == ["causal", "none"]


# --- errors that say what to do ---------------------------------------------------------------


@pytest.mark.parametrize("spec,hint", [("adjectiv", "adjective"), ("Adjective", "adjective"), ("CONTEXT", "context"), ("idenity", "identity")])
def test_an_unknown_head_name_gets_a_suggestion(spec, hint):
    result = runner.invoke(app, ["inspect", "a cat", "--head", spec])
    assert result.exit_code == 2 and f"unknown head {spec!r} (did you mean {hint!r}?)" in result.stderr


def test_a_name_far_from_every_head_gets_none():
    result = runner.invoke(app, ["inspect", "a cat", "--head", "xyz"])
    assert result.exit_code == 2 and "did you mean" not in result.stderr


@pytest.mark.parametrize("typo,meant", [("dgo", "dog"), ("teh", "the"), ("recieve", "receive"), ("catz", "cat"), ("accomodation", "accommodation")])
def test_a_misspelt_word_gets_the_likely_spelling(glove, typo, meant):
    assert glove.close_spelling(typo) == meant


def test_similarity_suggests_dog_for_dgo():
    result = runner.invoke(app, ["similarity", "cat", "dgo"])
    assert result.exit_code == 2 and result.stderr == "attn: unknown word: 'dgo' (did you mean 'dog'?)\n"


def test_no_suggestion_two_edits_from_a_short_word(glove):
    assert glove.close_spelling("qxzv") is None


def test_a_head_file_of_pickles_is_refused_without_numpys_advice(tmp_path):
    import numpy as np

    objects = np.array([{"a": 1}], dtype=object)
    np.savez(tmp_path / "h.npz", w_q=objects, w_k=objects, w_v=objects)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    for name in ("h.npz", "junk.npz"):
        result = runner.invoke(app, ["inspect", "a cat", "--head", str(tmp_path / name)])
        assert result.exit_code in (1, 2) and str(tmp_path / name) in result.stderr
        assert "allow_pickle" not in result.stderr and len(result.stderr.splitlines()) == 1


# --- help that guides ---------------------------------------------------------------------------


def complete(words: str, cwd=None) -> list[str]:
    """What bash completion offers after `words` (a trailing space: a new word)."""
    env = os.environ | {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1", "_ATTN_COMPLETE": "complete_bash",
                        "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1))}
    done = subprocess.run([sys.executable, "-m", "attn_cli"], capture_output=True, text=True, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.slow
def test_completion_offers_the_shipped_heads_sense_sets_and_link_sets(tmp_path):
    (tmp_path / "mine.npz").write_bytes(b"")
    (tmp_path / "links.tsv").write_text("")
    (tmp_path / "notes.txt").write_text("")
    heads = complete("attn inspect x --head ", cwd=tmp_path)
    assert {"identity", "random", "adjective", "context", "mine.npz"} <= set(heads) and "notes.txt" not in heads
    assert complete("attn inspect x --head ad", cwd=tmp_path) == ["adjective"]
    assert {"lesson", "links.tsv"} <= set(complete("attn inspect x --sense-set ", cwd=tmp_path))
    assert {"adjective", "determiner", "previous", "links.tsv"} <= set(complete("attn heads find ", cwd=tmp_path))
    assert complete("attn heads eval f --head cont", cwd=tmp_path) == ["context"]


@pytest.mark.parametrize("typo,meant", [("--jsn", "--json"), ("--tvs", "--tsv"), ("--hed", "--head"), ("--neighbours", "--neighbors"),
                                        ("--export-veiw", "--export-view"), ("--sens-set", "--sense-set")])
def test_typo_suggestions_cover_every_option_and_the_format_shorthands(typo, meant):
    result = runner.invoke(app, ["inspect", "a cat", typo])
    assert result.exit_code == 2 and f"attn: no such option: {typo} (did you mean {meant}" in result.stderr


def test_output_formats_have_a_heading_and_a_line_each_in_every_command():
    for path, command in LEAVES:
        if not any(p.name == "output" for p in command.params):
            continue
        text = help_text(*path)
        formats = text.split("Output format:\n", 1)[1]
        for flag in ("--format FORMAT", "--json ", "--jsonl ", "--csv ", "--tsv "):
            assert re.search(rf"^  {re.escape(flag)}", formats, re.M), (path, flag)


def test_inspect_help_is_grouped_into_panels():
    text = help_text("inspect")
    headings = [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert headings == ["Arguments", "Sentence and word vectors", "Heads", "Model (--model: a real checkpoint instead of the word vectors)",
                        "Views", "Output format", "Output files (besides stdout)"]
    model = text.split("Model (--model")[1].split("Views:")[0]
    assert "--layer" in model and "--words" in model and "--head " not in model and "--vectors" not in model
