"""Cold start of `attn`, against `python -c "import numpy"` measured in the same run.

Run by hand:  PYTHONPATH=. python tests/benchmarks/bench_start.py [--runs 21]

Targets: `softmax 1 2 3 --json` <= 1.25x the floor; the terminal view of
`inspect "<the lesson's sentence>"` (COLUMNS=100) <= 1.8x, its peak RSS <= 60 MiB.
Runs are interleaved (floor, softmax, inspect, floor, ...) so a busy machine slows all alike;
figures are medians. Python runs with the environment's PYTHONDONTWRITEBYTECODE as it is;
--bytecode gives every command (the floor too) a fresh bytecode cache (PYTHONPYCACHEPREFIX in a
scratch folder), written by one untimed run: the start of an installed `attn`, whose modules
are compiled once, not at every start.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runs import compiled_once, medians  # noqa: E402

LESSON = "A fluffy blue creature roamed the verdant forest."
INSPECT = f'attn inspect "{LESSON}"'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--bytecode", action="store_true", help="compile each module once (a cache in a scratch folder), as an installed attn does")
    args = parser.parse_args()
    py = sys.executable
    commands = {
        'python -c "import numpy"': [py, "-c", "import numpy"],
        "attn softmax 1 2 3 --json": [py, "-m", "attn_cli", "softmax", "1", "2", "3", "--json"],
        INSPECT: [py, "-m", "attn_cli", "inspect", LESSON],
    }
    env = {"COLUMNS": "100"}
    if args.bytecode:
        env = compiled_once(commands, env)
    found = medians(commands, args.runs, env=env)
    floor, floor_mib, _ = found['python -c "import numpy"']
    cached = "modules compiled once, cached" if args.bytecode else "bytecode as the environment has it"
    print(f"cold start, medians of {args.runs} interleaved runs (COLUMNS=100, stdout to a pipe; {cached})")
    targets = {"attn softmax 1 2 3 --json": 1.25, INSPECT: 1.8}
    for name, (seconds, mib, _) in found.items():
        ratio = f"{seconds / floor:5.2f}x floor" + (f" (target <= {targets[name]}x)" if name in targets else "")
        print(f"  {name:58} {seconds * 1000:6.0f} ms  {ratio:32}  peak RSS {mib:5.1f} MiB")
    print(f"  inspect's peak RSS: {found[INSPECT][1]:.1f} MiB (target <= 60 MiB; numpy alone {floor_mib:.1f} MiB)")


if __name__ == "__main__":
    main()
