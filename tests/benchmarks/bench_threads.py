"""BLAS threads on busy cores: `attn predict` over a long text on SmolLM2 at --threads 1 and 2, and with attn's default,
while other processes keep cores busy.

    python tests/benchmarks/bench_threads.py [--tokens 1024] [--busy 1] [--rounds 1] [--threads 1 2 0]

The text: the first --tokens tokens of tests/fixtures/long-document.txt. Each run is a new process
(`attn predict TEXT --json --threads N`; 0: no --threads, attn's own choice) while --busy other processes spin
(a NumPy loop of small matrix products on one BLAS thread each, started before the runs and stopped after them).
The modes alternate, --rounds times, so a busy spell of the machine falls on each. Printed: each run's wall and
CPU seconds, the medians, and the ratio of 2 threads' wall time to 1 thread's.

It clears OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for itself (it starts again without them, as a user's machine
has neither) and prints the BLAS kernel NumPy runs (threadpoolctl's report, the `bench` extra; else numpy's
build configuration).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CLEARED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(k in os.environ for k in CLEARED):  # before NumPy loads OpenBLAS: it reads them once, at load
    os.execve(sys.executable, [sys.executable, *sys.argv], {k: v for k, v in os.environ.items() if k not in CLEARED} | {"ATTN_BENCH_CLEARED": " ".join(k for k in CLEARED if k in os.environ)})

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import checkpoints  # noqa: E402
from tests.long_text import long_text  # noqa: E402

BUSY = """
import numpy as np
a = np.random.default_rng(0).standard_normal((256, 256), dtype=np.float32)
while True:
    a = np.tanh(a @ a.T * 0.01)
"""


def kernel() -> str:
    try:
        import numpy  # noqa: F401
        from threadpoolctl import threadpool_info

        return "; ".join(f"{i.get('internal_api')} {i.get('version')}, kernel {i.get('architecture')}, "
                         f"{i.get('num_threads')} threads by default" for i in threadpool_info())
    except ImportError:
        import numpy

        blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')} (pip install threadpoolctl for its kernel)"


def timed(cmd: list[str], env: dict) -> tuple[float, float]:
    """(wall, CPU) seconds of one new process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)[:160]} failed: {err.decode()[-400:]}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1024, help="tokens of the long document")
    parser.add_argument("--busy", type=int, default=1, help="competing busy processes")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each mode, alternating")
    parser.add_argument("--threads", nargs="*", type=int, default=[1, 2, 0], help="--threads of each mode (0: attn's default)")
    args = parser.parse_args()
    cleared = os.environ.pop("ATTN_BENCH_CLEARED", "")
    print(f"environment: {cleared + ' cleared' if cleared else 'no OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE set'}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} before the busy processes")
    print(f"  numpy: {kernel()}")
    from attn_cli.models.loading import load

    path = checkpoints.smollm2_gguf()
    text = long_text(load(str(path)), args.tokens)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "ATTN_THREADS")}
    busy_env = env | {"OPENBLAS_NUM_THREADS": "1"}
    spinners = [subprocess.Popen([sys.executable, "-c", BUSY], env=busy_env) for _ in range(args.busy)]
    walls: dict[int, list[float]] = {t: [] for t in args.threads}
    try:
        time.sleep(2)
        print(f"SmolLM2-135M-Instruct Q4_1, `attn predict TEXT --json` over {args.tokens:,} tokens, {args.busy} busy process(es); "
              f"load average {os.getloadavg()[0]:.1f} at the start")
        for r in range(args.rounds):
            for threads in args.threads:
                cmd = [sys.executable, "-m", "attn_cli", "predict", text, "--model", str(path), "--json"]
                cmd += ["--threads", str(threads)] if threads else []
                wall, cpu = timed(cmd, env)
                walls[threads].append(wall)
                print(f"  round {r + 1}, {'--threads ' + str(threads) if threads else 'default':<11}: {wall:6.1f} s wall, {cpu:6.1f} s CPU", flush=True)
    finally:
        for s in spinners:
            s.kill()
            s.wait()
    print("medians:")
    for threads, times in walls.items():
        print(f"  {'--threads ' + str(threads) if threads else 'default':<11}: {statistics.median(times):6.1f} s")
    if 1 in walls and 2 in walls:
        print(f"2 threads / 1 thread: {statistics.median(walls[2]) / statistics.median(walls[1]):.2f}x")
    if 1 in walls and 0 in walls:
        print(f"default / 1 thread: {statistics.median(walls[0]) / statistics.median(walls[1]):.2f}x")


if __name__ == "__main__":
    main()
