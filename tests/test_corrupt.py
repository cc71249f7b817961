"""Corrupt vector and head files (and a few damaged checkpoints), each handed to the command that
reads it: what `attn` must do with it, and what it must never do (tests/oracle.py: no traceback,
no warning, one `attn: ...` line, a file's damage exit 1, a file that is plainly wrong or untrusted
exit 2, never a silent wrong answer).

Truncations cut each format at every 5% of its length. `python tests/test_corrupt.py` prints the
table of every case with its outcome (the closing note of issue 12 shows it).
"""

import io
import json
import math
import struct
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attn_cli.vectors import fast as fast_format
from attn_cli.vectors.store import Vectors
from tests import checkpoints
from tests.exact import assert_copied
from tests.oracle import attn, check
from tests.test_hostile_models import change_tensors, edit_config, float32_of

D = 50  # the shipped vectors' dimension, so the shipped heads and a head file fit
KEYS = ["the", "cat", "sat", "on", "mat", "dog", "naïve"]
MATRIX = np.random.default_rng(0).normal(size=(len(KEYS), D)).astype(np.float32)  # [7, 50]
CUTS = [i / 20 for i in range(20)]  # keep 0%, 5%, ..., 95% of the bytes


# --- writing files, sound and damaged -------------------------------------------------------------


def kv(keys=KEYS, matrix=MATRIX):
    from gensim.models import KeyedVectors

    vectors = KeyedVectors(matrix.shape[1])
    vectors.add_vectors(keys, matrix)
    return vectors


def word2vec_text(path: Path, keys=KEYS, matrix=MATRIX) -> Path:
    kv(keys, matrix).save_word2vec_format(str(path))
    return path


def glove_text(path: Path) -> Path:
    kv().save_word2vec_format(str(path), write_header=False)
    return path


def word2vec_bin(path: Path) -> Path:
    kv().save_word2vec_format(str(path), binary=True)
    return path


def fast_folder(path: Path, keys=KEYS, matrix=MATRIX) -> Path:
    fast_format.write_fast(Vectors(list(keys), matrix), path)
    return path


