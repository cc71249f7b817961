"""Running `attn` as a hostile user would, and what it must never do: the oracle of the fuzz,
corrupt-file and hardening tests.

- ``attn(*args, stdin=b"", env=None)``: the real entry point (`attn_cli.cli.main`, as the
  console script runs it) in this process, with argv, stdin bytes and environment given,
  every Python warning recorded; returns an ``Outcome``.
- ``attn_process(*args, ...)``: the installed console script in a subprocess, for what only a
  real process shows (closed descriptors, argument bytes, the locale, signals).
- ``check(outcome)``: exit code 0, 1 or 2; no traceback, warning or "internal error"; stdout
  valid UTF-8 without ANSI codes; every stderr line an ``attn: ...`` line (or Click's usage
  line), the last one when the command failed, with no control character in it; CSV/TSV
  without control characters but its own line breaks and tabs; JSON output that parses.
- ``softmax_reference(values, t)``: softmax(x / T) in exact decimal arithmetic, no NumPy.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from pathlib import Path

from typer.testing import CliRunner

from attn_cli.cli import main

ATTN = shutil.which("attn", path=str(Path(sys.executable).parent)) or shutil.which("attn")
TAKES_VALUE = {  # every option of every command that takes a value: what follows it is not a flag
    "--vectors", "--limit", "--oov", "--head", "--model", "--seed", "--layer", "--mask", "--stage", "--focus",
    "--neighbors", "--sense", "--sense-set", "--max-tokens", "--svg", "--html", "--temperature", "-t", "--probe",
    "-p", "--probes-file", "--top", "-k", "--method", "--d-k", "--steps", "--holdout", "--sort",
}  # fmt: skip
CONTROLS = {chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))}  # C0, DEL and C1
STDERR_LINES = ("attn: ", "Usage: ", "converted ")  # a message, Click's usage line, `vectors convert`'s summary


@dataclass
class Outcome:
    args: list[str]
    stdin: bytes
    code: int
    stdout: bytes
    stderr: str
    warnings: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        stdin = f" <<< {self.stdin[:200]!r}" if self.stdin else ""
        return (f"attn {shlex.join(self.args)}{stdin}\nexit {self.code}\n--- stderr:\n{self.stderr[-2000:]}\n"
                f"--- stdout:\n{self.stdout[:2000]!r}\n--- warnings: {self.warnings}")

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8")


def attn(*args: str, stdin: bytes = b"", env: dict | None = None) -> Outcome:
    """The console script's entry point, in this process: argv, stdin and environment as given."""
    args = [str(a) for a in args]
    saved_argv = sys.argv
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with CliRunner().isolation(input=stdin, env={"COLUMNS": "100", "ATTN_DEBUG": None, **(env or {})}) as (out, err, _):
            sys.argv = ["attn", *args]
            try:
                main()
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            finally:
                sys.argv = saved_argv
                sys.stdout.flush()
                sys.stderr.flush()
            stdout, stderr = out.getvalue(), err.getvalue().decode("utf-8", "replace")
    return Outcome(args, stdin, code, stdout, stderr, [f"{w.category.__name__}: {w.message}" for w in caught])


def attn_process(*args, stdin: bytes | None = b"", env: dict | None = None, timeout: float = 60, **popen) -> Outcome:
    """The installed `attn` in a subprocess (argument bytes pass as they are)."""
    base = {k: v for k, v in os.environ.items() if k not in ("ATTN_VECTORS", "FORCE_COLOR", "NO_COLOR", "ATTN_DEBUG")}
    done = subprocess.run([ATTN, *args], input=stdin, capture_output=True, env={**base, "COLUMNS": "100", **(env or {})},
                          timeout=timeout, **popen)
    shown = [a.decode("utf-8", "surrogateescape") if isinstance(a, bytes) else str(a) for a in args]
    return Outcome(shown, stdin or b"", done.returncode, done.stdout, done.stderr.decode("utf-8", "replace"))


def flag_given(args: list[str], flag: str) -> bool:
    """Whether `flag` stands in argv as a flag (not as the value of an option that takes one)."""
    return any(a == flag and (i == 0 or args[i - 1] not in TAKES_VALUE) for i, a in enumerate(args))


def check(o: Outcome) -> Outcome:
    """Everything `attn` promises whatever it was given; returns the outcome for further checks."""
    assert o.code in (0, 1, 2), o
    assert not o.warnings, o
    for bad in ("Traceback", "Warning", "warning:", "internal error"):
        assert bad not in o.stderr, o
    try:
        text = o.text
    except UnicodeDecodeError:
        raise AssertionError(f"stdout is not valid UTF-8\n{o}") from None
    assert "\x1b" not in text, o  # not a terminal: no ANSI codes, and user text cannot smuggle any in
    assert not set(o.stderr) & CONTROLS - {"\n"}, o  # messages escape what they quote: one line each, nothing for the terminal
    for fmt, delimiter in (("--csv", ","), ("--tsv", "\t")):
        if flag_given(o.args, fmt):
            assert not set(text) & CONTROLS - {"\n", delimiter}, o  # cells escape control characters
    lines = [line for line in o.stderr.split("\n") if line]
    help_asked = {"-h", "--help"} & set(o.args)
    missing_command = o.code == 2 and lines and lines[-1].startswith("attn: missing command")
    if not help_asked and not missing_command:
        for line in lines:
            assert line.startswith(STDERR_LINES), f"a stderr line that is not an attn: message: {line!r}\n{o}"
    if o.code != 0:
        assert lines and lines[-1].startswith("attn: "), o
    if help_asked or "--version" in o.args:
        return o
    if flag_given(o.args, "--jsonl") and text.strip():
        for line in text.splitlines():
            json.loads(line)
    elif flag_given(o.args, "--json") and (text.strip() or o.code == 0):
        try:
            json.loads(text)
        except ValueError:
            raise AssertionError(f"--json printed something that is not JSON\n{o}") from None
    return o


def one_line(outcome: Outcome, code: int, *parts: str) -> Outcome:
    """check(), then: exit `code` and one `attn: ...` line on stderr holding each of `parts`."""
    check(outcome)
    assert outcome.code == code, outcome
    assert outcome.stderr.count("\n") == 1 and outcome.stderr.startswith("attn: "), outcome
    for part in parts:
        assert part in outcome.stderr, outcome
    return outcome


def softmax_reference(values: list[float], temperature: float) -> list[float]:
    """softmax(x / T) in 60-digit decimals: +inf values share all the mass, -inf get 0, T = 0 is argmax."""
    top_inf = [v == math.inf for v in values]
    if any(top_inf):
        return [float(t) / sum(top_inf) for t in top_inf]
    finite = [v for v in values if math.isfinite(v)]
    top = max(finite)
    if temperature == 0:
        winners = [v == top for v in values]
        return [w / sum(winners) for w in winners]
    with localcontext() as ctx:
        ctx.prec, ctx.Emin, ctx.Emax = 60, -10**9, 10**9
        exps = [((Decimal(v) - Decimal(top)) / Decimal(temperature)).exp() if math.isfinite(v) else Decimal(0) for v in values]
        total = sum(exps)
        return [float(e / total) for e in exps]


def agrees(probabilities: list[float], reference: list[float]) -> bool:
    return all(math.isclose(p, r, rel_tol=1e-9, abs_tol=1e-300) for p, r in zip(probabilities, reference, strict=True))
