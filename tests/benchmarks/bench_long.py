"""Long texts on SmolLM2: time and peak memory of four commands at n = 512, 1,024, 2,048 and 4,096 tokens, and how they grow.

    python tests/benchmarks/bench_long.py [--lengths 512 1024 2048 4096] [--threads N]

The commands, over the first n tokens of tests/fixtures/long-document.txt (repository prose):
    predict TEXT --json;   inspect TEXT --head 3.2 --json;   heads detect --text FILE --json;   heads stats FILE --json
Each runs in a new process. Printed per run: wall seconds, CPU seconds (user + system, from wait4), peak private memory
(RssAnon, sampled from /proc every 5 ms) and peak resident memory (ru_maxrss: the model file's pages read through its map
besides), and per command the growth exponent: the least-squares slope of log(seconds) and of log(private memory) on
log(n). An exponent of 1 is linear in n, 2 quadratic.

OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are cleared for the runs (a user's machine sets neither); the BLAS kernel
NumPy uses is printed (threadpoolctl's report where it is installed, else numpy's build configuration).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import checkpoints  # noqa: E402
from tests.long_text import long_text  # noqa: E402


def blas_kernel() -> str:
    try:
        from threadpoolctl import threadpool_info

        return "; ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} ({i.get('num_threads')} threads)"
                         for i in threadpool_info())
    except ImportError:
        probe = "import numpy, io, contextlib; s = io.StringIO()\nwith contextlib.redirect_stdout(s): numpy.show_config()\nprint(s.getvalue())"
        text = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=clean_env(1)).stdout
        found = [line.strip() for line in text.splitlines() if any(k in line for k in ("name:", "openblas configuration", "Detected"))]
        return "numpy.show_config: " + "; ".join(found[:6])


def clean_env(threads: int | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    if threads is not None:
        env.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    return env


def run(cmd: list[str], env: dict) -> dict:
    """Wall and CPU seconds, peak RssAnon and ru_maxrss (MiB) of one new process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    peak, done = [0], threading.Event()

    def sample():  # until wait4 has the exit status (polling the process would reap it first)
        status = Path(f"/proc/{proc.pid}/status")
        while not done.is_set():
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("RssAnon:"):
                        peak[0] = max(peak[0], int(line.split()[1]))
            except (OSError, ValueError):
                pass
            time.sleep(0.005)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    watcher.join()
    err = proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)[:160]} failed: {err[-400:]}")
    return {"wall": time.perf_counter() - start, "cpu": usage.ru_utime + usage.ru_stime, "private": peak[0] / 1024,
            "resident": usage.ru_maxrss / 1024}


def slope(ns: list[int], values: list[float]) -> float:
    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    parser.add_argument("--threads", type=int, default=None, help="OPENBLAS_NUM_THREADS for the runs (default: left as it is)")
    args = parser.parse_args()
    from attn_cli.models import loading

    path = str(checkpoints.smollm2_gguf())
    model = loading.load(path)
    env = clean_env(args.threads)
    attn = [sys.executable, "-m", "attn_cli"]
    print(f"BLAS: {blas_kernel()}")
    print(f"OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE cleared; OPENBLAS_NUM_THREADS={env.get('OPENBLAS_NUM_THREADS', 'unset')}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for n in args.lengths:
            text = long_text(model, n)
            tokens = len(model.tokenize(text).ids)
            file = Path(scratch) / f"text-{n}.txt"
            file.write_text(text + "\n", encoding="utf-8")
            commands = {
                "predict": [*attn, "predict", text, "--model", path, "--json"],
                "inspect --head 3.2": [*attn, "inspect", text, "--model", path, "--head", "3.2", "--json"],
                "heads detect": [*attn, "heads", "detect", "--model", path, "--text", str(file), "--json"],
                "heads stats": [*attn, "heads", "stats", str(file), "--model", path, "--json"],
            }
            for name, cmd in commands.items():
                r = run(cmd, env) | {"n": tokens}
                results.setdefault(name, []).append(r)
                print(f"n = {tokens:>5,}  {name:<20} {r['wall']:7.1f} s wall  {r['cpu']:7.1f} s CPU  {r['private']:7.0f} MiB private  "
                      f"{r['resident']:7.0f} MiB resident", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    if len(args.lengths) > 1:
        print("growth exponents (slope of log-log over n):")
        for name, rows in results.items():
            ns = [r["n"] for r in rows]
            print(f"  {name:<20} CPU seconds {slope(ns, [r['cpu'] for r in rows]):.2f}   wall {slope(ns, [r['wall'] for r in rows]):.2f}   "
                  f"private memory {slope(ns, [r['private'] for r in rows]):.2f}")


if __name__ == "__main__":
    main()