def text_rows(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text(header + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def row(key: str, values) -> str:
    return key + " " + " ".join(repr(float(v)) for v in values)


def npy_bytes(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array, allow_pickle=True)
    return out.getvalue()


def npy_header_claiming(shape: tuple, descr: str = "<f8") -> bytes:
    """A .npy header announcing `shape`, followed by a few bytes: what a lying header looks like."""
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".ljust(118) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin-1") + b"\0" * 64


def head_arrays(d_k: int = 4) -> dict:
    rng = np.random.default_rng(1)
    return {"w_q": rng.normal(size=(D, d_k)), "w_k": rng.normal(size=(D, d_k)), "w_v": np.eye(D)}


def npz(path: Path, members: dict, compressed: bool = False) -> Path:
    """A zip of members: arrays are saved as .npy, bytes are written as they are."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) as z:
        for name, value in members.items():
            z.writestr(name if name.endswith(".npy") else name + ".npy", value if isinstance(value, bytes) else npy_bytes(value))
    return path


def head_file(path: Path, compressed: bool = False, **arrays) -> Path:
    return npz(path, {**head_arrays(), **arrays}, compressed)


def cut(path: Path, keep: float) -> Path:
    """Keep the first `keep` share of the bytes of a file (of vectors.npy, for a folder)."""
    target = path / "vectors.npy" if path.is_dir() else path
    data = target.read_bytes()
    target.write_bytes(data[: int(len(data) * keep)])
    return path


def flip_bytes(path: Path, start: int, length: int) -> Path:
    data = bytearray(path.read_bytes())
    for i in range(start, min(start + length, len(data))):
        data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    return path


class Pickled:
    """Unpickling this creates a marker file: the proof that a pickle ran."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


# --- the cases ----------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    make: object  # (folder) -> the damaged file
    command: list  # the attn command; FILE stands for the file made
    exit: int | tuple  # the exit code (or codes) attn must give
    says: str = ""  # a part of the one stderr line (exit 1 and 2) or of the output
    about: str = ""  # what attn does with it, in words (for the table)

    def args(self, path: Path) -> list[str]:
        return [str(path) if a == "FILE" else a for a in self.command]


INFO = ["vectors", "info", "FILE"]
USE = ["inspect", "the cat sat", "--head", "identity", "--json", "--vectors", "FILE"]
SIMILARITY = ["similarity", "cat", "the", "--vectors", "FILE", "--json"]
HEAD = ["inspect", "the cat sat", "--head", "FILE", "--json"]
USE_MODEL = ["inspect", "the cat", "--model", "FILE"]


def w2v_rows(n_header, rows):
    return lambda f: text_rows(f / "v.txt", f"{n_header} {D}\n", rows)


ROWS = [row(k, v) for k, v in zip(KEYS, MATRIX)]

CASES = [
    # vectors: every format empty, cut short, lying
    Case("empty text file", lambda f: written(f / "v.txt", b""), INFO, 1, "empty", "refused: the file is empty"),
    Case("empty folder", lambda f: folder_of(f / "v"), INFO, 2, "vectors.npy", "refused: a folder without vectors.npy"),
    *[Case(f"{fmt} cut at {keep:.0%}", (lambda make, keep: lambda f: cut(make(f), keep))(make, keep), INFO, (0, 1),
           about="a prefix of the keys with their exact vectors, or refused naming the damage (exit 1)")
      for fmt, make in (("word2vec text", lambda f: word2vec_text(f / "v.txt")), ("GloVe text", lambda f: glove_text(f / "g.txt")),
                        ("word2vec binary", lambda f: word2vec_bin(f / "v.bin")), ("attn folder", lambda f: fast_folder(f / "v")))
      for keep in CUTS],
    Case("header announces more keys than follow", w2v_rows(9, ROWS), INFO, 1, "ends early", "refused: the file ends early"),
    Case("header announces fewer keys than follow", w2v_rows(3, ROWS), INFO, 1, "announces 3 keys", "refused, naming both counts and --limit"),
    Case("header announces fewer keys, --limit given", w2v_rows(3, ROWS), [*INFO, "--limit", "3"], 0, "", "the 3 keys asked for"),
    Case("header announces another dimension", lambda f: text_rows(f / "v.txt", f"7 {D + 1}\n", ROWS), INFO, 1, "v.txt",
         "refused: line 2 does not have the announced values"),
    Case("binary header announces fewer keys", lambda f: flip_header(word2vec_bin(f / "v.bin")), INFO, 1, "bytes follow",
         "refused: bytes left after the announced keys"),
    Case("a value that is not a number", lambda f: text_rows(f / "v.txt", f"2 {D}\n", [ROWS[0], "cat " + "x " * D]), INFO, 1, "not a number",
         "refused: the line's value is named"),
    Case("key not UTF-8", lambda f: written(f / "v.txt", f"2 {D}\n{ROWS[0]}\n".encode() + b"caf\xe9" + ROWS[1][3:].encode() + b"\n"),
         INFO, 1, "not valid UTF-8", "refused: a key is not valid UTF-8"),
    Case("attn folder keys.txt not UTF-8", lambda f: keys_bytes(fast_folder(f / "v"), b"the\ncaf\xe9\nsat\non\nmat\ndog\nx\n"), INFO, 1, "keys.txt",
         "refused: keys.txt cannot be read"),
    Case("attn folder keys.txt one key short", lambda f: keys_bytes(fast_folder(f / "v"), "\n".join(KEYS[:-1]).encode() + b"\n"), INFO, 1,
         "6 keys but vectors.npy has 7 rows", "refused: the counts disagree"),
    Case("duplicate keys (word2vec text)", lambda f: text_rows(f / "v.txt", f"3 {D}\n", [ROWS[0], row("the", MATRIX[1]), ROWS[2]]),
         ["similarity", "the", "sat", "--vectors", "FILE", "--json"], 0, "found more than once",
         "loaded with one line on stderr; each key keeps its first vector"),
    Case("duplicate keys (attn folder)", lambda f: keys_bytes(fast_folder(f / "v", ["the", "cat", "sat"], MATRIX[:3]), b"the\ncat\nthe\n"), INFO, 0, "found more than once",
         "info says so; the first row is the key's vector everywhere"),
    Case("a NaN row", lambda f: text_rows(f / "v.txt", f"3 {D}\n", [ROWS[0], row("cat", [math.nan] * D), ROWS[2]]), USE, 1,
         "the vector of 'cat' holds NaN", "loaded; using that key is refused, naming it (exit 1); never a nearest key"),
    Case("an infinite row", lambda f: text_rows(f / "v.txt", f"3 {D}\n", [ROWS[0], row("cat", [math.inf] * D), ROWS[2]]), SIMILARITY, 1,
         "the vector of 'cat' holds NaN or infinite", "as a NaN row"),
    Case("rows near float32's limit", lambda f: text_rows(f / "v.txt", f"3 {D}\n", [ROWS[0], row("cat", [3e38] * D), ROWS[2]]),
         [*USE[:-2], "--vectors", "FILE", "--neighbors", "2"], 0, "", "computed in float64, no overflow warning"),
    Case("a zero row", lambda f: text_rows(f / "v.txt", f"3 {D}\n", [row("the", [0.0] * D), ROWS[1], ROWS[2]]), SIMILARITY, 0,
         '"alignment": "undefined"', "cosine undefined: JSON null with alignment \"undefined\""),
    Case("vectors.npy holds pickled objects", lambda f: npy_file(fast_folder(f / "v"), npy_bytes(np.array([{"a": 1}] * 7, dtype=object))),
         INFO, 2, "pickled", "refused, nothing unpickled"),
    Case("vectors.npy is an .npz", lambda f: npy_file(fast_folder(f / "v"), zip_bytes()), INFO, 1, "zip archive", "refused"),
    Case("vectors.npy header damaged", lambda f: npy_file(fast_folder(f / "v"), b"\x93NUMPY\x01\x00\x10\x00{'descr': (((  \n"),
         INFO, 1, "damaged header", "refused"),
    Case("vectors.npy header claims 10^14 rows", lambda f: npy_file(fast_folder(f / "v"), npy_header_claiming((10**14, D), "<f4")),
         INFO, 1, "truncated", "refused before mapping anything"),
    Case("vectors.npy 1-d", lambda f: npy_file(fast_folder(f / "v"), npy_bytes(np.zeros(7, np.float32))), INFO, 1, "2-d float matrix", "refused"),
    Case("vectors.npy of integers", lambda f: npy_file(fast_folder(f / "v"), npy_bytes(np.zeros((7, D), np.int32))), INFO, 1, "2-d float", "refused"),
    Case("vectors.npy with no columns", lambda f: npy_file(fast_folder(f / "v"), npy_bytes(np.zeros((7, 0), np.float32))), INFO, 1, "no vectors",
         "refused"),
    Case("gensim pickle, not trusted", lambda f: malicious_pickle(f), INFO, 2, "--trust-pickle", "refused; the pickle never runs"),
    # heads
    Case("head: empty file", lambda f: written(f / "h.npz", b""), HEAD, 1, "h.npz", "refused"),
    *[Case(f"head: cut at {keep:.0%}", (lambda keep: lambda f: cut(head_file(f / "h.npz"), keep))(keep), HEAD, (1, 2),
           about="refused, naming the file (never used)") for keep in CUTS],
    Case("head: member is not an array", lambda f: npz(f / "h.npz", {**head_arrays(), "w_q": b"hello"}), HEAD, 1, "not a readable .npy",
         "refused"),
    Case("head: a member's .npy header damaged", lambda f: npz(f / "h.npz", {**head_arrays(), "w_q": b"\x93NUMPY\x01\x00\x10\x00{'descr': (((  \n"}),
         HEAD, 1, "damaged header", "refused"),
    Case("head: header claims 10^14 x 10^6", lambda f: npz(f / "h.npz", {**head_arrays(), "w_q": npy_header_claiming((10**14, 10**6))}), HEAD, 2,
         "larger than a head can be", "refused before reading: the shape is checked first"),
    Case("head: deflate data corrupt", lambda f: flip_bytes(head_file(f / "h.npz", compressed=True), 300, 40), HEAD, 1, "h.npz",
         "refused: cannot read the array"),
    Case("head: member holds pickled objects", lambda f: head_file(f / "h.npz", w_q=np.array([{"a": 1}], dtype=object)), HEAD, 2, "pickled",
         "refused, nothing unpickled"),
    Case("head: the file is a pickle", lambda f: pickle_named(f / "h.npz"), HEAD, 2, "pickle", "refused, nothing unpickled"),
    Case("head: a single .npy", lambda f: written(f / "h.npz", npy_bytes(np.eye(D))), HEAD, 2, "single array", "refused"),
    Case("head: NaN weights", lambda f: head_file(f / "h.npz", w_q=np.full((D, 4), np.nan)), HEAD, 2, "NaN", "refused"),
    Case("head: d_k = 0", lambda f: head_file(f / "h.npz", w_q=np.zeros((D, 0)), w_k=np.zeros((D, 0))), HEAD, 2, "at least 1", "refused"),
    Case("head: meta nested 100,000 deep", lambda f: head_file(f / "h.npz", meta=np.array("[" * 100_000 + "]" * 100_000)), HEAD, 2,
         "nested too deeply", "refused"),
    Case('head: meta {"untrained": "no"}', lambda f: head_file(f / "h.npz", meta=np.array('{"untrained": "no"}')), HEAD, 2,
         "must be true or false", "refused: not read by truthiness"),
    Case("head: meta of 100 MB", lambda f: head_file(f / "h.npz", meta=npy_header_claiming((), "<U25000000")), HEAD, 2, "larger than a head",
         "refused before reading"),
    Case("head: w_q of the wrong d", lambda f: head_file(f / "h.npz", w_q=np.ones((40, 4)), w_k=np.ones((40, 4))), HEAD, 2, "d=50",
         "refused, naming the expected shape"),
    # checkpoints (--model)
    Case("checkpoint: model.safetensors cut in half", lambda f: damaged_model(f, cut_weights), ["model", "info", "FILE"], 1,
         "model.safetensors", "refused"),
    Case("checkpoint: config.json not JSON", lambda f: damaged_model(f, lambda m: (m / "config.json").write_text("{nope")),
         ["model", "info", "FILE"], 1, "not valid JSON", "refused"),
    Case("checkpoint: config.json nested 100,000 deep", lambda f: damaged_model(f, lambda m: (m / "config.json").write_text("[" * 100_000 + "]" * 100_000)),
         ["model", "info", "FILE"], 1, "config.json", "refused"),
    Case("checkpoint: a tensor's header claims 10^9 x 10^9", lambda f: damaged_model(f, huge_safetensors), ["model", "info", "FILE"], 1,
         "model.safetensors", "refused"),
    Case("checkpoint: no tokenizer", lambda f: damaged_model(f, lambda m: [(m / n).unlink() for n in ("vocab.json", "merges.txt")]),
         ["model", "info", "FILE"], 1, "tokenizer", "refused"),
    Case("checkpoint: vocab.json not JSON", lambda f: damaged_model(f, lambda m: (m / "vocab.json").write_text("{nope")),
         ["model", "info", "FILE"], 1, "tokenizer", "refused"),
    # checkpoints: dtypes other than F32, config values of another type, bytes that are not UTF-8, lone surrogates
    *[Case(f"checkpoint: {name} stored as {dtype}", (lambda name, dtype: lambda f: damaged_model(f, lambda m: restore(m, name, dtype)))(name, dtype),
           [*USE_MODEL, "--json"], 0, "", "read as float32 exactly; inspect runs") for name in ("wte.weight", "h.0.attn.c_attn.weight")
      for dtype in ("F16", "BF16", "F64")],
    *[Case(f"checkpoint: h.0.ln_1.weight stored as {dtype}", (lambda dtype: lambda f: damaged_model(f, lambda m: change_tensors(
        m, h__0__ln_1__weight=(dtype, bytes([0x38 if dtype == "F8_E4M3" else 0x3C] * 64)))))(dtype), [*USE_MODEL, "--json"], 0, "",
        "each byte widened to the float32 the format defines") for dtype in ("F8_E4M3", "F8_E5M2")],
    Case("checkpoint: an 8-bit NaN", lambda f: damaged_model(f, lambda m: change_tensors(m, h__0__ln_1__bias=("F8_E4M3", b"\x7f" * 64))),
         ["model", "info", "FILE"], 1, "h.0.ln_1.bias: holds NaN", "refused, naming the tensor"),
    *[Case(f"checkpoint: a weight stored as {dtype}", (lambda dtype, size: lambda f: damaged_model(f, lambda m: change_tensors(
        m, h__1__ln_2__weight=(dtype, b"\x01" * 64 * size))))(dtype, size), ["model", "info", "FILE"], 1, f"stored as {dtype}",
        "refused, naming the tensor and its dtype") for dtype, size in (("I32", 4), ("U8", 1), ("F8_E8M0", 1), ("C64", 8))],
    *[Case(f"checkpoint: config {key} = {json.dumps(value)}", (lambda key, value: lambda f: damaged_model(f, lambda m: edit_config(m, **{key: value})))(key, value),
           ["model", "info", "FILE"], 1, key, "refused, naming config.json and the key")
      for key, value in (("model_type", ["gpt2"]), ("activation_function", {"gelu_new": 1}), ("n_layer", "2"), ("n_head", 4.0),
                         ("layer_norm_epsilon", float("nan")), ("n_inner", [256]), ("_name_or_path", 7))],
    Case("checkpoint: config understates the layers", lambda f: damaged_model(f, lambda m: edit_config(m, n_layer=1)), ["model", "info", "FILE"], 1,
         "holds 2 layers", "refused, naming both counts"),
    Case("checkpoint: config _name_or_path a lone surrogate", lambda f: damaged_model(f, lambda m: edit_config(m, _name_or_path="\ud800")),
         ["model", "info", "FILE", "--json"], 0, '"name": "\\ud800"', "written as its JSON escape"),
    *[Case(f"checkpoint: {name} not UTF-8", (lambda name: lambda f: damaged_model(f, lambda m: (m / name).write_bytes(b"\xff" + (m / name).read_bytes())))(name),
           ["model", "info", "FILE"], 1, name if name == "config.json" else "tokenizer", "refused") for name in ("config.json", "vocab.json", "merges.txt")],
    Case("checkpoint: weights overflow float32", lambda f: damaged_model(f, lambda m: change_tensors(m, h__0__attn__c_attn__weight=np.full((64, 192), 1e20, np.float32))),
         [*USE_MODEL, "--json"], 1, "overflows float32 in layer h.0", "refused, naming the layer and its weights"),
    Case("checkpoint: a tensor of 3e38", lambda f: damaged_model(f, lambda m: change_tensors(m, h__0__mlp__c_fc__weight=np.full((64, 256), 3e38, np.float32))),
         ["model", "info", "FILE"], 0, "", "read without an overflow warning"),
]


def written(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def folder_of(path: Path) -> Path:
    path.mkdir()
    return path


def flip_header(path: Path) -> Path:
    data = path.read_bytes()
    first, rest = data.split(b"\n", 1)
    path.write_bytes(f"3 {D}".encode() + b"\n" + rest)
    return path


def keys_bytes(folder: Path, data: bytes) -> Path:
    (folder / "keys.txt").write_bytes(data)
    return folder


def npy_file(folder: Path, data: bytes) -> Path:
    (folder / "vectors.npy").write_bytes(data)
    return folder


def zip_bytes() -> bytes:
    out = io.BytesIO()
    np.savez(out, a=np.zeros((7, D)))
    return out.getvalue()


def malicious_pickle(folder: Path) -> Path:
    import pickle

    path = folder / "words.kv"
    path.write_bytes(pickle.dumps(Pickled(folder / "PWNED"), protocol=4))
    return path


def pickle_named(path: Path) -> Path:
    import pickle

    path.write_bytes(pickle.dumps(Pickled(path.parent / "PWNED"), protocol=4))
    return path


def damaged_model(folder: Path, damage) -> Path:
    """A copy of the tiny GPT-2 checkpoint, damaged by `damage(model folder)`; the folder is called "model", so the
    config's _name_or_path names it."""
    import shutil

    target = folder / "model"
    shutil.copytree(checkpoints.tiny_gpt2_folder(), target)
    damage(target)
    return target


def restore(folder: Path, name: str, dtype: str) -> None:
    """Store one tensor in another float dtype, holding values that dtype keeps exactly (BF16: the top half of a float32)."""
    values = float32_of(folder, name)
    if dtype == "BF16":
        raw = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    else:
        raw = values.astype({"F16": "<f2", "F64": "<f8"}[dtype]).tobytes()
    change_tensors(folder, **{name.replace(".", "__"): (dtype, raw)})


def cut_weights(folder: Path) -> None:
    cut(folder / "model.safetensors", 0.5)


def huge_safetensors(folder: Path) -> None:
    path = folder / "model.safetensors"
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    name = next(k for k in header if k != "__metadata__")
    header[name]["shape"] = [10**9, 10**9]
    new = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(new)) + new + data[8 + n :])


