"""Checkpoints as hostile input: weights in other dtypes (BF16, 8-bit floats), config values of the
wrong type or that understate the model, tokenizers that cannot split a word, weights that overflow
float32, text from a file that UTF-8 cannot hold, unreadable files and homes of users that do not
exist. Each gets its answer computed exactly, or one `attn: ...` line (tests/oracle.py), never a
traceback, a warning dump or an internal error.

Fixtures are copies of the tiny GPT-2 (tests/fixtures/models/tiny-gpt2) and of all-MiniLM-L6-v2
(tests/checkpoints.py), with one tensor, config value or tokenizer entry changed.
"""

import csv
import io
import json
import os
import pwd
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from attn_cli.errors import DataError
from attn_cli.models import checkpoint, transformer
from tests import checkpoints
from tests.oracle import ATTN, Outcome, attn, attn_process, check

G = checkpoints.tiny_gpt2_folder()
needs_script = pytest.mark.skipif(ATTN is None, reason="the attn console script is not installed")


def one_line(outcome, code: int, *parts: str):
    check(outcome)
    assert outcome.code == code, outcome
    assert outcome.stdout == b"" and outcome.stderr.count("\n") == 1 and outcome.stderr.startswith("attn: "), outcome
    for part in parts:
        assert part in outcome.stderr, outcome
    return outcome


# --- making damaged copies ------------------------------------------------------------------------


def copy_model(source: Path, target: Path, link_weights: bool = False) -> Path:
    """A copy of a model folder; with `link_weights`, model.safetensors is a link to the original (MiniLM's is 90 MB)."""
    target.mkdir(parents=True)
    for item in source.iterdir():
        if item.is_file() and not item.name.startswith("."):
            if link_weights and item.name == checkpoint.WEIGHT_FILE:
                (target / item.name).symlink_to(item)
            else:
                shutil.copy(item, target / item.name)
    return target


def minilm_copy(target: Path) -> Path:
    return copy_model(checkpoints.minilm_folder(), target, link_weights=True)


def edit_config(folder: Path, **changes) -> Path:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | changes))  # ensure_ascii: a lone surrogate is written as \ud800
    return folder


def read_tensors(path: Path) -> dict:
    """name -> [dtype, shape, raw bytes], in the file's order (written by write_tensors, read with no help from attn)."""
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + n])
    return {name: [e["dtype"], e["shape"], data[8 + n + e["data_offsets"][0] : 8 + n + e["data_offsets"][1]]]
            for name, e in header.items() if name != "__metadata__"}


def write_tensors(path: Path, tensors: dict) -> None:
    """A safetensors file: the 8-byte header length, the JSON header (padded to 8 bytes), the tensors' bytes."""
    header, offset = {}, 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(raw for _, _, raw in tensors.values()))


def change_tensors(folder: Path, **changed) -> Path:
    """Replace tensors of folder/model.safetensors: name (without "transformer.") -> (dtype, raw bytes) or a float32 array."""
    path = folder / checkpoint.WEIGHT_FILE
    tensors = read_tensors(path)
    for short, new in changed.items():
        entry = tensors["transformer." + short.replace("__", ".")]
        entry[0], entry[2] = ("F32", np.ascontiguousarray(new, "<f4").tobytes()) if isinstance(new, np.ndarray) else new
    write_tensors(path, tensors)
    return folder


def float32_of(folder: Path, name: str) -> np.ndarray:
    dtype, shape, raw = read_tensors(folder / checkpoint.WEIGHT_FILE)["transformer." + name]
    assert dtype == "F32"
    return np.frombuffer(raw, "<f4").reshape(shape)


# --- the Hugging Face cache -----------------------------------------------------------------------------


@pytest.mark.parametrize("ref", [b"\xff\xfe\x00", b"../../../elsewhere", b"..", b"", "caf\u00e9".encode("latin-1")])
def test_a_cache_ref_that_is_damaged_falls_back_to_the_newest_snapshot(tmp_path, monkeypatch, ref):
    repo = tmp_path / "hub" / "models--org--tiny"
    old, new = repo / "snapshots" / "old", repo / "snapshots" / "new"
    shutil.copytree(G, old)
    shutil.copytree(G, new)
    os.utime(old, (1_000_000, 1_000_000))
    (tmp_path / "elsewhere").mkdir()
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_bytes(ref)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert checkpoint.resolve("org/tiny") == new
    out = check(attn("model", "info", "org/tiny", "--json"))
    assert out.code == 0 and json.loads(out.text)["path"] == str(new)
    (repo / "refs" / "main").write_text("old\n")
    assert checkpoint.resolve("org/tiny") == old  # a sound ref is followed


# --- paths -----------------------------------------------------------------------------------------------


def no_such_user() -> str:
    for i in range(100):
        name = f"nosuchuser{i}"
        try:
            pwd.getpwnam(name)
        except KeyError:
            return name
    pytest.skip("every nosuchuserN exists")


@pytest.mark.parametrize("command, env", [
    (["model", "info", "~{u}/x"], {}), (["inspect", "the cat", "--model", "~{u}/x"], {}), (["similarity", "cat", "dog", "--vectors", "~{u}/v"], {}),
    (["similarity", "cat", "dog"], {"ATTN_VECTORS": "~{u}/v"}), (["vectors", "info", "~{u}/v"], {}), (["inspect", "the cat", "--head", "~{u}/h.npz"], {}),
    (["inspect", "the cat", "--sense-set", "~{u}/s.tsv"], {}), (["vectors", "convert", "~{u}/v", "out"], {}),
    (["vectors", "convert", str(G / "vocab.json"), "~{u}/out"], {}), (["heads", "train", "links.tsv", "~{u}/o.npz", "--steps", "1"], {}),
    (["model", "info", "org/x"], {"HF_HUB_CACHE": "~{u}/hub"}), (["model", "info", "org/x"], {"HF_HOME": "~{u}/hf", "HF_HUB_CACHE": None}),
])
def test_the_home_of_a_user_that_does_not_exist_is_a_usage_error(tmp_path, monkeypatch, command, env):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "links.tsv").write_text("the big dog\tdog\tbig\n")
    user = no_such_user()
    args = [a.replace("{u}", user) for a in command]
    one_line(attn(*args, env={k: v and v.replace("{u}", user) for k, v in env.items()}), 2, f"~{user}/", f"no user named {user}")


