"""Cold `attn predict` on SmolLM2 against `python -c "import torch, transformers"`, in one run, with the default threads.

Run by hand (not a test):

    .venv/bin/python tests/benchmarks/bench_predict_start.py --peer-python /work/venv-oracle/bin/python [--runs 9]

Each command is a new process, the two interleaved run by run (a busy spell of the machine falls on both); the
figures are medians. Target: attn / torch import <= 0.25x. Bytecode: every command gets a fresh bytecode cache
(PYTHONPYCACHEPREFIX in a scratch folder) written by one untimed run, as an installed program's modules are
compiled once; torch's and transformers' own .pyc files are the ones their install wrote. Then where attn's time
goes, in one process (the same environment): imports, the file's header, the tokenizer's build, the forward pass
and the rest of predict.
"""

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))
from runs import compiled_once, measured, medians  # noqa: E402

from tests import checkpoints  # noqa: E402

PROMPT = "The capital of France is"
PHASES = """
import json, sys, time
t = [time.perf_counter()]
from attn_cli.models import loading
from attn_cli.analysis.predict import PredictSettings, predict
t.append(time.perf_counter())
source = loading.open_source(sys.argv[1]); t.append(time.perf_counter())
source.tokenizer(); t.append(time.perf_counter())
model = loading.load(sys.argv[1]); t.append(time.perf_counter())
tokens = model.tokenize(sys.argv[2]); model.forward(tokens); t.append(time.perf_counter())
predict(model, sys.argv[2], PredictSettings()); t.append(time.perf_counter())
names = ["imports", "header (gguf.load)", "tokenizer build", "loading.load (header + tokenizer again)", "first forward pass", "predict (a second pass)"]
print(json.dumps({name: b - a for name, a, b in zip(names, t, t[1:])}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True, help="a Python with torch and transformers")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--baseline-python", help="also time `attn predict` run by this Python (another checkout's attn), in the same alternation")
    args = parser.parse_args()
    model = str(checkpoints.smollm2_gguf())
    predict = "attn predict --json (cold)"
    peer = 'python -c "import torch, transformers"'
    commands = {predict: [sys.executable, "-m", "attn_cli", "predict", PROMPT, "--model", model, "--json"],
                peer: [args.peer_python, "-c", "import torch, transformers"]}
    baseline = f"attn predict --json (cold), {args.baseline_python}"
    if args.baseline_python:
        commands[baseline] = [args.baseline_python, "-m", "attn_cli", "predict", PROMPT, "--model", model, "--json"]
    import os

    env = compiled_once(commands)
    found = medians(commands, args.runs, env=env)
    (a, a_mib, out), (t, t_mib, _) = found[predict], found[peer]
    print(f"SmolLM2-135M-Instruct Q4_1; default threads; medians of {args.runs} interleaved runs; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared machine)")
    print(f"  {predict:<40} {a:6.2f} s  peak RSS {a_mib:6.0f} MiB   predicts {json.loads(out)['predictions'][0]['token']!r}")
    print(f"  {peer:<40} {t:6.2f} s  peak RSS {t_mib:6.0f} MiB")
    if args.baseline_python:
        b, b_mib, _ = found[baseline]
        print(f"  {baseline:<40} {b:6.2f} s  peak RSS {b_mib:6.0f} MiB   its / torch import: {b / t:5.2f}x")
    print(f"  attn / torch import: {a / t:5.2f}x (target <= 0.25)")
    phases = json.loads(measured([sys.executable, "-c", PHASES, model, PROMPT], env)[2])
    print("  where one cold process spends it: " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()))


if __name__ == "__main__":
    main()
