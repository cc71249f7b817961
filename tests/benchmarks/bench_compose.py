"""`attn heads compose` and `attn circuit` on the real models: wall time and peak private memory, beside their floors.

    python tests/benchmarks/bench_compose.py [--threads N]

Each command runs in a new process (bench_long.run: wall and CPU seconds from wait4, peak RssAnon sampled from /proc
every 5 ms, ru_maxrss). Floors, from issue 52: `heads compose` on SmolLM2's 270 heads in at most 30 s on 2 cores, and
Gemma 3's 262,144-token vocabulary under 1 GiB of private memory (`circuit`, which reads the whole output head, and
`heads compose`). The load average is printed: on cores that other processes share, a wall time says little alone;
the CPU seconds (user + system) of a one-thread run are what its wall time is on an idle core (`--threads 1`).
"""

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import checkpoints  # noqa: E402
from tests.benchmarks.bench_long import blas_kernel, clean_env, run  # noqa: E402

SECONDS = 30.0  # heads compose on SmolLM2
PRIVATE_MIB = 1024.0  # Gemma 3's vocabulary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=None, help="OPENBLAS_NUM_THREADS for the runs (default: left as it is)")
    args = parser.parse_args()
    env = clean_env(args.threads)
    attn = [sys.executable, "-m", "attn_cli"]
    smollm2, gemma3 = str(checkpoints.smollm2_gguf()), str(checkpoints.gemma3_gguf())
    print(f"BLAS: {blas_kernel()}")
    print(f"OPENBLAS_NUM_THREADS={env.get('OPENBLAS_NUM_THREADS', 'unset')}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    commands = {
        "heads compose SmolLM2": ([*attn, "heads", "compose", "--model", smollm2, "--json"], SECONDS, None),
        "circuit 17.8 SmolLM2": ([*attn, "circuit", "17.8", "--model", smollm2, "--json"], None, None),
        "heads compose Gemma 3": ([*attn, "heads", "compose", "--model", gemma3, "--json"], None, PRIVATE_MIB),
        "circuit 5.0 Gemma 3": ([*attn, "circuit", "5.0", "--model", gemma3, "--json"], None, PRIVATE_MIB),
    }
    failed = []
    for name, (cmd, seconds, private) in commands.items():
        r = run(cmd, env)
        floors = []
        if seconds is not None:
            floors.append(f"floor {seconds:.0f} s: {'ok' if r['wall'] <= seconds else 'OVER'}")
            failed += [name] if r["wall"] > seconds else []
        if private is not None:
            floors.append(f"floor {private:.0f} MiB private: {'ok' if r['private'] <= private else 'OVER'}")
            failed += [name] if r["private"] > private else []
        print(f"{name:<24} {r['wall']:6.1f} s wall  {r['cpu']:6.1f} s CPU  {r['private']:6.0f} MiB private  {r['resident']:6.0f} MiB resident  "
              + "; ".join(floors), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    if failed:
        raise SystemExit(f"over a floor: {', '.join(failed)}")


if __name__ == "__main__":
    main()
