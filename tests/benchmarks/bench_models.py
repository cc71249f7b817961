"""How `attn inspect --model` compares with PyTorch + transformers, against floors and peers measured in the same run.

1. Cold start: `attn inspect --model <all-MiniLM-L6-v2> "<the lesson's sentence>" --json` against
   `<peer-python> -c "import torch, transformers"` (target: <= 0.25x), and the floor `python -c "import numpy"`.
2. Peak RSS of that attn run (ru_maxrss of RUSAGE_CHILDREN in a fresh wrapper process; target: <= 250 MB),
   next to the floor's and the peer import's.
3. The forward pass alone, warm: attn's `Transformer.forward(tokens)` against PyTorch eager
   (`AutoModel.from_pretrained(folder, attn_implementation="eager")`, `output_attentions=True,
   output_hidden_states=True`, under `torch.inference_mode()`, CPU) at n = 16 and n = 128 token ids (the
   same ids for both). Each side runs in its own long-lived worker: attn in the project's python (the
   NumPy `attn` really runs with), torch in the peer's; the workers are timed back to back, interleaved,
   with the same thread count (OMP/OPENBLAS/MKL_NUM_THREADS and torch.set_num_threads). Target: <= 1.5x.
4. The GloVe path's cold start is unchanged: `attn softmax 1 2 3 --json` and `attn inspect "<sentence>" --json`
   against the floor, and neither imports safetensors, tokenizers or the --model path's code
   (attn_cli.models.checkpoint / transformer / inspection); other attn_cli.models modules are listed.

Every figure is a median of --runs runs (default 5), the commands interleaved round by round. What else
the (2-core) machine is doing is not controlled: the load average is printed before and after.
The peer is a separate venv (default /work/fixture-venv) with torch and transformers; PyTorch is not a
dependency of attn. If it is missing, the peer rows are skipped and said so.

Run by hand:  python tests/benchmarks/bench_models.py [--runs 5] [--threads 2] [--peer-python PATH] [--profile]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.benchmarks.peer import Worker, show  # noqa: E402
from tests.checkpoints import minilm_folder  # noqa: E402

LESSON = "A fluffy blue creature roamed the verdant forest."
ATTN = str(Path(sys.executable).parent / "attn")
PEER_DEFAULT = "/work/fixture-venv/bin/python"
LENGTHS = (16, 128)
RSS_TARGET_MB = 250
MB = 1e6
# What only the --model path should import (cold-start cost): the two packages and attn's checkpoint code.
CHECKPOINT_CODE = ("safetensors", "tokenizers", "attn_cli.models.sources.folder", "attn_cli.models.transformer", "attn_cli.analysis")

# ru_maxrss of RUSAGE_CHILDREN is the largest of all waited-for children: a fresh wrapper has exactly one.
RSS_WRAPPER = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"  # KiB on Linux
)

# Runs `attn ARGS` in-process and writes, to the file named first, which of the watched modules got imported.
IMPORT_CHECK = r"""
import json, os, sys
out, args = sys.argv[1], sys.argv[2:]
devnull = os.open(os.devnull, os.O_WRONLY)
os.dup2(devnull, 1)
sys.argv = ["attn", *args]
code = 0
from attn_cli.cli import main
try:
    main()
except SystemExit as e:
    code = e.code or 0
watched = sorted(m for m in sys.modules if m.split(".")[0] in ("safetensors", "tokenizers") or m.startswith("attn_cli.models"))
with open(out, "w") as f:
    json.dump({"code": code, "loaded": watched}, f)