# --- float options --------------------------------------------------------------------------------------


FLOAT_OPTIONS = {  # every float option, with a command line it is valid in
    ("softmax", "--temperature"): ["softmax", "1", "2"],
    ("heads train", "--holdout"): ["heads", "train", "links.tsv", "o.npz", "--steps", "1"],
}


def float_options():
    import typer

    from attn_cli.cli import app

    def walk(command, path):
        for sub_name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, [*path, sub_name])
        for param in command.params:
            if getattr(param.type, "name", "").startswith("float"):
                yield " ".join(path), param.opts[0]

    return sorted(walk(typer.main.get_command(app), []))


def test_every_float_option_is_known_here():
    assert float_options() == sorted(FLOAT_OPTIONS), "a new float option: add it to FLOAT_OPTIONS (it must refuse NaN)"


@pytest.mark.parametrize("option", sorted(FLOAT_OPTIONS), ids=lambda o: " ".join(o))
@pytest.mark.parametrize("value", ["nan", "-nan", "NaN", "inf", "-inf"])
def test_every_float_option_refuses_nan_and_inf_in_one_line(tmp_path, monkeypatch, option, value):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "links.tsv").write_text("the big dog\tdog\tbig\n")
    out = check(attn(*FLOAT_OPTIONS[option], option[1], value))
    assert out.code == 2 and out.stdout == b"" and out.stderr.strip().splitlines()[-1].startswith("attn: "), out
    assert option[1] in out.stderr and not (tmp_path / "o.npz").exists()


# --- text from files that UTF-8 cannot hold ---------------------------------------------------------------


@pytest.fixture
def surrogate_model(tmp_path):
    return edit_config(copy_model(G, tmp_path / "m"), _name_or_path="\ud800x")


@pytest.fixture
def surrogate_head(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "odd.npz"
    meta = json.dumps({"name": "odd", "description": "lone \ud800 surrogate"})  # as a file holds it: the escape \ud800
    np.savez(path, w_q=rng.normal(size=(50, 4)), w_k=rng.normal(size=(50, 4)), w_v=np.eye(50), meta=np.array(meta))
    return path


def parsed(out, fmt: str):
    """stdout in `fmt`, checked complete: JSON and JSONL parse, CSV rows all have the header's width."""
    assert out.code == 0, out
    text = out.text  # valid UTF-8 (check() too)
    if fmt == "--json":
        return json.loads(text)
    if fmt == "--jsonl":
        return [json.loads(line) for line in text.splitlines()]
    if fmt == "--csv":
        rows = list(csv.reader(io.StringIO(text)))
        assert rows and all(len(r) == len(rows[0]) for r in rows)
        return rows
    return text


@pytest.mark.parametrize("fmt", ["--json", "--jsonl", "--table"])
def test_a_lone_surrogate_in_a_config_is_written_as_its_escape(surrogate_model, fmt):
    out = check(attn("model", "info", surrogate_model, *([fmt] if fmt != "--table" else [])))
    got = parsed(out, fmt)
    if fmt == "--json":
        assert got["name"] == "\ud800x" and "\\ud800x" in out.text  # parses back to what the file held
    elif fmt == "--jsonl":
        assert got[0]["name"] == "\ud800x"
    else:
        assert "\\ud800x" in got  # the view escapes it as it escapes control characters


@pytest.mark.parametrize("fmt", ["--json", "--jsonl", "--csv", "--table"])
def test_a_lone_surrogate_reaches_no_output_unescaped(surrogate_model, surrogate_head, fmt):
    options = [fmt] if fmt != "--table" else []
    model = parsed(check(attn("inspect", "the cat", "--model", surrogate_model, "--head", "1.0", *options)), fmt)
    head = parsed(check(attn("inspect", "the cat", "--head", surrogate_head, *options)), fmt)
    stream = parsed(check(attn("inspect", "-", "--model", surrogate_model, "--head", "1.0", *options, stdin=b"the cat\nthe dog\n")), fmt)
    if fmt == "--json":
        assert model["model"]["name"] == "\ud800x" and head["heads"][0]["description"] == "lone \ud800 surrogate"
        assert [s["model"]["name"] for s in stream] == ["\ud800x"] * 2
    elif fmt == "--jsonl":
        assert model[0]["model"]["name"] == "\ud800x" and [s["line"] for s in stream] == [1, 2]
    elif fmt == "--csv":
        assert len(model) == 1 + 4 and len(head) == 1 + 4  # "the cat": 2 tokens, 2 x 2 cells a head
        assert [r[0] for r in stream[1:5]] == ["1"] * 4 and {r[0] for r in stream[5:]} == {"2"}
    else:
        assert "\\ud800x" in model


@needs_script
def test_a_lone_surrogate_is_escaped_in_a_real_process_too(surrogate_model):
    out = check(attn_process("model", "info", str(surrogate_model), "--json"))
    assert out.code == 0 and json.loads(out.stdout)["name"] == "\ud800x"


