"""What attn prints, this tree against an older revision: every README example, and 300 sentences through
`inspect` as JSON Lines and CSV (GloVe heads, the tiny GPT-2 and all-MiniLM-L6-v2), compared byte for byte.

Run by hand (not a test):  python tests/benchmarks/diff_revisions.py --before REV [--sentences 300] [--show 5]

The older revision's attn_cli and data/ are unpacked (git archive) into a temporary folder and run from
there, so both trees run on this machine in the same minute with the same Python and packages. Prints
one line per command (same, or how many output lines differ, with the first differences), then a
summary; exits 1 when any output differs.
"""

import argparse
import difflib
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import checkpoints  # noqa: E402
from tests.test_readme import EXAMPLES  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
from bench_revisions import unpack  # noqa: E402  (the same revision, unpacked the same way)

SENTENCE_FILES = ["data/heads/dev/senses.tsv", "data/heads/eval/senses_natural.tsv", "data/heads/eval/adjectives_natural.tsv",
                  "data/heads/eval/adjectives_long.tsv", "data/heads/dev/adjectives.tsv"]


def sentences(n: int, seed: int = 0) -> list[str]:
    """Real sentences from the hand-written sets, and random runs of frequent GloVe keys (some long)."""
    found = []
    for name in SENTENCE_FILES:
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
            first = line.split("\t")[0]
            if line and not line.startswith("#") and first not in ("sentence",) and len(first.split()) > 2:
                found.append(first)
    rng = random.Random(seed)
    rng.shuffle(found)
    keys = (ROOT / "data/glove.6B.50d/keys.txt").read_text(encoding="utf-8").split("\n")[:5000]
    keys = [k for k in keys if re.fullmatch(r"[a-z]+", k)]
    made = [" ".join(rng.choice(keys) for _ in range(rng.choice([3, 8, 15, 30, 60]))) for _ in range(n // 3)]
    return found[: n - len(made)] + made


def commands(n_sentences: int) -> list[tuple[str, str, str]]:
    """(name, shell command, stdin) to compare."""
    out = []
    for command, _, reason, line in EXAMPLES:
        if reason:
            continue
        out.append((f"README line {line}", command, ""))
        if command.startswith("attn inspect ") and " -" not in command and "--svg" not in command and "--html" not in command:
            base = re.sub(r" --(json|jsonl|csv|tsv)\b", "", command)
            for fmt in ("--json", "--csv"):
                out.append((f"README line {line} {fmt}", f"{base} {fmt}", ""))
    text = "\n".join(sentences(n_sentences)) + "\n"
    tiny = checkpoints.tiny_gpt2_folder()
    runs = {
        "glove": "attn inspect - --oov zero",
        "glove identity none focus": "attn inspect - --oov zero --head identity --mask none --focus 0 --stage masked --per-head",
        "tiny-gpt2": f"attn inspect - --model {tiny}",
        "tiny-gpt2 words": f"attn inspect - --model {tiny} --words --head 1.2 --focus 0 --stage scores",
        "minilm": "attn inspect - --model $MINILM --head 0.2 --head 5",
        "minilm words hide": "attn inspect - --model $MINILM --words --hide-special --focus 1 --layer 2",
    }
    for name, command in runs.items():
        for fmt in ("--jsonl", "--csv"):
            out.append((f"{n_sentences} sentences: {name} {fmt}", f"{command} {fmt}", text))
    return out


def run(command: str, stdin: str, tree: Path, scratch: Path) -> str:
    env = os.environ | {"NO_COLOR": "1", "COLUMNS": "80", "TERM": "dumb", "PYTHONPATH": str(tree), "MINILM": str(checkpoints.minilm_folder())}
    for name in ("ATTN_VECTORS", "FORCE_COLOR"):
        env.pop(name, None)
    shim = scratch / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "attn").write_text(f"#!/bin/sh\nexec {sys.executable} -m attn_cli \"$@\"\n")
    (shim / "attn").chmod(0o755)
    (scratch / "data").unlink(missing_ok=True)
    (scratch / "data").symlink_to(tree / "data")
    done = subprocess.run(["bash", "-c", command], cwd=scratch, input=stdin, capture_output=True, text=True, timeout=1800,
                          env=env | {"PATH": f"{shim}{os.pathsep}{env['PATH']}"})
    out = done.stdout + (f"\n[exit {done.returncode}]\n{done.stderr}" if done.returncode else "")
    if str(tree.resolve()) not in out and str(tree) not in out:
        return out
    # where each tree's data/ is (vectors info) is not a difference, nor the table widths that follow from it
    out = out.replace(str(tree.resolve()), "<tree>").replace(str(tree), "<tree>")
    return "\n".join(re.sub(r"[ ─]{2,}", " ", line).rstrip() for line in out.split("\n"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", required=True)
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--show", type=int, default=5, help="differing lines shown per command")
    args = parser.parse_args()
    differ = 0
    with tempfile.TemporaryDirectory() as tmp:
        old = unpack(args.before, Path(tmp) / "old")
        cases = commands(args.sentences)
        for name, command, stdin in cases:
            outputs = []
            for tree in (old, ROOT):
                scratch = Path(tempfile.mkdtemp(dir=tmp))
                outputs.append(run(command, stdin, tree, scratch))
            if outputs[0] == outputs[1]:
                print(f"same     {name} ({len(outputs[1]):,} bytes)")
                continue
            differ += 1
            a, b = outputs[0].splitlines(), outputs[1].splitlines()
            changed = [line for line in difflib.unified_diff(a, b, lineterm="", n=0) if line[:1] in "+-" and line[:3] not in ("+++", "---")]
            print(f"DIFFERS  {name}: {len(changed)} lines (`{command}`)")
            for line in changed[: args.show]:
                print(f"    {line[:200]}")
    print(f"{len(cases) - differ} of {len(cases)} outputs identical, {differ} differ")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
