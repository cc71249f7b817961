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
STRING, ARRAY, UINT32, BOOL = 8, 9, 4, 7  # GGUF value types


def write_gguf(path: Path, keys: dict | None = None, drop: tuple = (), tensors: dict | None = None, base: Path = BASE,
               without: tuple = ()) -> Path:
    """A copy of `base` through gguf-py's writer: `keys` sets or adds metadata (key -> (value, type) with type a GGUF
    value type, or (ARRAY, item type)), `drop` leaves keys out, `tensors` replaces tensors (name -> (ggml type, bytes)),
    `without` leaves tensors out."""
    import gguf as gguf_py

    src, keys, tensors = gguf_file.read_file(base), dict(keys or {}), tensors or {}
    writer = gguf_py.GGUFWriter(path, src.metadata["general.architecture"])
    entries = {k: (v, src.value_types[k]) for k, v in src.metadata.items() if k != "general.architecture" and k not in drop}
    for key, (value, kind) in (entries | keys).items():
        item = gguf_py.GGUFValueType(kind[1]) if isinstance(kind, tuple) else None
        value = list(value) if isinstance(value, np.ndarray) else value
        writer.add_key_value(key, value, gguf_py.GGUFValueType(kind[0] if item else kind), sub_type=item)
    for name, info in ((n, i) for n, i in src.tensors.items() if n not in without):
        type_id, raw = tensors.get(name, (info.type_id, np.array(src.raw(info))))
        raw = np.frombuffer(bytes(raw), np.uint8).reshape(*reversed(info.dims[1:]), -1)  # bytes in the tensor's shape, rows last
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
                          text=True, timeout=60, env={**os.environ, "RUST_BACKTRACE": "1", "COLUMNS": "100"})
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("attn: "), done.stderr  # no Rust report, no backtrace
    assert "tokenizer failed inside the tokenizers library (index out of bounds" in done.stderr, done.stderr


# --- chat templates: a budget of time, output and memory that holds while they render -----------------------------


def with_template(path: Path, template: str) -> Path:
    return write_gguf(path, {"tokenizer.chat_template": (template, STRING)})


BOMBS = {  # template -> what the one line says (or one of what it may say)
    "{% for i in range(10**12) %}x{% endfor %}": "a range of more than 100,000 items",
    "{{ 'x' * 3000000000 }}": "a repetition of 3,000,000,000 characters",
    "{{ 3000000000 * 'x' }}": "a repetition of 3,000,000,000 characters",
    "{{ (range(100000)|list) * 100000 }}": "a repetition of 10,000,000,000 characters",
    "{{ 10 ** (10 ** 10) }}": "a power 10 ** 10000000000",
    "{{ 'x'|center(3000000000) }}": "a width of 3,000,000,000",
    "{{ 'x'.rjust(3000000000) }}": "a width of 3,000,000,000",
    "{{ '{:>3000000000}'.format('x') }}": "a format with a width of a million or more",
    "{{ '%*s'|format(3000000000, 'x') }}": "a width of 3,000,000,000",
    "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}": "a prompt of more than 1,048,576 characters",
    "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}": "a concatenation of 2,097,152",
    "{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = ns.s.replace('x', 'xx') %}{% endfor %}": "a replacement of",
    "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}": "a concatenation of 2,097,152",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}": "takes more than 0.3 s",
    "{% set s = 'x' * 100000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}": "takes more than 0.3 s",
}


@pytest.fixture(scope="module")
def bomb_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bombs")
    return {template: with_template(folder / f"bomb{i}.gguf", template) for i, template in enumerate(BOMBS)}


@pytest.mark.parametrize("template", list(BOMBS))
def test_a_chat_template_bomb_stops_while_it_renders_with_one_line(bomb_models, monkeypatch, template):
    import resource
    import time

    from attn_cli.models import chat

    monkeypatch.setattr(chat, "RENDER_SECONDS", 0.3)  # the real budget is 2 s
    start, peak, limit = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrlimit(resource.RLIMIT_AS)
    out = one_line(attn("predict", "hello", "--model", bomb_models[template], "--chat"), 1, "chat template", "refused")
    says = BOMBS[template] if isinstance(BOMBS[template], tuple) else (BOMBS[template],)
    assert any(part in out.stderr for part in says), out
    assert time.monotonic() - start < 3, out
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) << 10
    assert grown < chat.RENDER_MEMORY + (64 << 20), f"the peak grew by {grown:,} bytes"
    assert resource.getrlimit(resource.RLIMIT_AS) == limit, "the address-space limit is put back"


