"""GGUF files, Ollama stores and chat templates made to hurt: each is generated here (gguf-py's GGUFWriter over the
tiny Llama's tensors, with one key, token or tensor changed) and must give its answer exactly, or one `attn: ...`
line, within a bounded time and memory; never a panic, a traceback, a warning or a forged line.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attn_cli.models.sources import gguf, gguf_file
from tests import checkpoints
from tests.oracle import ATTN, attn, attn_process, check, one_line

BASE = checkpoints.gguf_fixture("tiny-llama", "F32")
needs_script = pytest.mark.skipif(ATTN is None, reason="the attn console script is not installed")
STRING, ARRAY, UINT32, FLOAT32, BOOL = 8, 9, 4, 6, 7  # GGUF value types


def write_gguf(path: Path, keys: dict | None = None, drop: tuple = (), tensors: dict | None = None, base: Path = BASE) -> Path:
    """A copy of `base` through gguf-py's writer: `keys` sets or adds metadata (key -> (value, type) with type a GGUF
    value type, or (ARRAY, item type)), `drop` leaves keys out, `tensors` replaces tensors (name -> (ggml type, bytes))."""
    import gguf as gguf_py

    src, keys, tensors = gguf_file.read_file(base), dict(keys or {}), tensors or {}
    writer = gguf_py.GGUFWriter(path, src.metadata["general.architecture"])
    entries = {k: (v, src.value_types[k]) for k, v in src.metadata.items() if k != "general.architecture" and k not in drop}
    for key, (value, kind) in (entries | keys).items():
        item = gguf_py.GGUFValueType(kind[1]) if isinstance(kind, tuple) else None
        value = list(value) if isinstance(value, np.ndarray) else value
        writer.add_key_value(key, value, gguf_py.GGUFValueType(kind[0] if item else kind), sub_type=item)
    for name, info in src.tensors.items():
        type_id, raw = tensors.get(name, (info.type_id, np.array(src.raw(info))))
        rows = int(np.prod(info.dims[1:]))
        raw = np.frombuffer(bytes(raw), np.uint8).reshape(*reversed(info.dims[1:]), -1) if rows else raw
        writer.add_tensor(name, raw, raw_dtype=gguf_py.GGMLQuantizationType(type_id))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def base_tokens() -> list[str]:
    return list(gguf_file.read_file(BASE).metadata["tokenizer.ggml.tokens"])


def with_token(path: Path, token_id: int, text: str, **keys) -> Path:
    tokens = base_tokens()
    tokens[token_id] = text
    return write_gguf(path, {"tokenizer.ggml.tokens": (tokens, (ARRAY, STRING)), **keys})


def as_ollama_store(root: Path, blob: Path, size: int | None = None, digest: str | None = None) -> str:
    """An Ollama store at `root` holding `blob` as model hurt:x; `size`, `digest`: what the manifest claims instead."""
    data = blob.read_bytes()
    digest = digest or hashlib.sha256(data).hexdigest()
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    target = root / "blobs" / f"sha256-{digest}"
    if not target.exists():
        shutil.copyfile(blob, target)
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / "hurt" / "x"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": len(data) if size is None else size}
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": [layer]}))
    return "ollama:hurt:x"


# --- the tokenizer: file text is never template syntax, and a Rust panic is one line ------------------------------


@pytest.mark.parametrize("text", ["$B", "$A:1", "$A", "$B:0 $A", "[bos]"])
def test_a_bos_token_that_reads_as_template_syntax_is_only_a_token(tmp_path, text):
    """BOS's text was put into TemplateProcessing's template: "$B" panicked in Rust, "$A" repeated the sentence."""
    bos = gguf_file.read_file(BASE).metadata["tokenizer.ggml.bos_token_id"]
    hostile = with_token(tmp_path / "bos.gguf", bos, text)
    reference = gguf.load(BASE).tokenizer().encode("hello world")
    got = gguf.load(hostile).tokenizer().encode("hello world")
    assert got.ids == reference.ids and got.ids[0] == bos and got.ids.count(bos) == 1
    assert got.tokens == [text, *reference.tokens[1:]]
    out = check(attn("inspect", "hello world", "--model", hostile, "--json"))
    assert out.code == 0 and json.loads(out.text)["tokens"][1:] == json.loads(check(attn("inspect", "hello world", "--model", BASE, "--json")).text)["tokens"][1:]
    assert check(attn("predict", "hello world", "--model", hostile, "--json")).code == 0


def test_an_eos_token_that_reads_as_template_syntax_is_only_a_token(tmp_path):
    eos = gguf_file.read_file(BASE).metadata["tokenizer.ggml.eos_token_id"]
    hostile = with_token(tmp_path / "eos.gguf", eos, "$A", **{"tokenizer.ggml.add_eos_token": (True, BOOL)})
    got = gguf.load(hostile).tokenizer().encode("hello world")
    assert got.ids[-1] == eos and got.ids.count(eos) == 1 and got.tokens[-1] == "$A"
    assert got.ids[:-1] == gguf.load(BASE).tokenizer().encode("hello world").ids
    pair = gguf.load(hostile).tokenizer().encode("hello", "world")
    tok = gguf.load(hostile).tokenizer()
    assert pair.ids == tok.encode("hello").ids + tok.encode("world").ids and pair.tokens.count("$A") == 2


PANICKING = """
import sys
from tokenizers import processors
from attn_cli.models.sources import gguf
from attn_cli.cli import main

made = gguf.build_tokenizer
def build(file, add_bos, add_eos):  # the template that made tokenizers panic: "$B" as a special token's name
    tok = made(file, add_bos, add_eos)
    tok.post_processor = processors.TemplateProcessing(single="$B $A", pair="$B $A $B $B", special_tokens=[("$B", 0)])
    return tok
gguf.build_tokenizer = build
sys.argv = ["attn", *sys.argv[1:]]
main()
"""


def test_a_panic_in_the_tokenizer_is_one_line_in_a_real_process():
    """pyo3's PanicException derives from BaseException: `except Exception` let it through as a traceback."""
    done = subprocess.run([sys.executable, "-c", PANICKING, "inspect", "hello world", "--model", str(BASE)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "RUST_BACKTRACE": "0", "COLUMNS": "100"})
    assert done.returncode == 1 and done.stdout == "", done
    assert "Traceback" not in done.stderr and "PanicException" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("attn: ") and "tokenizer failed inside the tokenizers library" in last, done.stderr
