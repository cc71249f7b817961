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
from attn_cli.models import loading
from attn_cli.models.sources import folder as checkpoint
from tests import checkpoints
from tests.exact import assert_copied, assert_same_ids
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


# --- BF16 and the 8-bit floats --------------------------------------------------------------------

# The OCP 8-bit floating point spec (v1.0), table 1 and its examples: byte -> value (PyTorch's
# float8_e4m3fn and float8_e5m2, safetensors' F8_E4M3 and F8_E5M2).
E4M3 = {0x00: 0.0, 0x01: 2.0**-9, 0x07: 0.875 * 2.0**-6, 0x08: 2.0**-6, 0x38: 1.0, 0x3C: 1.5, 0x40: 2.0, 0x77: 240.0, 0x7E: 448.0,
        0x80: -0.0, 0xB8: -1.0, 0xC0: -2.0, 0xFE: -448.0, 0x7F: np.nan, 0xFF: np.nan}
E5M2 = {0x00: 0.0, 0x01: 2.0**-16, 0x03: 0.75 * 2.0**-14, 0x04: 2.0**-14, 0x3C: 1.0, 0x3E: 1.5, 0x40: 2.0, 0x7B: 57344.0,
        0x7C: np.inf, 0xFC: -np.inf, 0x7D: np.nan, 0x7E: np.nan, 0x7F: np.nan, 0x80: -0.0, 0xBC: -1.0, 0xFB: -57344.0}
# bfloat16: the top 16 bits of a float32
BF16 = {0x3F80: 1.0, 0xC000: -2.0, 0x4049: 3.140625, 0x0080: 2.0**-126, 0x0001: 2.0**-133, 0x7F7F: (2 - 2.0**-7) * 2.0**127,
        0x8000: -0.0, 0x7F80: np.inf, 0xFF80: -np.inf, 0x7FC0: np.nan}


@pytest.mark.parametrize("dtype, table", [("F8_E4M3", E4M3), ("F8_E5M2", E5M2), ("BF16", BF16)])
def test_stored_bits_become_the_values_the_formats_define(dtype, table):
    stored = np.array(list(table), checkpoint.STORED[dtype])
    got = checkpoint.widen("t", stored, dtype)
    assert got.dtype == np.float32
    expected = np.array(list(table.values()), np.float32)
    assert_copied(got, expected)  # NaN where NaN, exactly equal elsewhere: a cast, no arithmetic
    assert_same_ids(np.signbit(got), np.signbit(expected))  # -0.0 keeps its sign


@pytest.mark.parametrize("dtype, largest", [("F8_E4M3", 0x7E), ("F8_E5M2", 0x7B)])
def test_8_bit_floats_rise_with_their_byte_and_the_sign_bit_mirrors_them(dtype, largest):
    values = checkpoint.widen("t", np.arange(256, dtype=np.uint8), dtype)
    positive = values[: largest + 1]
    assert (np.diff(positive) > 0).all()  # every finite positive byte a distinct, larger value
    assert_copied(values[0x80:], -values[:0x80])  # negation flips the sign bit alone
    finite = np.isfinite(values)
    assert finite.sum() == (2 * (largest + 1)), "E4M3FN: all but 2 NaN bytes; E5M2: all but 2 inf and 6 NaN"


