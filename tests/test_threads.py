"""--threads N and ATTN_THREADS: on every command that runs a model, the BLAS threads of its passes (io.blas); a bad
number refused in one line."""

import json
import os
import subprocess
import sys

import pytest

from attn_cli.io import blas
from tests import checkpoints

LLAMA = checkpoints.FIXTURES / "tiny-llama"
MODEL_COMMANDS = [  # every command that runs a model's forward passes, with arguments it would run on
    ["inspect", "the cat sat", "--model", LLAMA],
    ["predict", "the cat sat", "--model", LLAMA],
    ["explain", "the cat sat", "--model", LLAMA],
    ["patch", "the cat sat", "the sat sat", "--model", LLAMA, "--target", "id:5", "--versus", "id:6"],
    ["generate", "the cat sat", "--model", LLAMA, "--steps", "1"],
    ["heads", "detect", "the cat sat", "--model", LLAMA],
    ["heads", "find", "adjective", "--model", LLAMA],
    ["heads", "stats", "-", "--model", LLAMA],
    ["senses", "eval", "-", "--model", LLAMA],
    ["direction", "the cats", "the cat", "--model", LLAMA],
    ["compare", "the cat sat", "the dog sat", "--model", LLAMA],
    ["circuit", "1.2", "--model", LLAMA, "--text", "the cat sat"],
    ["heads", "compose", "--model", LLAMA],
]


class FakeBLAS:
    """Stands for NumPy's OpenBLAS: remembers every number it is set to."""

    def __init__(self):
        self.default, self.now, self.asked = 2, 2, []

    def get(self) -> int:
        return self.now

    def set(self, n: int) -> None:
        self.asked.append(n)
        self.now = n


@pytest.fixture
def fake_blas(monkeypatch):
    fake = FakeBLAS()
    monkeypatch.setattr(blas, "_library", lambda: fake)
    monkeypatch.setattr(blas, "asked", None)  # put back after the test: --threads sets it for the process
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "ATTN_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return fake


@pytest.mark.parametrize("command", MODEL_COMMANDS, ids=lambda c: " ".join(map(str, c[:2])))
def test_every_command_that_runs_a_model_takes_threads(run, command):
    name = command[:2] if command[0] in ("heads", "senses") else command[:1]
    result = run(*name, "--help")
    assert result.exit_code == 0 and "--threads" in result.stdout and "ATTN_THREADS" in result.stdout


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "abc", "two"])
@pytest.mark.parametrize("command", MODEL_COMMANDS[:2] + MODEL_COMMANDS[3:4], ids=lambda c: c[0])
def test_a_bad_number_of_threads_is_refused_in_one_line(run, fake_blas, command, value):
    result = run(*command, f"--threads={value}")
    assert result.exit_code == 2
    assert result.stdout == "" and result.stderr.splitlines()[-1] == f"attn: --threads {value}: give a whole number of BLAS threads, 1 or more"
    assert fake_blas.asked == []  # refused before any pass


@pytest.mark.parametrize("value", ["0", "abc", " -3"])
def test_a_bad_attn_threads_is_refused_in_one_line(run, fake_blas, value):
    result = run("predict", "the cat sat", "--model", LLAMA, env={"ATTN_THREADS": value})
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == f"attn: ATTN_THREADS={value}: give a whole number of BLAS threads, 1 or more"


@pytest.mark.parametrize("command", MODEL_COMMANDS[:5], ids=lambda c: c[0])
def test_threads_reach_blas_for_every_pass(run, fake_blas, command):
    result = run(*command, "--threads", "3", "--json")
    assert result.exit_code == 0, result.stderr
    assert fake_blas.asked and set(fake_blas.asked) == {3}


@pytest.mark.parametrize("command", MODEL_COMMANDS[-2:], ids=lambda c: c[0])
def test_threads_reach_blas_for_the_commands_that_read_weights_alone(run, fake_blas, command):
    result = run(*command, "--threads", "3", "--json")
    assert result.exit_code == 0, result.stderr
    assert fake_blas.asked and set(fake_blas.asked) == {3}


def test_attn_threads_reaches_blas_and_threads_wins_over_it(run, fake_blas):
    assert run("predict", "the cat sat", "--model", LLAMA, "--json", env={"ATTN_THREADS": "4"}).exit_code == 0
    assert set(fake_blas.asked) == {4}
    fake_blas.asked.clear()
    assert run("predict", "the cat sat", "--model", LLAMA, "--json", "--threads", "1", env={"ATTN_THREADS": "4"}).exit_code == 0
    assert set(fake_blas.asked) == {1}


def test_without_threads_a_short_text_gets_one_thread_and_a_long_one_no_more_than_the_idle_cores(run, fake_blas, monkeypatch):
    assert run("predict", "the cat sat", "--model", LLAMA, "--json").exit_code == 0
    assert set(fake_blas.asked) == {1}
    monkeypatch.setattr(blas, "idle_cores", lambda: 1)  # the cores busy: a long pass gets one thread too
    blas.long_default.cache_clear()
    try:
        assert blas.threads_for(blas.SMALL + 1) == 1
        monkeypatch.setattr(blas, "idle_cores", lambda: 8)  # idle: OpenBLAS's own default, never more
        blas.long_default.cache_clear()
        assert blas.threads_for(blas.SMALL + 1) == fake_blas.default
    finally:
        blas.long_default.cache_clear()


def test_idle_cores_are_the_cores_less_the_load(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    for load, idle in ((0.0, 2), (0.6, 1), (1.4, 1), (5.5, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert blas.idle_cores() == idle


REAL = """
import json, sys
from attn_cli.io import blas
library = blas._library()
if library is None:
    print(json.dumps(None))
else:
    blas.choose(int(sys.argv[1]))
    print(json.dumps([blas.threads_for(10), library.get(), blas.threads_for(1000), library.get()]))
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_set_numpys_own_openblas(threads):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    found = json.loads(subprocess.run([sys.executable, "-c", REAL, str(threads)], capture_output=True, text=True, env=env, check=True).stdout)
    if found is None:
        pytest.skip("NumPy's BLAS here is not OpenBLAS")
    assert found == [threads] * 4