def test_the_size_checks_hold_while_another_thread_runs():
    """With a second thread alive the address-space limit is not set (it is the whole process's): a string
    that doubles each turn, by `+`, `~`, a join or a format, is still refused by its size before it is made."""
    import threading

    from attn_cli.errors import DataError
    from attn_cli.models import chat

    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        for joined in ("ns.s + ns.s", "ns.s ~ ns.s", "[ns.s, ns.s]|join", "ns.s.join(['', ns.s, ''])", "'%s%s' % (ns.s, ns.s)",
                       "'{}{}'.format(ns.s, ns.s)", "'%s%s'|format(ns.s, ns.s)"):
            template = f"{{% set ns = namespace(s='x') %}}{{% for i in range(40) %}}{{% set ns.s = {joined} %}}{{% endfor %}}{{{{ ns.s }}}}"
            with pytest.raises(DataError) as refused:
                chat.render(template, [{"role": "user", "content": "hi"}])
            assert "characters (at most 1,048,576); refused" in str(refused.value), (joined, refused.value)
    finally:
        stop.set()
        other.join()


def test_a_sound_chat_template_renders_as_before(tmp_path):
    from attn_cli.models import chat

    model = with_template(tmp_path / "ok.gguf", "{{ bos_token }}{% for m in messages %}{{ m['role'] ~ ': ' ~ m['content'] * 2 }}{% endfor %}"
                                                "{{ '%5s|%-3s|'|format('a', 'b') }}{{ 'ab'|center(6) }}{{ 'x'.zfill(3) }}{{ 2 ** 10 }}")
    assert chat.render(gguf.load(model).chat_template, [{"role": "user", "content": "hi"}], bos_token="<s>") == "<s>user: hihi    a|b  |  ab  00x1024"
    assert check(attn("predict", "hello", "--model", model, "--chat", "--json")).code == 0


