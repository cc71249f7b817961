"""Cold start of attn against `python -c "import numpy"`, in one run: `softmax 1 2 3`, the terminal view of
`inspect` on the lesson's sentence, and `inspect --model` on the tiny GPT-2 (--json).

Run by hand (not a test):  python tests/benchmarks/bench_revisions.py [--runs 30] [--before REV]

With --before REV (a commit, branch or tag), that revision's attn_cli and data/ are unpacked (git archive)
into a temporary folder and timed too, so a change to the start-up path is compared with what came
before it on the same machine in the same minute, command by command (the ratio this tree / REV). The
commands take turns, run by run, so a machine that slows down mid-run slows them all alike. All
figures are medians.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LESSON = "A fluffy blue creature roamed the verdant forest."
TINY = ROOT / "tests" / "fixtures" / "models" / "tiny-gpt2"
COMMANDS = {
    "attn softmax 1 2 3": ["-m", "attn_cli", "softmax", "1", "2", "3"],
    "attn inspect LESSON (terminal view)": ["-m", "attn_cli", "inspect", LESSON],
    "attn inspect LESSON --model tiny-gpt2 --json": ["-m", "attn_cli", "inspect", LESSON, "--model", str(TINY), "--json"],
}


def unpack(rev: str, into: Path) -> Path:
    """attn_cli as it was at `rev`, in a folder of its own."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "attn_cli", "data"], check=True, capture_output=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(into, filter="data")
    return into


def timed(argv: list[str], env: dict, cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env, cwd=cwd)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30, help="new processes per command")
    parser.add_argument("--before", metavar="REV", help="also time attn_cli as it was at this git revision")
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)} | {"COLUMNS": "100"}
    trees = {"this tree": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        if args.before:
            trees[args.before] = unpack(args.before, Path(tmp) / "old")  # not tmp itself, which is the commands' current folder
        commands = {'python -c "import numpy" (floor)': ([sys.executable, "-c", "import numpy"], env)}
        for label, argv in COMMANDS.items():
            for tree, path in trees.items():
                commands[f"{label} ({tree})"] = ([sys.executable, *argv], env | {"PYTHONPATH": str(path)})
        for argv, run_env in commands.values():  # warm the page cache
            timed(argv, run_env, tmp)
        times = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (argv, run_env) in commands.items():
                times[name].append(timed(argv, run_env, tmp))  # `-m` reads the current folder first: not the repository's
    medians = {name: statistics.median(t) for name, t in times.items()}
    floor = next(iter(medians.values()))
    print(f"cold start, median of {args.runs} new processes each (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')})")
    for name, seconds in medians.items():
        spread = statistics.quantiles(times[name], n=4)
        print(f"  {name:<58} {seconds * 1000:7.1f} ms  (quartiles {spread[0] * 1000:.1f}-{spread[2] * 1000:.1f})  {seconds / floor:5.2f} x floor")
    if args.before:
        for label in COMMANDS:
            print(f"  {label:<58} this tree / {args.before}: {medians[f'{label} (this tree)'] / medians[f'{label} ({args.before})']:.3f}")


if __name__ == "__main__":
    main()
