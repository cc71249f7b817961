"""`attn analogy` and `attn similarity` on the full GloVe 6B 50d (400,000 keys, converted to an attn
folder), against minimal NumPy scripts doing the same work, in the same run.

Run by hand:  PYTHONPATH=. python tests/benchmarks/bench_lookup.py [--runs 11] [--folder DIR] [--bytecode]

Target: each <= 1.2x its peer. The peers are what a person would write with NumPy
alone: np.load(mmap_mode="r"), a scan of keys.txt's bytes for the few words, and for the analogy
3CosAdd over every key (norms with einsum, one matrix-vector product, argpartition for the top 5).
Both are new processes, timed as wholes, interleaved; medians. The answers are compared.
Without --folder, the 400k text file (tests/benchmarks/glove400k.py) is converted first. --bytecode:
every command with its modules compiled once (runs.compiled_once), as an installed attn starts.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from glove400k import text_file  # noqa: E402
from runs import compiled_once, medians  # noqa: E402

ANALOGY = ["king", "man", "woman"]  # man is to king as woman is to ?
SIMILARITY = ["king", "queen", "man", "woman"]

PEER = r'''
import json, sys
import numpy as np

folder, task, words = sys.argv[1], sys.argv[2], sys.argv[3:]
m = np.load(folder + "/vectors.npy", mmap_mode="r", allow_pickle=False)  # [n, d]
with open(folder + "/keys.txt", "rb") as f:
    keys = b"\n" + f.read()

def row(word):
    at = keys.find(b"\n" + word.encode() + b"\n")
    if at < 0:
        sys.exit(f"unknown word: {word}")
    return keys.count(b"\n", 0, at)

rows = [row(w) for w in words]
v = np.asarray(m[rows], dtype=np.float64)  # [w, d]
if task == "similarity":
    norms = np.linalg.norm(v, axis=1)
    dots = v @ v.T
    pairs = [[words[i], words[j], float(dots[i, j]), float(dots[i, j] / (norms[i] * norms[j]))]
             for i in range(len(words)) for j in range(i + 1, len(words))]
    print(json.dumps(pairs))
else:  # a b c: positive a and c, negative b (3CosAdd)
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    q = (u[0] - u[1] + u[2]) / 3
    q = (q / np.linalg.norm(q)).astype(np.float32)
    scores = (m @ q) / np.sqrt(np.einsum("ij,ij->i", m, m))  # [n]
    scores[rows] = -np.inf
    top = np.argpartition(-scores, 5)[:5]
    top = top[np.argsort(-scores[top])]
    ends = np.flatnonzero(np.frombuffer(keys, dtype=np.uint8) == 10)
    print(json.dumps([[keys[ends[i] + 1 : ends[i + 1]].decode(), float(scores[i])] for i in top]))
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--folder", type=Path, help="an attn folder of the 400k vectors (made if not given)")
    parser.add_argument("--bytecode", action="store_true", help="compile each module once (a cache in a scratch folder), as an installed attn does")
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.folder
        if folder is None:
            folder = Path(tmp) / "glove400k"
            subprocess.run([py, "-m", "attn_cli", "vectors", "convert", text_file(), folder], check=True)
        peer = Path(tmp) / "peer.py"
        peer.write_text(PEER)
        commands = {
            'python -c "import numpy"': [py, "-c", "import numpy"],
            "peer analogy": [py, peer, folder, "analogy", *ANALOGY],
            "attn analogy king man woman --json": [py, "-m", "attn_cli", "analogy", *ANALOGY, "--vectors", folder, "--json"],
            "peer similarity": [py, peer, folder, "similarity", *SIMILARITY],
            "attn similarity king queen man woman --json": [py, "-m", "attn_cli", "similarity", *SIMILARITY, "--vectors", folder, "--json"],
        }
        found = medians(commands, args.runs, env=compiled_once(commands) if args.bytecode else None)
    print(f"{folder}: 400,000 keys x 50; medians of {args.runs} interleaved runs")
    for name, (seconds, mib, _) in found.items():
        print(f"  {name:46} {seconds * 1000:6.0f} ms  peak RSS {mib:6.1f} MiB")
    for task, ours, theirs in (("analogy", "attn analogy king man woman --json", "peer analogy"),
                               ("similarity", "attn similarity king queen man woman --json", "peer similarity")):
        ratio = found[ours][0] / found[theirs][0]
        print(f"  {task}: {ratio:.2f}x the peer (target <= 1.2x)")
    answers = [a["key"] for a in json.loads(found["attn analogy king man woman --json"][2])["answers"]]
    peer_answers = [k for k, _ in json.loads(found["peer analogy"][2])]
    pairs = json.loads(found["attn similarity king queen man woman --json"][2])["pairs"]
    peer_pairs = json.loads(found["peer similarity"][2])
    same_cosines = all(abs(p["cosine"] - q[3]) < 1e-6 for p, q in zip(pairs, peer_pairs)) and len(pairs) == len(peer_pairs)
    print(f"  same analogy answers: {'yes' if answers == peer_answers else f'NO: {answers} vs {peer_answers}'}; "
          f"same similarity cosines (1e-6): {'yes' if same_cosines else 'NO'}")


if __name__ == "__main__":
    main()
