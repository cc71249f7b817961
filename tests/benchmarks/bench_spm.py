"""SentencePiece GGUF tokenizers: attn's against transformers' fast tokenizer from the same file, in the same run.

Run by hand:  PYTHONPATH=. python tests/benchmarks/bench_spm.py [--runs 7] [--peer /work/venv-oracle/bin/python]

Files: Gemma 3 270M's GGUF (262,144 tokens; tests/checkpoints.py fetches it) and the tiny Llama 2
fixture (3,000 tokens, Metaspace's prefix). The text is 100 kB of UTF-8: the repository's
README and docs, with lines of accents, CJK, emoji, fullwidth letters, tabs and runs of spaces
among them. The peer is a process of the oracle venv (transformers + tokenizers, the same
tokenizers version as attn's) that builds `AutoTokenizer.from_pretrained(dir, gguf_file=...)`
and times `tok(text)`; attn times `build_tokenizer(...).encode(text)`, the two in turn in each
of `runs` runs (medians; one thread a side), the ids compared. Also: building the tokenizer in a new process (reading the
header; then encoding one short sentence, which builds a BPE of the tokens inside it; then the
whole BPE, every merge derived), medians of `runs`, beside
`python -c "import torch, transformers"` in the peer's venv, which cold `attn predict` on Gemma
is measured against. Targets: encoding <= 2x the peer's; the build well under 1 s.
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from runs import medians  # noqa: E402

from attn_cli.models.sources.gguf_spm_text import SHORT  # noqa: E402

AWKWARD = ["café naïve résumé Ångström e\u0301", "东京 日本語 한국어 中文字符", "emoji 🙂👍🏽 👨\u200d👩\u200d👧", "ＦＵＬＬＷＩＤＴＨ １２３",
           "tab\there\t\tand    four spaces", "https://example.com/path?q=1&x=y#frag 3.14159 1,000,000"]
PEER = r'''
import hashlib, json, sys, time
from pathlib import Path
from transformers import AutoTokenizer
path, text = Path(sys.argv[1]), Path(sys.argv[2]).read_text(encoding="utf-8")
start = time.perf_counter()
tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
print(json.dumps({"ready": {"build": time.perf_counter() - start}}), flush=True)
for line in sys.stdin:
    if json.loads(line)["op"] == "quit":
        break
    start = time.perf_counter()
    ids = tok(text)["input_ids"]
    seconds = time.perf_counter() - start
    print(json.dumps({"encode": seconds, "n": len(ids), "ids": hashlib.sha256(json.dumps(ids).encode()).hexdigest()}), flush=True)
'''
BUILD = r'''
import json, sys, time
start, cpu = time.perf_counter(), time.process_time()
from attn_cli.models.sources.gguf_file import read_file
from attn_cli.models.sources.gguf_tokenizer import build_tokenizer
file = read_file(sys.argv[1])
read, read_cpu = time.perf_counter() - start, time.process_time() - cpu
tok = build_tokenizer(file, True, False)
tok.encode("The capital of France is")
short, short_cpu = time.perf_counter() - start, time.process_time() - cpu
tok.whole
print(json.dumps({"read": read, "read_cpu": read_cpu, "short": short, "short_cpu": short_cpu,
                  "whole": time.perf_counter() - start, "cpu": time.process_time() - cpu}))
'''


def text_100k() -> str:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    lines = "\n".join(p.read_text(encoding="utf-8") for p in pages).split("\n")
    out, size, k = [], 0, 0
    while size < 100_000:
        line = lines[k % len(lines)] if k % 7 else AWKWARD[(k // 7) % len(AWKWARD)]
        out.append(line)
        size += len(line.encode("utf-8")) + 1
        k += 1
    return "\n".join(out).encode("utf-8")[:100_000].decode("utf-8", errors="ignore")


def compare(path: Path, text: str, text_file: str, runs: int, python: str) -> dict:
    """attn's encoding and the peer's, one after the other in each run: (name -> [seconds]), ids the same, token count."""
    import hashlib

    from peer import Worker

    from attn_cli.models.sources.gguf_file import read_file
    from attn_cli.models.sources.gguf_tokenizer import build_tokenizer

    tok = build_tokenizer(read_file(path), True, False)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(PEER)
    peer = Worker(python, Path(script.name), [path, text_file], threads=1)
    times, same = {"attn": [], "transformers": []}, True
    for _ in range(runs):
        start = time.perf_counter()
        ids = tok.encode(text).ids
        times["attn"].append(time.perf_counter() - start)
        theirs = peer.ask(op="encode")
        times["transformers"].append(theirs["encode"])
        same &= theirs["n"] == len(ids) and theirs["ids"] == hashlib.sha256(json.dumps(ids).encode()).hexdigest()
    peer.close()
    Path(script.name).unlink()
    return {"times": times, "same": same, "n": len(ids), "peer_build": peer.info["build"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--peer", default="/work/venv-oracle/bin/python", help="a Python with transformers, gguf and sentencepiece")
    args = parser.parse_args()
    from tests.checkpoints import FIXTURES, gemma3_gguf

    text = text_100k()
    print(f"text: {len(text.encode('utf-8')):,} bytes, {len(text):,} characters; medians of {args.runs} runs (say if the machine was loaded)")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as f:
        f.write(text)
    for path in (gemma3_gguf(), FIXTURES / "gguf" / "llama2-spm.F16.gguf"):
        got = compare(path, text, f.name, args.runs, args.peer)
        mine, peer = (statistics.median(got["times"][k]) for k in ("attn", "transformers"))
        fastest = min(got["times"]["attn"]) / min(got["times"]["transformers"])
        print(f"{path.name}: {got['n']:,} tokens, {'the same ids' if got['same'] else 'DIFFERENT ids'}")
        print(f"  encode  attn {mine * 1000:7.1f} ms   transformers {peer * 1000:7.1f} ms   {mine / peer:4.2f}x "
              f"(fastest runs {fastest:4.2f}x; target <= 2x: {'met' if mine / peer <= 2 else 'NOT met'})")
        builds = [json.loads(subprocess.run([sys.executable, "-c", BUILD, str(path)], capture_output=True, text=True, check=True,
                                            env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout) for _ in range(args.runs)]
        median = {key: statistics.median(b[key] for b in builds) for key in builds[0]}
        print(f"  build   attn in a new process (imports and the header: {median['read']:5.3f} s, {median['read_cpu']:5.3f} s of CPU)")
        print(f"          + the tokenizer and one short text encoded (what predict does): {median['short']:6.3f} s, {median['short_cpu']:6.3f} s of CPU")
        print(f"          + the whole BPE (what a text over {SHORT:,} characters needs): {median['whole']:6.3f} s, {median['cpu']:6.3f} s of CPU")
        print(f"          transformers' from_pretrained: {got['peer_build']:6.3f} s")
    floor = medians({"import": [args.peer, "-c", "import torch, transformers"]}, args.runs)["import"][0]
    empty = medians({"python": [sys.executable, "-c", "pass"]}, args.runs)["python"][0]
    print(f'python -c "import torch, transformers": {floor:.3f} s (0.5x of it: {floor / 2:.3f} s); python -c pass: {empty:.3f} s')
    Path(f.name).unlink()


if __name__ == "__main__":
    main()