@needs_script
def test_a_repetition_bomb_stops_early_in_a_real_process_under_a_memory_limit(tmp_path):
    """{{ 'x' * 3000000000 }} took 2.9 GB before "not enough memory": under a 1.5 GB address space it is refused at once."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        pytest.skip("no prlimit")
    model = with_template(tmp_path / "bomb.gguf", "{{ 'x' * 3000000000 }}")
    done = subprocess.run([prlimit, f"--as={3 << 29}", ATTN, "predict", "hello", "--model", str(model), "--chat"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and "a repetition of 3,000,000,000 characters" in done.stderr, done.stderr


@pytest.mark.slow
@needs_script
def test_a_loop_bomb_stops_at_the_real_budget_in_a_real_process(tmp_path):
    import time

    model = with_template(tmp_path / "loop.gguf", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
    start = time.monotonic()
    out = one_line(attn_process("predict", "hello", "--model", str(model), "--chat"), 1, "takes more than 2 s to render; refused")
    assert time.monotonic() - start < 10, out


# --- names, paths and stores -----------------------------------------------------------------------------------------


def test_a_store_under_the_home_of_a_user_that_does_not_exist_is_one_line(tmp_path):
    from tests.test_hostile_models import no_such_user

    user = no_such_user()
    one_line(attn("model", "info", "ollama:smollm2", env={"OLLAMA_MODELS": f"~{user}/models"}), 2, "OLLAMA_MODELS", f"no user named {user}")


@pytest.mark.parametrize("forged", ["x\nFAKE: 999 layers", "x\rFAKE", "x\x1b[2J\x1b[31mFAKE", "x\u2028FAKE", "x\x85FAKE"])
def test_a_name_from_the_file_is_one_line_wherever_it_is_shown(tmp_path, forged):
    """A blob is named by its digest, so general.name names the model: a newline in it forged lines of `model info`."""
    model = write_gguf(tmp_path / ("sha256-" + "1" * 64 + ".gguf"), {"general.name": (forged, STRING)})
    for command in (["model", "info", model], ["inspect", "hello world", "--model", model], ["predict", "hello world", "--model", model]):
        out = check(attn(*command))
        assert out.code == 0 and "FAKE" in out.text, out
        lines = [line for line in out.text.splitlines() if "FAKE" in line]
        assert len(lines) == 1 and lines[0].lstrip().startswith("x"), out  # FAKE never begins a line of its own
        assert not set(out.text) & ({"\r", "\x1b", "\u2028", "\x85"}), out
    assert json.loads(check(attn("model", "info", model, "--json")).text)["name"].startswith("x\\")


@needs_script
def test_a_blob_linked_to_a_file_that_is_not_gguf_says_so_without_its_content(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    root = tmp_path / "store"
    spec = as_ollama_store(root, BASE, size=secret.stat().st_size)  # the size agrees: the content is what is wrong
    blob = next((root / "blobs").iterdir())
    blob.unlink()
    blob.symlink_to(secret)
    for out in (attn("model", "info", spec, env={"OLLAMA_MODELS": str(root)}), attn_process("model", "info", spec, env={"OLLAMA_MODELS": str(root)})):
        one_line(out, 1, "not a GGUF file")
        assert "root" not in out.stderr.replace(str(root), "") and "b'" not in out.stderr, out


# --- text bounded by bytes, whatever positions the file claims ------------------------------------------------------


@pytest.fixture(scope="module")
def endless_context(tmp_path_factory):
    """llama.context_length = 2^31 - 1: the guard of 32 characters a position allowed a 30 MB line into the Rust tokenizer."""
    return write_gguf(tmp_path_factory.mktemp("ctx") / "ctx.gguf", {"llama.context_length": (2**31 - 1, UINT32)})


@pytest.mark.parametrize("text", ["hello world " * 2_500_000, "a" * 30_000_000, "\u00e9" * 200_000], ids=["30 MB line", "30 MB word", "400 KB of é"])
@pytest.mark.parametrize("command", ["inspect", "predict"])
def test_a_huge_line_is_refused_by_its_bytes_before_the_tokenizer(endless_context, command, text):
    import time

    start = time.monotonic()
    size = len(text.encode())
    one_line(attn(command, text, "--model", endless_context), 2, f"a line of {size:,} bytes, more than the 262,144")
    assert time.monotonic() - start < 5  # the tokenizer took minutes or aborted; reading the line is what is left


@needs_script
def test_a_huge_line_on_stdin_is_refused_quickly_in_a_real_process(endless_context):
    import time

    start = time.monotonic()
    out = check(attn_process("predict", "-", "--model", str(endless_context), stdin=b"a" * 30_000_000 + b"\nhello world\n"))
    assert time.monotonic() - start < 10 and out.code == 2, out
    assert "line 1: a line of 30,000,000 bytes" in out.stderr and "Traceback" not in out.stderr, out
    assert out.stdout.count(b"\n") > 1  # the next line is answered


def test_a_line_within_the_bytes_is_read_whatever_the_file_claims(endless_context):
    assert check(attn("predict", "hello world " * 100, "--model", endless_context, "--json")).code == 0


# --- the header: arrays attn does not use are walked past, and what it keeps is bounded ------------------------------


def with_unused_strings(path: Path, n: int, base: Path = BASE) -> Path:
    """`base` with an extra key general.tags holding n two-byte strings, spliced in after the preamble (built with NumPy:
    gguf-py's writer takes seconds a million strings). The insert is padded to the alignment, so the tensors' offsets,
    relative to the end of the header, still hold."""
    import struct

    data = base.read_bytes()
    def kv(key: bytes, body: bytes, kind: int) -> bytes:
        return struct.pack("<Q", len(key)) + key + struct.pack("<I", kind) + body
    items = np.zeros(n, dtype=[("length", "<u8"), ("text", "S2")])
    items["length"], items["text"] = 2, b"ab"
    tags = kv(b"general.tags", struct.pack("<IQ", STRING, n) + items.tobytes(), ARRAY)
    pad = kv(b"general.padding", struct.pack("<Q", 0), STRING)
    pad = kv(b"general.padding", struct.pack("<Q", -(len(tags) + len(pad)) % 32) + b"p" * (-(len(tags) + len(pad)) % 32), STRING)
    n_tensors, n_keys = struct.unpack_from("<QQ", data, 8)
    path.write_bytes(data[:8] + struct.pack("<QQ", n_tensors, n_keys + 2) + tags + pad + data[24:])
    return path


def peak_mb(*args: str) -> tuple[int, float]:
    """(exit code, peak resident MB) of `attn args` in a process of its own."""
    probe = ("import resource, subprocess, sys\n"
             f"done = subprocess.run({[ATTN, *args]!r}, capture_output=True)\n"
             "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    code, kilobytes = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120).stdout.split()
    return int(code), int(kilobytes) / 1024


def test_an_unused_array_is_walked_past_and_kept_as_its_length(tmp_path):
    model = with_unused_strings(tmp_path / "tags.gguf", 1000)
    file = gguf_file.read_file(model)
    unread = file.metadata["general.tags"]
    assert isinstance(unread, gguf_file.UnreadArray) and (unread.item_type, unread.count) == (STRING, 1000)
    assert file.value_types["general.tags"] == (ARRAY, STRING)
    base = gguf_file.read_file(BASE)
    assert file.metadata["tokenizer.ggml.tokens"] == base.metadata["tokenizer.ggml.tokens"]  # what attn reads, as before
    assert [(t.name, t.offset - file.data_start) for t in file.tensors.values()] == [(t.name, t.offset - base.data_start) for t in base.tensors.values()]
    predicted = [json.loads(check(attn("predict", "hello world", "--model", m, "--json")).text) for m in (model, BASE)]
    assert [{k: v for k, v in p.items() if k != "model"} for p in predicted] == [{k: v for k, v in predicted[1].items() if k != "model"}] * 2
    damaged = tmp_path / "damaged.gguf"
    data = model.read_bytes()
    at = data.index(b"general.tags") + len(b"general.tags") + 4 + 4 + 8 + 500 * 10  # item 500's length
    damaged.write_bytes(data[:at] + (1 << 40).to_bytes(8, "little") + data[at + 8:])
    one_line(attn("model", "info", damaged), 1, "item 500 of metadata 'general.tags' is 1,099,511,627,776 bytes long")


def test_a_kept_array_of_more_strings_than_any_vocabulary_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(gguf_file, "MAX_KEPT_STRINGS", 100)
    one_line(attn("model", "info", BASE), 1, "tokenizer.ggml.tokens' holds 512 strings; attn reads at most 100")


@needs_script
@pytest.mark.parametrize("n", [1 << 20, pytest.param(1 << 24, marks=pytest.mark.slow)], ids=["2^20 strings, 11 MB", "2^24 strings, 168 MB"])
def test_reading_a_header_with_a_huge_unused_array_costs_about_its_size(tmp_path, n):
    """2^24 two-byte strings in an unused key made `model info` peak at 2.3 GB on a 167 MB file: each string was made an object."""
    model = with_unused_strings(tmp_path / "tags.gguf", n)
    size = model.stat().st_size / (1 << 20)
    (code, base), (hostile_code, peak) = peak_mb("model", "info", str(BASE)), peak_mb("model", "info", str(model))
    assert code == hostile_code == 0
    assert peak - base < 1.2 * size + 16, f"{size:.0f} MB file: {base:.0f} MB for the tiny model alone, {peak:.0f} MB with the array"


# --- no NumPy warning, whatever the weights hold ---------------------------------------------------------------------


def norm_as(path: Path, type_id: int, raw: bytes, name: str = "blk.0.attn_norm.weight") -> Path:
    return write_gguf(path, tensors={name: (type_id, raw)})


def hostile_weights(folder: Path) -> dict:
    """Norm weights that overflow a sum, F16 NaNs and infinities, F64 beyond float32, and every 32-value block type filled
    with random bytes (damaged scales): name -> file."""
    rng = np.random.default_rng(7)
    files = {
        "huge attn_norm": norm_as(folder / "huge.gguf", 0, np.full(64, 3e38, np.float32).tobytes()),
        "huge output_norm": norm_as(folder / "huge_out.gguf", 0, np.full(64, 3e38, np.float32).tobytes(), "output_norm.weight"),
        "F64 beyond float32": norm_as(folder / "f64.gguf", 28, np.full(64, 1e300).tobytes()),
        "F16 random": norm_as(folder / "f16.gguf", 1, rng.integers(0, 256, 128, dtype=np.uint8).tobytes()),
    }
    for type_id, (name, block, block_bytes) in gguf_file.GGML_TYPES.items():
        if block == 32:
            files[f"{name} random"] = norm_as(folder / f"{name}.gguf", type_id, rng.integers(0, 256, 2 * block_bytes, dtype=np.uint8).tobytes())
    return files


@pytest.fixture(scope="module")
def weight_files(tmp_path_factory):
    return hostile_weights(tmp_path_factory.mktemp("weights"))


def test_hostile_weights_are_read_without_a_numpy_warning(weight_files):
    """At the source, not only at the CLI: each tensor is read with every warning an error."""
    import warnings

    from attn_cli.errors import DataError

    for name, path in weight_files.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                for tensor in gguf.load(path).tensors.values():
                    tensor.array()
            except DataError as e:
                assert "NaN or infinite" in str(e) or "not supported" in str(e), (name, e)


@pytest.mark.parametrize("command", [["model", "info", "{m}"], ["predict", "hello world", "--model", "{m}"]])
def test_hostile_weights_give_an_answer_or_one_line_and_no_warning(weight_files, command):
    for name, path in weight_files.items():
        out = check(attn(*[a.replace("{m}", str(path)) for a in command]))
        assert out.code == 0 or out.stderr.count("\n") == 1, (name, out)


@needs_script
def test_no_numpy_warning_reaches_stderr_in_a_real_process(weight_files):
    for name, command in (("huge attn_norm", "info"), ("huge attn_norm", "predict"), ("F64 beyond float32", "predict")):
        path = str(weight_files[name])
        out = check(attn_process(*(["model", "info", path] if command == "info" else ["predict", "hello world", "--model", path])))
        assert "RuntimeWarning" not in out.stderr and out.stderr.count("\n") <= 1, (name, out)


# --- memory running out while computing -------------------------------------------------------------------------------


REFUSED_MAPPING = """
import errno, os, sys
from attn_cli.cli import main
from attn_cli.models import transformer

def refuse(*args, **kwargs):  # memory running out as an address-space limit makes it: an anonymous mapping refused (mmap.mmap(-1, n))
    raise OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))