def run_case(case: Case, folder: Path):
    path = case.make(folder)
    outcome = check(attn(*case.args(path), env={"COLUMNS": "100"}))
    return path, outcome


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corrupt_file(case, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, outcome = run_case(case, tmp_path)
    codes = case.exit if isinstance(case.exit, tuple) else (case.exit,)
    assert outcome.code in codes, outcome
    if case.says:
        assert case.says in (outcome.stderr if outcome.code else outcome.stderr + outcome.text), outcome
    if outcome.code:
        assert outcome.stdout == b"" and outcome.stderr.count("\n") == 1 and path.name in outcome.stderr, outcome
    assert not (tmp_path / "PWNED").exists()  # no pickle ran
    if case.command == INFO and outcome.code == 0 and "cut at" in case.name:
        # What a cut file still gives is the first keys, with their exact vectors: nothing made up.
        from attn_cli.vectors.loading import load

        loaded = load(path)
        n = len(loaded)
        assert loaded.index_to_key == KEYS[:n]
        # A text file's last line cut inside a number still parses (as it would without its final
        # newline): only the rows before it are sure to be whole.
        exact = n - 1 if "text" in case.name else n
        assert_copied(np.asarray(loaded.vectors[:exact])[:, :D], MATRIX[:exact, : loaded.vector_size])
        assert loaded.vector_size == D or n == 1


@pytest.mark.slow
def test_a_corrupt_file_never_leaves_a_half_written_destination(tmp_path):
    """vectors convert of every damaged vectors file: refused, and nothing is left beside the destination."""
    for case in CASES:
        if case.command != INFO:
            continue
        folder = tmp_path / case.name.replace(" ", "-").replace("%", "")
        folder.mkdir()
        path = case.make(folder)
        outcome = check(attn("vectors", "convert", str(path), str(folder / "out"), "--trust-pickle"))
        leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".")]
        assert not leftovers, (case.name, leftovers)
        assert (folder / "out").exists() == (outcome.code == 0), outcome
        if case.name.startswith("gensim pickle"):
            assert (folder / "PWNED").exists()  # --trust-pickle: the user said so; without it (above) it never ran


