"""What the benchmark scripts share: a long-lived worker process answering JSON requests, so
attn and its peer (PyTorch, in another Python) are timed back to back in one run."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def show(cmd: list) -> str:
    """A command as a shell would take it; a very long argument (a generated sentence) is named by its size."""
    cmd = [str(c) for c in cmd]
    return shlex.join(cmd if sum(map(len, cmd)) < 300 else [c if len(c) < 80 else f"<{len(c.split())} words>" for c in cmd])


class Worker:
    """`python script argv...` with the BLAS thread count fixed; it answers one JSON line per request."""

    def __init__(self, python: str, script: Path, argv: list, threads: int):
        env = os.environ | {name: str(threads) for name in THREAD_VARIABLES}
        env.pop("PYTHONPATH", None)
        self.cmd = [python, str(script), *[str(a) for a in argv]]
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.info = self.read()["ready"]

    def read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"worker stopped: {show(self.cmd)} (exit {self.proc.wait()})")
        return json.loads(line)

    def ask(self, **cmd) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> None:
        try:
            self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.wait(timeout=30)
