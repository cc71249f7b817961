"""Peak private memory of attn on Gemma 3 270M (Q4_K_M): its 262k-token embedding table is never dequantized whole.

Run by hand:  python tests/benchmarks/bench_memory.py [--model FILE]
Each command runs in a fresh process, sampled every 10 ms: private memory is Private_Clean + Private_Dirty of
/proc/PID/smaps_rollup (which counts the pages of the mapped GGUF file it read, as no other process maps them: an
upper bound of what it allocates); RSS beside it. The target is 600 MiB.
The trivial floor beside them: the same process reading nothing but the tokenizer (`attn tokens`).
"""

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests import checkpoints  # noqa: E402

TARGET_MIB = 600


def peak(cmd: list[str]) -> tuple[float, float, int]:  # -> (peak private MiB, peak RSS MiB, exit code)
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    private = rss = 0
    while process.poll() is None:
        try:
            fields = {line.split()[0].rstrip(":"): int(line.split()[1]) for line in Path(f"/proc/{process.pid}/smaps_rollup").read_text().splitlines()[1:]}
            private, rss = max(private, fields["Private_Clean"] + fields["Private_Dirty"]), max(rss, fields["Rss"])
        except (OSError, KeyError, ValueError, IndexError):
            pass
        time.sleep(0.01)
    return private / 1024, rss / 1024, process.returncode


def main() -> None:
    model = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else str(checkpoints.gemma3_gguf())
    attn = str(Path(sys.executable).parent / "attn")
    commands = {
        "tokens (the floor)": [attn, "tokens", "The capital of France is", "--model", model, "--json"],
        "predict": [attn, "predict", "The capital of France is", "--model", model, "--json"],
        "predict --lens": [attn, "predict", "The capital of France is", "--model", model, "--lens", "--json"],
        "inspect --focus": [attn, "inspect", "I sat by the river bank.", "--model", model, "--focus", "bank", "--json"],
    }
    for name, cmd in commands.items():
        private, rss, code = peak(cmd)
        print(f"{name:20} peak private {private:6.0f} MiB   peak RSS {rss:6.0f} MiB   exit {code}   "
              f"{'within' if private <= TARGET_MIB else 'OVER'} {TARGET_MIB} MiB", flush=True)


if __name__ == "__main__":
    main()