@pytest.mark.floats  # the same arithmetic over values in other memory
def test_a_bf16_checkpoint_runs_as_the_float32_one_holding_the_same_values(tmp_path):
    """wte (read lazily, a row at a time), one matrix and ln_f in BF16: the values loaded are exactly the
    float32 ones they stand for, and so is every number of the forward pass."""
    names = ("wte.weight", "h.0.attn.c_attn.weight", "ln_f.weight")
    exact = {n: (float32_of(G, n).view(np.uint32) & 0xFFFF0000).view(np.float32) for n in names}  # float32 values BF16 holds exactly
    reference = change_tensors(copy_model(G, tmp_path / "f32"), **{n.replace(".", "__"): v for n, v in exact.items()})
    bf16 = change_tensors(copy_model(G, tmp_path / "bf16"),
                          **{n.replace(".", "__"): ("BF16", (v.view(np.uint32) >> 16).astype("<u2").tobytes()) for n, v in exact.items()})
    a, b = loading.load(str(reference)), loading.load(str(bf16))
    assert_copied(b.weights.vocabulary(), exact["wte.weight"])  # bfloat16 widened: the bits shifted, no arithmetic
    assert_copied(b.weights.rows([5, 1, 5]), exact["wte.weight"][[5, 1, 5]])
    assert_copied(b.weights.layer(0)["attn.qkv.w"], exact["h.0.attn.c_attn.weight"])
    ta, tb = a.run("the cat sat on the mat"), b.run("the cat sat on the mat")
    # the same values, read into other memory: a pass over them may round apart in float32's last digits
    np.testing.assert_allclose(ta.streams(), tb.streams(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ta.stacked("attn.pattern"), tb.stacked("attn.pattern"), rtol=0, atol=1e-6)
    out_a, out_b = (check(attn("inspect", "the cat", "--model", m, "--json")) for m in (reference, bf16))
    assert out_a.code == out_b.code == 0
    assert json.loads(out_a.text)["heads"] == json.loads(out_b.text)["heads"]


@pytest.mark.parametrize("dtype, table", [("F8_E4M3", E4M3), ("F8_E5M2", E5M2)])
@pytest.mark.floats  # the same arithmetic over values in other memory
def test_an_8_bit_float_checkpoint_runs_as_the_float32_one_holding_the_same_values(tmp_path, dtype, table):
    finite = [b for b, v in table.items() if np.isfinite(v) and abs(v) <= 2]
    stored = np.resize(np.array(finite, np.uint8), 64)  # h.0.ln_1 has 64 values
    values = np.array([table[b] for b in stored], np.float32)
    reference = change_tensors(copy_model(G, tmp_path / "f32"), h__0__ln_1__weight=values, h__1__ln_2__bias=values)
    f8 = change_tensors(copy_model(G, tmp_path / "f8"), h__0__ln_1__weight=(dtype, stored.tobytes()), h__1__ln_2__bias=(dtype, stored.tobytes()))
    info = check(attn("model", "info", f8, "--json"))
    assert info.code == 0 and json.loads(info.text)["parameters"]["total"] == 136_960
    ta, tb = loading.load(str(reference)).run("the cat sat"), loading.load(str(f8)).run("the cat sat")
    np.testing.assert_allclose(ta.streams(), tb.streams(), rtol=1e-5, atol=1e-5)  # equal weights in other memory
    np.testing.assert_allclose(ta.get("resid_final"), tb.get("resid_final"), rtol=1e-5, atol=1e-5)


def test_an_8_bit_nan_is_refused_naming_its_tensor(tmp_path):
    model = change_tensors(copy_model(G, tmp_path / "m"), h__0__ln_1__bias=("F8_E4M3", bytes([0x38] * 63 + [0x7F])))
    one_line(attn("model", "info", model), 1, "h.0.ln_1.bias", "NaN")


@pytest.mark.parametrize("dtype", ["I32", "F8_E8M0", "C64"])
def test_a_dtype_attn_does_not_read_is_named_when_a_layer_needs_it(tmp_path, dtype):
    size = {"I32": 4, "F8_E8M0": 1, "C64": 8}[dtype]
    used = change_tensors(copy_model(G, tmp_path / "used"), h__1__ln_2__weight=(dtype, b"\x01" * 64 * size))
    one_line(attn("model", "info", used), 1, "h.1.ln_2.weight", f"stored as {dtype}", "F32", "BF16", "F8_E4M3")
    unused = copy_model(G, tmp_path / "unused")
    tensors = read_tensors(unused / checkpoint.WEIGHT_FILE)
    tensors["transformer.h.0.attn.masked_bias"] = [dtype, [4], b"\x01" * 4 * size]  # a buffer no layer reads
    write_tensors(unused / checkpoint.WEIGHT_FILE, tensors)
    assert check(attn("inspect", "the cat", "--model", unused, "--json")).code == 0


# --- config values: their types, and the tensors they describe ------------------------------------------


@pytest.mark.parametrize("key, value", [
    ("model_type", ["gpt2"]), ("model_type", {"gpt2": 1}), ("activation_function", ["gelu_new"]), ("activation_function", {"a": 1}),
    ("activation_function", 3), ("n_layer", "2"), ("n_layer", 2.0), ("n_layer", True), ("n_layer", [2]), ("n_layer", -1),
    ("n_head", {"n": 4}), ("n_embd", "64"), ("n_inner", [256]), ("n_inner", 256.5), ("n_positions", "64"), ("vocab_size", [512]),
    ("layer_norm_epsilon", "1e-5"), ("layer_norm_epsilon", [1e-5]), ("layer_norm_epsilon", True), ("layer_norm_epsilon", float("nan")),
    ("layer_norm_epsilon", float("inf")), ("_name_or_path", ["x"]), ("_name_or_path", {"x": 1}),
])
def test_a_config_value_of_the_wrong_type_is_one_line_naming_config_json_and_the_key(tmp_path, key, value):
    model = edit_config(copy_model(G, tmp_path / "m"), **{key: value})
    for command in (["model", "info", model], ["inspect", "the cat", "--model", model, "--json"]):
        one_line(attn(*command), 1, "config.json", key)


@pytest.mark.parametrize("key, value", [("hidden_act", ["gelu"]), ("hidden_act", {"gelu": True}), ("position_embedding_type", {"x": 1}),
                                        ("num_hidden_layers", "6"), ("layer_norm_eps", {}), ("num_attention_heads", None)])
def test_a_bert_config_value_of_the_wrong_type_is_one_line(tmp_path, key, value):
    one_line(attn("model", "info", edit_config(minilm_copy(tmp_path / "m"), **{key: value})), 1, "config.json", key)


def test_do_lower_case_must_be_true_or_false(tmp_path):
    model = minilm_copy(tmp_path / "m")
    (model / "tokenizer.json").unlink()  # vocab.txt alone: tokenizer_config.json says how to lowercase
    (model / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": "false"}))
    one_line(attn("model", "info", model), 1, "tokenizer_config.json", "do_lower_case")


def test_a_config_with_fewer_layers_than_the_file_holds_is_refused_naming_both(tmp_path):
    bert = edit_config(minilm_copy(tmp_path / "bert"), num_hidden_layers=1)
    for command in (["model", "info", bert], ["inspect", "the cat", "--model", bert]):
        one_line(attn(*command), 1, "num_hidden_layers is 1", "holds 6 layers", "encoder.layer.5")
    gpt2 = edit_config(copy_model(G, tmp_path / "gpt2"), n_layer=1)
    one_line(attn("model", "info", gpt2), 1, "n_layer is 1", "holds 2 layers (h.0 to h.1)")
    more = edit_config(copy_model(G, tmp_path / "more"), n_layer=3)
    one_line(attn("model", "info", more), 1, "missing tensor h.2.")


@pytest.mark.parametrize("changes, says", [
    ({"n_head": 3}, "not a multiple of 3 heads"), ({"n_head": 128}, "not a multiple of 128 heads"),
    ({"num_attention_heads": 2}, "n_head is 4 but num_attention_heads is 2"), ({"hidden_size": 32}, "n_embd is 64 but hidden_size is 32"),
    ({"n_inner": 128}, "shape [64, 256], expected [64, 128]"), ({"vocab_size": 500}, "shape [512, 64], expected [500, 64]"),
    ({"n_positions": 32}, "shape [64, 64], expected [32, 64]"), ({"n_embd": 32}, "expected [512, 32]"),
])
def test_heads_and_sizes_are_checked_against_the_tensors(tmp_path, changes, says):
    one_line(attn("model", "info", edit_config(copy_model(G, tmp_path / "m"), **changes)), 1, says)


def test_model_info_counts_exactly_the_tensors_of_the_file(tmp_path):
    info = json.loads(check(attn("model", "info", G, "--json")).text)
    stored = sum(int(np.prod(shape)) for dtype, shape, _ in read_tensors(G / checkpoint.WEIGHT_FILE).values())  # every tensor: GPT-2 has no pooler
    assert info["parameters"]["total"] == stored == 136_960
    assert info["layers"] == 2 and info["heads"] == 4


# --- tokenizers ---------------------------------------------------------------------------------------


def test_a_wordpiece_vocabulary_without_unk_refuses_the_line_naming_the_word_and_the_stream_goes_on(tmp_path):
    model = minilm_copy(tmp_path / "m")
    (model / "tokenizer.json").unlink()
    vocab = (model / "vocab.txt").read_text(encoding="utf-8").splitlines()
    (model / "vocab.txt").write_text("".join(("[unk-gone]" if w == "[UNK]" else w) + "\n" for w in vocab), encoding="utf-8")  # ids unchanged
    one_line(attn("inspect", "the \u2603", "--model", model), 2, "cannot encode '\u2603'", "[UNK]")
    assert check(attn("inspect", "the cat", "--model", model, "--json")).code == 0  # a line it can split is answered
    out = check(attn("inspect", "-", "--model", model, "--jsonl", stdin="the cat\nthe \u2603\nthe dog\n".encode()))
    lines = [json.loads(line) for line in out.text.splitlines()]
    assert [line["line"] for line in lines] == [1, 2, 3] and out.code == 2
    assert "error" not in lines[0] and "error" not in lines[2] and "\u2603" in lines[1]["error"]


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
    ("predict", "--temperature"): ["predict", "the cat", "--model", str(G)],
    ("generate", "--temperature"): ["generate", "the cat", "--model", str(G), "--steps", "1"],
    ("generate", "--top-p"): ["generate", "the cat", "--model", str(G), "--steps", "1", "-t", "1"],
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
    """A folder called "model": the name is the config's _name_or_path, which holds a lone surrogate."""
    return edit_config(copy_model(G, tmp_path / "model"), _name_or_path="\ud800x")


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


# --- weights that overflow float32 ----------------------------------------------------------------------


@pytest.mark.parametrize("tensor, value, says", [
    ("h.0.attn.c_attn.weight", 1e20, "in layer h.0 at the attention scores (h.0.attn.c_attn)"),
    ("h.1.mlp.c_fc.weight", 3e38, "in layer h.1 at the MLP's hidden layer (h.1.mlp.c_fc)"),
    ("h.0.mlp.c_proj.weight", 1e30, "in layer h.0 at the MLP output (h.0.mlp.c_proj)"),
    ("wpe.weight", 3e38, "at the embeddings (wte, wpe)"),
])
def test_weights_that_overflow_are_refused_naming_the_layer_and_tensor(tmp_path, tensor, value, says):
    shape = float32_of(G, tensor).shape
    model = change_tensors(copy_model(G, tmp_path / "m"), **{tensor.replace(".", "__"): np.full(shape, value, np.float32)})
    for options in (["--head", "1.0", "--json"], ["--head", "1.0"], ["--jsonl"], []):
        one_line(attn("inspect", "the cat", "--model", model, *options), 1, "model.safetensors", "overflows float32", says)
    assert check(attn("model", "info", model)).code == 0  # finite values: the file itself is sound


def test_a_bert_whose_weights_overflow_is_refused_naming_its_tensor(tmp_path):
    model = minilm_copy(tmp_path / "m")
    (model / checkpoint.WEIGHT_FILE).unlink()
    from safetensors.numpy import load_file, save_file

    weights = load_file(str(checkpoints.minilm_folder() / checkpoint.WEIGHT_FILE))
    weights["encoder.layer.2.attention.self.query.weight"] = np.full((384, 384), 1e20, np.float32)
    weights["encoder.layer.2.attention.self.key.weight"] = np.full((384, 384), 1e20, np.float32)
    save_file(weights, str(model / checkpoint.WEIGHT_FILE))
    one_line(attn("inspect", "the cat", "--model", model, "--json"), 1, "in layer encoder.layer.2 at the attention scores",
             "encoder.layer.2.attention.self.query/key")


def test_a_tensor_near_float32s_limit_is_read_without_a_warning(tmp_path):
    huge = np.full((64, 256), 3e38, np.float32)
    assert checkpoint.check_finite("t", huge) is huge  # its sum overflows; its values do not
    model = change_tensors(copy_model(G, tmp_path / "m"), h__0__mlp__c_fc__weight=huge)
    for fmt in ([], ["--json"]):
        assert check(attn("model", "info", model, *fmt)).code == 0  # check(): no RuntimeWarning
    with pytest.raises(DataError, match="NaN or infinite"):
        checkpoint.check_finite("t", np.r_[huge[0], np.float32(np.inf)])


# --- unreadable files ---------------------------------------------------------------------------------------


def as_another_user() -> tuple[list[str], dict]:
    """(command prefix, subprocess options) that run attn as a user who cannot read a mode-000 file: ourselves
    unless we are root, else `nobody`, through setpriv (which keeps the right to reach an interpreter kept in
    root's home until it is started) or a setuid before exec. Skips only when neither can start attn."""
    if os.geteuid() != 0:
        return [], {}
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("running as root, and there is no user nobody to run as")

    def drop():
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)

    setpriv = shutil.which("setpriv")
    ways = ([([setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"], {})] if setpriv else []) + [([], {"preexec_fn": drop})]
    for prefix, popen in ways:
        try:
            if subprocess.run([*prefix, ATTN, "--version"], capture_output=True, cwd="/", **popen).returncode == 0:
                return prefix, popen
        except OSError:
            continue
    pytest.skip("cannot start attn as another user here")


@pytest.fixture
def shared_folder():
    """A folder another user may enter (pytest's tmp_path is private to us)."""
    folder = Path(tempfile.mkdtemp(prefix="attn-perm-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@needs_script
@pytest.mark.parametrize("unreadable, command", [
    ("m/model.safetensors", ["model", "info", "m"]), ("m/model.safetensors", ["inspect", "the cat", "--model", "m"]),
    ("m/config.json", ["model", "info", "m"]), ("m/vocab.json", ["model", "info", "m"]),
    ("v.txt", ["similarity", "cat", "dog", "--vectors", "v.txt"]), ("links.tsv", ["heads", "find", "links.tsv", "--model", "m"]),
])
def test_an_unreadable_file_says_permission_denied_not_missing(shared_folder, unreadable, command):
    copy_model(G, shared_folder / "m")
    (shared_folder / "v.txt").write_text("2 3\ncat 1 2 3\ndog 3 2 1\n")
    (shared_folder / "links.tsv").write_text("the big dog\tdog\tbig\n")
    for path in shared_folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    (shared_folder / unreadable).chmod(0)
    prefix, popen = as_another_user()
    done = subprocess.run([*prefix, ATTN, *command], capture_output=True, cwd=shared_folder, timeout=60, **popen,
                          env={**os.environ, "HOME": str(shared_folder), "COLUMNS": "100"})
    out = one_line(Outcome(command, b"", done.returncode, done.stdout, done.stderr.decode("utf-8", "replace")), 1, unreadable, "ermission denied")
    assert "No such file" not in out.stderr


def test_a_folder_above_a_model_names_the_folder_that_has_one(run, tmp_path):
    model = tmp_path / "models" / "tiny"
    shutil.copytree(checkpoints.tiny_gpt2_folder(), model)
    result = run("inspect", "the cat", "--model", tmp_path)
    assert result.exit_code == 1 and result.stderr == f"attn: {tmp_path}: no config.json here, but a folder below has one: --model {model}\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("inspect", "the cat", "--model", empty)
    assert result.exit_code == 1 and "no config.json; a model folder holds config.json" in result.stderr and "--model" not in result.stderr