def table() -> str:
    """The Markdown table of every case: the file, the command, what attn did (exit code, message).
    The cuts of one format at 0%, 5%, ..., 95% make one row, with the exit codes they gave."""
    import re
    import shlex
    import tempfile
    from collections import Counter

    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(CASES):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            path, outcome = run_case(case, folder)
            name = re.sub(r"cut at \d+%", "cut at 0%, 5%, ..., 95%", case.name)
            command = "attn " + shlex.join(a.replace(str(folder) + "/", "") for a in case.args(path))
            message = outcome.stderr.strip().splitlines()[-1].replace(str(folder) + "/", "") if outcome.stderr.strip() else "-"
            row = rows.setdefault(name, {"command": command, "codes": Counter(), "about": case.about, "messages": []})
            row["codes"][outcome.code] += 1
            if message not in row["messages"]:
                row["messages"].append(message)
    lines = ["| damaged file | command | exit | what attn does | its message |", "| --- | --- | --- | --- | --- |"]
    for name, row in rows.items():
        codes = ", ".join(f"{code} ({n}x)" if len(row["codes"]) > 1 or n > 1 else str(code) for code, n in sorted(row["codes"].items()))
        shown = row["messages"][0] if len(row["messages"]) == 1 else f"{row['messages'][-1]} (and {len(row['messages']) - 1} other messages)"
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        lines.append(f"| {name} | `{row['command']}` | {codes} | {row['about']} | `{shown.replace('|', '/')}` |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
