"""Timing new processes for the benchmarks: wall time and peak RSS of each run, medians of interleaved runs."""

import os
import statistics
import subprocess
import tempfile
import time


def measured(cmd: list, env: dict | None = None) -> tuple[float, float, bytes]:
    """(seconds, peak RSS in MiB, stdout) of one new process, RSS from wait4's rusage (Linux: KiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen([str(c) for c in cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=None if env is None else os.environ | env)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))[:200]} failed ({proc.returncode}): {err.decode()[-500:]}")
    return seconds, usage.ru_maxrss / 1024, out


def medians(commands: dict, runs: int, env: dict | None = None) -> dict:
    """name -> (median seconds, median peak MiB, last stdout), the commands run in turn `runs` times."""
    times = {name: [] for name in commands}
    rss = {name: [] for name in commands}
    outs = {}
    for _ in range(runs):
        for name, cmd in commands.items():
            seconds, mib, outs[name] = measured(cmd, env)
            times[name].append(seconds)
            rss[name].append(mib)
    return {name: (statistics.median(times[name]), statistics.median(rss[name]), outs[name]) for name in commands}


def compiled_once(commands: dict, env: dict | None = None) -> dict:
    """env for commands whose modules are compiled once, as an installed program's are: a fresh
    bytecode cache (PYTHONPYCACHEPREFIX in a scratch folder), written by one untimed run of each."""
    env = (env or {}) | {"PYTHONPYCACHEPREFIX": tempfile.mkdtemp(prefix="attn-bytecode-"), "PYTHONDONTWRITEBYTECODE": ""}  # empty: written
    medians(commands, 1, env=env)
    return env


def answer(python: str, code: str, argv: list, threads: int, path: str | None) -> dict:
    """The JSON a program (`python -c code argv...`) prints last, run with `threads` BLAS threads; `path`: the
    PYTHONPATH it gets (attn's checkout), None for a peer, which must not see it."""
    import json
    import sys

    env = os.environ | {v: str(threads) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    if path is None:
        env.pop("PYTHONPATH", None)
    else:
        env["PYTHONPATH"] = path
    done = subprocess.run([python, "-c", code, *map(str, argv)], capture_output=True, text=True, env=env, timeout=7200)
    if done.returncode != 0:
        sys.exit(f"{python}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
