"""Opening a GGUF file: attn's header parser against gguf.GGUFReader (llama.cpp's package), in the same run.

Run by hand:  PYTHONPATH=. python tests/benchmarks/bench_gguf.py [--runs 5] [--file F.gguf]

The file is SmolLM2-135M-Instruct.Q4_1.gguf (tests/checkpoints.py fetches it) unless --file says
otherwise. Each side is a new process that opens the file and reads every metadata value, the
vocabulary included, and every tensor's shape, type and offset; timed as wholes, interleaved,
medians. A third process does the same as attn's plus building the tokenizer, the whole of what
opening a model costs before its first tensor is read. The keys and tensor infos of both parsers
are compared. Target: attn's open <= 0.1x GGUFReader's.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runs import medians  # noqa: E402

READER = r'''
import json, sys
from gguf import GGUFReader
r = GGUFReader(sys.argv[1])
values = {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}
print(json.dumps([len(values), len(values["tokenizer.ggml.tokens"]), [[t.name, t.shape.tolist(), t.tensor_type.value, int(t.data_offset)] for t in r.tensors]]))
'''

OURS = r'''
import json, sys
from attn_cli.models.sources import gguf
f = gguf.read_file(sys.argv[1])
print(json.dumps([len(f.metadata), len(f.metadata["tokenizer.ggml.tokens"]), [[t.name, list(t.dims), t.type_id, t.offset] for t in f.tensors.values()]]))
'''

SOURCE = r'''
import sys
from attn_cli.models.sources import gguf
src = gguf.load(sys.argv[1])
src.tokenizer().encode("The capital of France is")
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--file", type=Path)
    args = parser.parse_args()
    if args.file is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
        from tests.checkpoints import smollm2_gguf

        args.file = smollm2_gguf()
    commands = {
        "gguf.GGUFReader": [sys.executable, "-c", READER, args.file],
        "attn read_file": [sys.executable, "-c", OURS, args.file],
        "attn load + tokenizer": [sys.executable, "-c", SOURCE, args.file],
    }
    results = medians(commands, args.runs)
    theirs, ours = json.loads(results["gguf.GGUFReader"][2]), json.loads(results["attn read_file"][2])
    if theirs != ours:
        raise SystemExit("the two parsers disagree on the keys or the tensor infos")
    peer = results["gguf.GGUFReader"][0]
    print(f"{args.file.name}: {ours[0]} metadata keys, {ours[1]:,} tokens, {len(ours[2])} tensors; medians of {args.runs} interleaved runs")
    for name, (seconds, mib, _) in results.items():
        print(f"  {name:<22} {seconds:6.3f} s  {seconds / peer:5.2f}x GGUFReader  peak {mib:5.0f} MiB")


if __name__ == "__main__":
    main()
