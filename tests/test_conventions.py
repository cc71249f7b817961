"""Conventions every command follows, checked on the real `attn` console script in a subprocess:
--version, JSON only on stdout, no ANSI codes when piped, quiet exit on a closed pipe,
one-line errors."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attn_cli import __version__

ATTN = shutil.which("attn", path=str(Path(sys.executable).parent)) or shutil.which("attn")
pytestmark = pytest.mark.skipif(ATTN is None, reason="the attn console script is not installed")


def piped_env(**extra) -> dict:
    """The environment of a pipeline on a colour terminal: only stdout/stderr being pipes stops colour."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "ATTN_VECTORS", "PY_COLORS")}
    env.update(TERM="xterm-256color", COLUMNS="100", **extra)
    return env


def attn(*args, **env) -> subprocess.CompletedProcess:
    return subprocess.run([ATTN, *map(str, args)], capture_output=True, text=True, env=piped_env(**env), timeout=60)


def test_version():
    result = attn("--version")
    assert result.returncode == 0
    assert result.stdout == f"attn {__version__}\n"
    assert result.stderr == ""


def test_json_is_only_data_on_stdout():
    result = attn("vectors", "info", "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["keys"] == 100_000
    assert result.stderr == ""


@pytest.mark.parametrize("no_color", [None, "1"])
@pytest.mark.parametrize("args", [("vectors", "info"), ("--help",), ("vectors", "info", "/no/such/file")])
def test_no_ansi_codes_when_piped(args, no_color):
    result = attn(*args, **({"NO_COLOR": no_color} if no_color else {}))
    assert result.stdout or result.stderr
    assert "\x1b" not in result.stdout
    assert "\x1b" not in result.stderr


def test_human_output_when_piped_is_plain_text():
    result = attn("vectors", "info")
    assert result.returncode == 0, result.stderr
    assert "100,000" in result.stdout and "float32" in result.stdout


@pytest.mark.parametrize("args", [("vectors", "info", "--json"), ("vectors", "info"), ("--version",)])
def test_closed_pipe_exits_quietly(args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before attn writes a byte, as after `| head -c0`
    try:
        result = subprocess.run([ATTN, *args], stdout=write_end, stderr=subprocess.PIPE, env=piped_env(), timeout=60)
    finally:
        os.close(write_end)
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "Broken pipe" not in stderr
    assert stderr == ""
    assert result.returncode in (0, 1)  # quiet either way; Click ends a broken pipe with 1


def test_pipe_closed_early_by_the_reader():
    pipeline = subprocess.run(
        f"'{ATTN}' vectors info --json | head -c1", shell=True, capture_output=True, text=True, env=piped_env(), timeout=60
    )
    assert pipeline.stdout == "{"
    assert "Traceback" not in pipeline.stderr and "BrokenPipe" not in pipeline.stderr


@pytest.mark.parametrize(
    "args, code",
    [
        (("vectors", "info", "/no/such/vectors.txt"), 1),
        (("vectors", "convert", "/no/such/vectors.txt", "/tmp/never-written-by-attn"), 1),
    ],
)
def test_errors_are_one_line_on_stderr(args, code):
    result = attn(*args)
    assert result.returncode == code
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("attn: ") and "/no/such/vectors.txt" in lines[0]


def test_bad_usage_exits_2():
    result = attn("vectors", "info", "--limit", "0")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr and "--limit" in result.stderr


def test_python_dash_m_works():
    result = subprocess.run(
        [sys.executable, "-m", "attn_cli", "--version"], capture_output=True, text=True, env=piped_env(), timeout=60
    )
    assert result.stdout == f"attn {__version__}\n"


def test_the_command_line_collects_garbage_less_often():
    """`python -m attn_cli` and the `attn` script (pyproject.toml) start through attn_cli.__main__.run,
    which raises the collector's threshold for a short process and freezes every object once the
    command is done (the exit does not collect them again); importing attn_cli leaves both alone."""
    import gc
    import tomllib

    from attn_cli.__main__ import START_GC_THRESHOLD

    scripts = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["attn"] == "attn_cli.__main__:run"
    code = ("import atexit, gc, sys\nimport attn_cli.__main__, attn_cli.cli\n"
            "print(gc.get_threshold()[0], gc.get_freeze_count() > 0, file=sys.stderr)\n"
            "atexit.register(lambda: print(gc.get_threshold()[0], gc.get_freeze_count() > 0, file=sys.stderr))\n"
            "sys.argv = ['attn', '--version']\nattn_cli.__main__.run()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=piped_env(), timeout=60)
    assert result.stdout == f"attn {__version__}\n"
    assert result.stderr.split() == [str(gc.get_threshold()[0]), "False", str(START_GC_THRESHOLD), "True"]


def test_force_color_colours_a_pipe_for_a_pager():
    """docs/conventions.md: `FORCE_COLOR=1 attn ... | less -R` keeps the colours."""
    result = attn("inspect", "the cat sat", "--head", "adjective", FORCE_COLOR="1")
    assert result.returncode == 0 and "\x1b[" in result.stdout and "\x1b" not in attn("inspect", "the cat sat").stdout