"""

# One worker per side. Reads one JSON command a line on stdin, answers one JSON line on stdout.
WORKER = r'''
import json, os, sys, time
side, folder, threads, repo, LESSON = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
import numpy as np

def openblas_threads():
    import ctypes, glob
    for lib in glob.glob(os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs", "*openblas*")):
        for symbol in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads"):
            try:
                return int(getattr(ctypes.CDLL(lib), symbol)())
            except (AttributeError, OSError):
                pass
    return None

info = {"python": sys.executable, "numpy": np.__version__, "openblas_threads": openblas_threads()}
if side == "attn":
    sys.path.insert(0, repo)
    from attn_cli.models import transformer
    model = transformer.load(folder)
    info["attn_cli"] = os.path.dirname(transformer.__file__)

    from attn_cli.models.base import Tokens
    long = model.tokenize(" ".join([LESSON] * 20))

    def prepare(ids):  # the tokenizer's own Tokens, cut to [CLS] + the first n - 2 pieces + [SEP]
        n = len(ids)
        cut = lambda xs: list(xs[: n - 1]) + list(xs[-1:])
        tokens = Tokens(cut(long.ids), cut(long.pieces), cut(long.special), cut(long.words), cut(long.offsets), long.text, long.unknown)
        assert tokens.ids == list(ids)
        return tokens

    def call(tokens):
        return model.forward(tokens)

    def results(trace):
        return trace.get("resid_final"), trace.stacked("attn.pattern")
else:
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging
    hf_logging.disable_progress_bar()
    torch.set_num_threads(threads)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    info |= {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    import transformers
    info["transformers"] = transformers.__version__

    def prepare(ids):
        return torch.tensor([ids], dtype=torch.long)

    def call(ids):
        with torch.inference_mode():
            return model(input_ids=ids, output_attentions=True, output_hidden_states=True)

    def results(out):
        return out.last_hidden_state[0].numpy(), torch.stack([a[0] for a in out.attentions]).numpy()

print(json.dumps({"ready": info}), flush=True)
inputs = {}
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] == "tokenize":  # attn only: ids of exactly n tokens, [CLS] ... [SEP], from a repeated sentence
        enc = long.ids  # 20 sentences: 242 pieces
        assert max(cmd["lengths"]) <= len(enc), f"{len(enc)} pieces, fewer than {max(cmd['lengths'])}"
        print(json.dumps({n: enc[: n - 1] + enc[-1:] for n in cmd["lengths"]}), flush=True)
    elif cmd["op"] == "setup":  # warm up; one call's time and the outputs, to check both sides agree
        reply = {}
        for n, ids in cmd["ids"].items():
            inputs[n] = prepare(ids)
            for _ in range(3):
                call(inputs[n])
            start = time.perf_counter()
            out = call(inputs[n])
            single = time.perf_counter() - start
            hidden, weights = results(out)
            reply[n] = {"single": single, "hidden": hidden.astype(float).tolist(), "weights": weights.astype(float).tolist()}
        print(json.dumps(reply), flush=True)
    elif cmd["op"] == "time":
        x, reps = inputs[cmd["n"]], cmd["reps"]
        start = time.perf_counter()
        for _ in range(reps):
            call(x)
        print(json.dumps({"per_call": (time.perf_counter() - start) / reps}), flush=True)
    else:
        break
'''




def run_seconds(cmd: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {show(cmd)}\n{done.stderr.decode()[-800:]}")
    return seconds


def peak_rss_mb(cmd: list[str]) -> float:
    out = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *cmd], capture_output=True, text=True, check=True).stdout
    return int(out.strip()) * 1024 / MB


def time_v_rss_mb(cmd: list[str]) -> float | None:
    if not Path("/usr/bin/time").is_file():
        return None
    done = subprocess.run(["/usr/bin/time", "-v", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    for line in done.stderr.splitlines():
        if "Maximum resident set size" in line:
            return int(line.split(":")[1]) * 1024 / MB
    return None


def peer_status(peer: str) -> tuple[bool, str]:
    """(usable, why not or its versions)."""
    if not Path(peer).is_file():
        return False, f"no peer python at {peer}"
    probe = "import numpy, torch, transformers; print(numpy.__version__, torch.__version__, transformers.__version__)"
    done = subprocess.run([peer, "-c", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return False, f"{peer} cannot import numpy, torch and transformers: {done.stderr.strip().splitlines()[-1:]}"
    numpy_v, torch_v, transformers_v = done.stdout.split()
    return True, f"numpy {numpy_v}, torch {torch_v}, transformers {transformers_v}"


def row(label: str, value: str, ratios: str = "", cmd: str = "") -> None:
    print(f"  {label:<40} {value:>10}  {ratios}")
    if cmd:
        print(f"      $ {cmd}")


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"



def max_diff(a, b) -> float:
    import numpy as np

    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def forward_pass(args, folder: Path, peer_ok: bool, tmp: Path) -> dict:
    script = tmp / "forward_worker.py"
    script.write_text(WORKER)
    attn = Worker(sys.executable, script, ["attn", folder, args.threads, REPO, LESSON], args.threads)
    peer = Worker(args.peer_python, script, ["torch", folder, args.threads, REPO, LESSON], args.threads) if peer_ok else None
    try:
        ids = {int(n): v for n, v in attn.ask(op="tokenize", lengths=list(LENGTHS)).items()}
        assert all(len(ids[n]) == n for n in LENGTHS)
        ids_json = {str(n): ids[n] for n in LENGTHS}
        a_setup = attn.ask(op="setup", ids=ids_json)
        t_setup = peer.ask(op="setup", ids=ids_json) if peer else None

        print(f"\n3. forward pass alone, warm, in one process per side; median of {args.runs} runs, each run R calls back to back")
        print(f"   threads: {args.threads} (OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = {args.threads} in both workers"
              f"{', torch.set_num_threads(%d)' % args.threads if peer else ''})")
        print(f"   attn : {attn.info['python']}  numpy {attn.info['numpy']}, OpenBLAS threads {attn.info['openblas_threads']}, attn_cli from {attn.info['attn_cli']}")
        if peer:
            print(f"   torch: {peer.info['python']}  numpy {peer.info['numpy']}, torch {peer.info['torch']} "
                  f"(torch threads {peer.info['torch_threads']}), transformers {peer.info['transformers']}")
            same = "same NumPy version" if attn.info["numpy"] == peer.info["numpy"] else "NumPy versions DIFFER"
            print(f"   {same} (attn's forward is timed in the project's own python; torch's in the peer's)")
        print("   ids: [CLS] + the sentence repeated, cut to n - 2 pieces + [SEP]; the same ids for both")
        print("   timed: attn   model.forward(tokens)                 (attn_cli.models.transformer.Transformer.forward)")
        print("          torch  with torch.inference_mode(): model(input_ids=ids, output_attentions=True, output_hidden_states=True)")
        print(f"   workers: $ {show(attn.cmd)}")
        if peer:
            print(f"            $ {show(peer.cmd)}")
        else:
            print(f"   peer skipped: {args.peer_reason}")

        medians = {}
        for n in LENGTHS:
            key = str(n)
            fastest = min(a_setup[key]["single"], t_setup[key]["single"]) if peer else a_setup[key]["single"]
            reps = max(3, int(args.run_seconds / max(fastest, 1e-6)) + 1)
            a_times, t_times = [], []
            for r in range(args.runs):  # alternate who goes first; a pause so the other side's threads stop spinning
                order = [(attn, a_times), (peer, t_times)] if r % 2 == 0 else [(peer, t_times), (attn, a_times)]
                for worker, times in order:
                    if worker is None:
                        continue
                    time.sleep(0.2)
                    times.append(worker.ask(op="time", n=key, reps=reps)["per_call"])
            a = statistics.median(a_times)
            medians[n] = {"attn": a}
            if peer:
                t = statistics.median(t_times)
                medians[n]["torch"] = t
                ok = "ok" if a / t <= 1.5 else "MISSED"
                row(f"n = {n}: attn forward (R = {reps})", f"{a * 1000:.2f} ms", f"{a / t:5.2f}x torch  (target <= 1.5x: {ok})")
                row(f"n = {n}: torch eager forward", f"{t * 1000:.2f} ms")
                dh = max_diff(a_setup[key]["hidden"], t_setup[key]["hidden"])
                dw = max_diff(a_setup[key]["weights"], t_setup[key]["weights"])
                print(f"      outputs agree: max |attn - torch| last hidden state {dh:.1e}, attention weights {dw:.1e}")
            else:
                row(f"n = {n}: attn forward (R = {reps})", f"{a * 1000:.2f} ms", "(no peer)")
        return medians
    finally:
        attn.close()
        if peer:
            peer.close()


def profile_forward(folder: Path, threads: int) -> None:
    """cProfile of attn's forward at each n (Python-level functions; a matmul counts in the function that does it)."""
    import cProfile
    import pstats

    from attn_cli.models.base import Tokens
    from attn_cli.models import transformer

    model = transformer.load(str(folder))
    long = model.tokenize(" ".join([LESSON] * 20))
    for n in LENGTHS:
        cut = lambda xs: list(xs[: n - 1]) + list(xs[-1:])  # noqa: B023
        tokens = Tokens(cut(long.ids), cut(long.pieces), cut(long.special), cut(long.words), cut(long.offsets), long.text, long.unknown)
        for _ in range(3):
            model.forward(tokens)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(20):
            model.forward(tokens)
        profiler.disable()
        print(f"\n   profile of 20 x attn forward, n = {n} (OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}):")
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(12)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of everything; medians are reported")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads for both forward passes (default: all cores)")
    parser.add_argument("--peer-python", default=PEER_DEFAULT, help="a python with torch and transformers")
    parser.add_argument("--run-seconds", type=float, default=0.25, help="length of one timed forward run (R calls) for the faster side")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of attn's forward")
    args = parser.parse_args()

    began = time.perf_counter()
    folder = minilm_folder()
    peer_ok, args.peer_reason = peer_status(args.peer_python)
    print(f"bench_models: {os.cpu_count()} cores; load average at start {loadavg()}; nothing else on the machine is controlled")
    print(f"model: {folder}")
    print(f"attn: {ATTN} (python {sys.executable})")
    if peer_ok:
        print(f"peer: {args.peer_python} ({args.peer_reason})")
    else:
        print(f"peer: SKIPPED, {args.peer_reason}; the rows that need torch are left out")

    floor_cmd = [sys.executable, "-c", "import numpy"]
    model_cmd = [ATTN, "inspect", "--model", str(folder), LESSON, "--json"]
    peer_cmd = [args.peer_python, "-c", "import torch, transformers"]
    softmax_cmd = [ATTN, "softmax", "1", "2", "3", "--json"]
    glove_cmd = [ATTN, "inspect", LESSON, "--json"]
    cold = {"floor": floor_cmd, "model": model_cmd, "softmax": softmax_cmd, "glove": glove_cmd}
    if peer_ok:
        cold["peer"] = peer_cmd

    # 1 and 4: one untimed warm-up of each (page cache), then rounds, each command once per round.
    for cmd in cold.values():
        run_seconds(cmd)
    times = {k: [] for k in cold}
    for _ in range(args.runs):
        for k, cmd in cold.items():
            times[k].append(run_seconds(cmd))
    med = {k: statistics.median(v) for k, v in times.items()}
    floor = med["floor"]

    print(f"\n1. cold start, median of {args.runs} new processes each (interleaved; after one untimed warm-up run of each)")
    row('python -c "import numpy" (floor)', f"{floor * 1000:.0f} ms", "", show(floor_cmd))
    peer_ratio = ""
    if peer_ok:
        ok = "ok" if med["model"] / med["peer"] <= 0.25 else "MISSED"
        peer_ratio = f"{med['model'] / med['peer']:5.2f}x peer (target <= 0.25x: {ok})"
    row("attn inspect --model MiniLM", f"{med['model'] * 1000:.0f} ms", f"{med['model'] / floor:5.2f}x floor  {peer_ratio}", show(model_cmd))
    if peer_ok:
        row("peer: import torch, transformers", f"{med['peer'] * 1000:.0f} ms", f"{med['peer'] / floor:5.2f}x floor", show(peer_cmd))
    else:
        print(f"  peer row skipped: {args.peer_reason}")

    print(f"\n2. peak RSS (ru_maxrss of the one child of a fresh wrapper: {sys.executable} -c <wrapper> CMD), median of {args.runs}")
    rss = {"floor": [], "model": [], "peer": []}
    for _ in range(args.runs):
        rss["floor"].append(peak_rss_mb(floor_cmd))
        rss["model"].append(peak_rss_mb(model_cmd))
        if peer_ok:
            rss["peer"].append(peak_rss_mb(peer_cmd))
    mrss = {k: statistics.median(v) for k, v in rss.items() if v}
    row('python -c "import numpy" (floor)', f"{mrss['floor']:.0f} MB", "", show(floor_cmd))
    ok = "ok" if mrss["model"] <= RSS_TARGET_MB else "MISSED"
    peer_rss = f"{mrss['model'] / mrss['peer']:5.2f}x peer import" if peer_ok else ""
    row("attn inspect --model MiniLM", f"{mrss['model']:.0f} MB",
        f"{mrss['model'] / mrss['floor']:5.2f}x floor  {peer_rss}  (target <= {RSS_TARGET_MB} MB: {ok})", show(model_cmd))
    cross = time_v_rss_mb(model_cmd)
    if cross is not None:
        print(f"      cross-check, one run under /usr/bin/time -v: {cross:.0f} MB")
    if peer_ok:
        row("peer: import torch, transformers", f"{mrss['peer']:.0f} MB", f"{mrss['peer'] / mrss['floor']:5.2f}x floor", show(peer_cmd))
    else:
        print(f"  peer row skipped: {args.peer_reason}")

    with tempfile.TemporaryDirectory() as tmp:
        medians = forward_pass(args, folder, peer_ok, Path(tmp))

        print(f"\n4. GloVe path (no --model), cold start, median of {args.runs} (same rounds and floor as 1.)")
        row('python -c "import numpy" (floor)', f"{floor * 1000:.0f} ms", "", show(floor_cmd))
        row("attn softmax 1 2 3 --json", f"{med['softmax'] * 1000:.0f} ms", f"{med['softmax'] / floor:5.2f}x floor", show(softmax_cmd))
        row("attn inspect SENTENCE --json", f"{med['glove'] * 1000:.0f} ms", f"{med['glove'] / floor:5.2f}x floor", show(glove_cmd))
        script = Path(tmp) / "import_check.py"
        script.write_text(IMPORT_CHECK)
        result_file = Path(tmp) / "loaded.json"
        print(f"   imports (attn_cli.cli.main called in-process, then sys.modules read: $ {sys.executable} <check> OUT ARGS...):")
        print(f"   the --model path's code: {', '.join(CHECKPOINT_CODE)}")
        for label, cmd, glove_path in (("attn softmax 1 2 3 --json", softmax_cmd, True), ("attn inspect SENTENCE --json", glove_cmd, True),
                                       ("attn inspect --model (control)", model_cmd, False)):
            subprocess.run([sys.executable, str(script), str(result_file), *cmd[1:]], check=True, cwd=tmp)
            got = json.loads(result_file.read_text())
            heavy = sorted({m.split(".")[0] if not m.startswith("attn_cli.") else m for m in got["loaded"] if m.startswith(CHECKPOINT_CODE)})
            other = sorted(m for m in got["loaded"] if m.startswith("attn_cli.models") and not m.startswith(CHECKPOINT_CODE))
            if glove_path:
                verdict = "ok, none of it" if not heavy else "NOT OK, loads " + ", ".join(heavy)
            else:
                verdict = f"loads {len(heavy)} of {len(CHECKPOINT_CODE)} (the check sees them)" if heavy else "NOT OK: the check sees nothing"
            also = f"; other attn_cli.models modules: {', '.join(other)}" if other else "; no attn_cli.models module at all"
            print(f"      {label:<32} exit {got['code']}: {verdict}{also}")

    if args.profile or (peer_ok and any(m["attn"] / m["torch"] > 1.5 for m in medians.values())):
        print("\n   attn's forward missed 1.5x or --profile was given: cProfile in this process")
        profile_forward(folder, args.threads)

    print(f"\nload average at end {loadavg()}; took {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