transformer.Transformer.forward = refuse
sys.argv = ["attn", *sys.argv[1:]]
main()
"""


def test_memory_running_out_during_the_forward_pass_says_so_in_a_real_process():
    """Under `prlimit --as` a long text's [H, n, n] matrices were refused as an OSError (ENOMEM), which attn reported as
    "cannot write to standard output". The limit itself is not used here: where the estimate, BLAS and the pass run
    out first moves with every change of the pass; the refused mapping is made to happen where the pass runs."""
    text = "hello world"
    done = subprocess.run([sys.executable, "-c", REFUSED_MAPPING, "inspect", text, "--model", str(BASE)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "100"})
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr == "attn: not enough memory for this input; give it less (fewer tokens, a smaller --limit)\n", done.stderr


def test_an_out_of_memory_oserror_is_told_from_a_failed_write(monkeypatch):
    import errno

    from attn_cli.models import transformer

    def refuse(*args, **kwargs):
        raise OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))  # as mmap.mmap(-1, ...) raises it

    monkeypatch.setattr(transformer.Transformer, "forward", refuse)
    for command in ("inspect", "predict"):
        one_line(attn(command, "hello world", "--model", BASE), 1, "not enough memory")


# --- Ollama blobs: the size always, the sha256 with --verify, and which was done ---------------------------------------


def test_a_blob_of_another_size_than_its_manifest_says_is_refused(tmp_path):
    root = tmp_path / "store"
    spec = as_ollama_store(root, BASE, size=BASE.stat().st_size + 1)
    for command in (["model", "info", spec], ["inspect", "hello", "--model", spec], ["predict", "hello", "--model", spec]):
        one_line(attn(*command, env={"OLLAMA_MODELS": str(root)}), 1, f"{BASE.stat().st_size:,} bytes, but the manifest", "says")
    spec = as_ollama_store(tmp_path / "odd", BASE, size="12")  # type: ignore[arg-type]
    one_line(attn("model", "info", spec, env={"OLLAMA_MODELS": str(tmp_path / "odd")}), 1, "size '12' is not a number of bytes")


def test_a_blob_whose_bytes_do_not_match_its_digest_is_refused_with_verify(tmp_path):
    """Same size, one byte changed in a tensor: only the digest tells, and only --verify reads the whole blob to compute it."""
    data = bytearray(BASE.read_bytes())
    data[-1] ^= 0x01
    changed = tmp_path / "changed.gguf"
    changed.write_bytes(bytes(data))
    root = tmp_path / "store"
    spec = as_ollama_store(root, changed, digest=hashlib.sha256(BASE.read_bytes()).hexdigest())  # the digest of the original
    env = {"OLLAMA_MODELS": str(root)}
    plain = json.loads(check(attn("model", "info", spec, "--json", env=env)).text)
    assert plain["checked"] == ["size"]
    assert "its size matches the manifest; --verify also checks its sha256" in check(attn("model", "info", spec, env=env)).text
    one_line(attn("model", "info", spec, "--verify", env=env), 1, "its sha256 is " + hashlib.sha256(bytes(data)).hexdigest(), "not the sha256:")


def test_verify_says_what_was_checked(tmp_path):
    root = tmp_path / "store"
    spec = as_ollama_store(root, BASE)
    env = {"OLLAMA_MODELS": str(root)}
    assert json.loads(check(attn("model", "info", spec, "--verify", "--json", env=env)).text)["checked"] == ["size", "sha256"]
    assert "size and sha256 match the manifest" in check(attn("model", "info", spec, "--verify", env=env)).text
    assert json.loads(check(attn("model", "info", BASE, "--json")).text)["checked"] is None  # a file has no manifest
    one_line(attn("model", "info", BASE, "--verify"), 2, "--verify checks an Ollama blob")


# --- SVG exports are well-formed XML, whatever the text and the file hold --------------------------------------------

HOSTILE_TEXT = "the \x1bcat\x07 sat\x08 down"
SVG_EXPORTS = {  # what each export is made from: (options with {m} for the model), the views of both kinds of model
    "model view": ["--model", "{m}", "--head", "0.0"],
    "model heatmap": ["--model", "{m}", "--head", "0.0", "--export-view", "heatmap"],
    "model overview": ["--model", "{m}", "--export-view", "overview"],
    "model layers": ["--model", "{m}", "--export-view", "layers"],
    "model residual": ["--model", "{m}", "--focus", "sat", "--export-view", "residual"],
    "model picture": ["--model", "{m}", "--focus", "sat", "--export-view", "picture"],
    "lesson view": ["--oov", "zero", "--head", "adjective"],
    "lesson heatmap": ["--oov", "zero", "--head", "adjective", "--export-view", "heatmap"],
    "lesson shift": ["--oov", "zero", "--export-view", "shift"],
    "lesson picture": ["--oov", "zero", "--export-view", "picture"],
    "lesson senses": ["--oov", "zero", "--sense", "animal=mammal,burrow", "--sense", "sit=chair,seat", "--export-view", "senses"],
}


@pytest.fixture(scope="module")
def named_by_digest(tmp_path_factory):
    """A blob-like file, so general.name (with ESC and BEL in it) names the model in every picture."""
    return write_gguf(tmp_path_factory.mktemp("named") / ("sha256-" + "2" * 64 + ".gguf"), {"general.name": ("evil\x1b[2J\x07name", STRING)})


def well_formed_svg(path: Path) -> str:
    import xml.etree.ElementTree as ET

    text = path.read_text(encoding="utf-8")
    root = ET.fromstring(text)  # raises on a character XML cannot hold
    assert root.tag.endswith("svg")
    assert not set(text) & {chr(c) for c in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0))}
    return text


@pytest.mark.parametrize("export", list(SVG_EXPORTS))
def test_every_svg_export_is_well_formed_xml_with_control_characters_escaped(tmp_path, named_by_digest, export):
    svg = tmp_path / "out.svg"
    options = [a.replace("{m}", str(named_by_digest)) for a in SVG_EXPORTS[export]]
    out = check(attn("inspect", HOSTILE_TEXT, *options, "--svg", svg))
    assert out.code == 0, out
    text = well_formed_svg(svg)
    assert "\\x1b" in text  # shown as the terminal shows it
    if "model" in export:
        assert "evil\\x1b[2J\\x07name" in text


def test_an_svg_of_several_lines_and_an_html_picture_hold_no_control_character(tmp_path, named_by_digest):
    svg, page = tmp_path / "lines.svg", tmp_path / "lines.html"
    out = check(attn("inspect", "-", "--model", named_by_digest, "--head", "0.0", "--svg", svg, stdin=f"{HOSTILE_TEXT}\nthe \x1b[1mdog\n".encode()))
    assert out.code == 0, out
    well_formed_svg(svg)
    check(attn("inspect", HOSTILE_TEXT, "--model", named_by_digest, "--html", page))
    assert not set(page.read_text(encoding="utf-8")) & {"\x1b", "\x07", "\x08"}
