"""The long fuzz run, in `pytest -m slow`: every fuzz test of test_fuzz.py with new cases each run, many more of them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LONG_EXAMPLES = 250  # cases per fuzz test (the default run has 20, the same ones every time)


@pytest.mark.slow
def test_long_fuzz_run(tmp_path):
    report = tmp_path / "fuzz.json"
    env = os.environ | {"ATTN_FUZZ_EXAMPLES": str(LONG_EXAMPLES), "ATTN_FUZZ_REPORT": str(report)}
    done = subprocess.run([sys.executable, "-m", "pytest", str(Path(__file__).with_name("test_fuzz.py")), "-q", "-p", "no:cacheprovider"],
                          capture_output=True, text=True, env=env, timeout=3600)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    counts = json.loads(report.read_text())
    assert counts and all(c.get("cases", 0) > 0 for c in counts.values()), counts
