"""The GGUF reader: tensors equal the safetensors originals (dequantized by a per-block loop written here
from the formats' definitions), metadata equals config.json, the tokenizer gives transformers' ids, the
header parser agrees with gguf.GGUFReader, and damaged files give one-line DataErrors."""

import json
import math
import struct
from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from safetensors.numpy import load_file

from attn_cli.errors import DataError
from attn_cli.models.sources import gguf
from tests import checkpoints
from tests.exact import assert_copied

NAMES = ("tiny-llama", "tiny-qwen2")
QUANTIZED = ("Q8_0", "Q4_0", "Q4_1")


@cache
def source(name: str, kind: str):
    return gguf.load(checkpoints.gguf_fixture(name, kind))


@cache
def originals(name: str) -> dict:
    return load_file(checkpoints.FIXTURES / name / "model.safetensors")


@cache
def folder_config(name: str) -> dict:
    return json.loads((checkpoints.FIXTURES / name / "config.json").read_text())


def oracle(name: str):
    return np.load(checkpoints.FIXTURES / f"oracle-{name}.npz", allow_pickle=False)


@cache
def smollm2():
    return gguf.load(checkpoints.smollm2_gguf())


# --- tensors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_f32_tensors_equal_the_safetensors_originals_exactly(name):
    src, hf = source(name, "F32"), originals(name)
    assert sorted(src.tensors) == sorted(hf)  # the tied Llama has no lm_head in either
    for key, weight in hf.items():
        tensor = src.tensors[key]
        assert tensor.name == key and tensor.shape == weight.shape and tensor.dtype == "F32"
        got = tensor.array()
        assert got.dtype == np.float32, key
        assert_copied(got, weight)


@pytest.mark.parametrize("name", NAMES)
def test_f16_tensors_are_the_originals_rounded_to_float16(name):
    src, hf = source(name, "F16"), originals(name)
    for key, weight in hf.items():
        expected = weight if weight.ndim == 1 else weight.astype(np.float16).astype(np.float32)  # 1-D stays F32
        assert src.tensors[key].dtype == ("F32" if weight.ndim == 1 else "F16")
        assert_copied(src.tensors[key].array(), expected)  # float16 rounding is a cast, the same on every machine


def dequantize_by_loop(raw: bytes, kind: str, n_values: int) -> np.ndarray:
    """ggml's block formats, one block at a time (ggml-common.h): 32 values a block.
    Q8_0: f16 d, 32 x int8 q; x = d q.  Q4_0: f16 d, 16 bytes; value j is the low nibble of byte j,
    value j + 16 its high nibble; x = d (q - 8).  Q4_1: f16 d, f16 m, 16 bytes as Q4_0; x = d q + m."""
    size = {"Q8_0": 34, "Q4_0": 18, "Q4_1": 20}[kind]
    out = []
    for start in range(0, len(raw), size):
        block = raw[start:start + size]
        d = float(np.frombuffer(block[:2], "<f2")[0])
        if kind == "Q8_0":
            out += [d * q for q in struct.unpack("<32b", block[2:])]
            continue
        m = float(np.frombuffer(block[2:4], "<f2")[0]) if kind == "Q4_1" else 0.0
        nibbles = block[4:] if kind == "Q4_1" else block[2:]
        low, high = [b & 0x0F for b in nibbles], [b >> 4 for b in nibbles]
        offset = 0 if kind == "Q4_1" else 8
        out += [d * (q - offset) + m for q in low + high]
    assert len(out) == n_values
    return np.array(out, dtype=np.float32)


def undo_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """transformers' GGUF loader's reverse of convert_hf_to_gguf.py's permute (modeling_gguf_pytorch_utils)."""
    dim = w.shape[0] // n_head // 2
    return w.reshape(n_head, dim, 2, *w.shape[1:]).swapaxes(2, 1).reshape(w.shape)


@pytest.mark.parametrize("kind", QUANTIZED)
@pytest.mark.parametrize("name", NAMES)
def test_quantized_tensors_match_a_per_block_loop(name, kind):
    src, hf, config = source(name, kind), originals(name), folder_config(name)
    file = gguf.read_file(checkpoints.gguf_fixture(name, kind))
    for key, weight in hf.items():
        tensor = src.tensors[key]
        got = tensor.array()
        if weight.ndim == 1:
            assert tensor.dtype == "F32", key
            assert_copied(got, weight)
            continue
        assert tensor.dtype == kind
        expected = dequantize_by_loop(bytes(file.raw(file.tensors[tensor.gguf_name])), kind, weight.size).reshape(weight.shape)
        if name == "tiny-llama" and key.endswith(("q_proj.weight", "k_proj.weight")):
            heads = config["num_attention_heads"] if ".q_proj." in key else config["num_key_value_heads"]
            expected = undo_permute(expected, heads)
        assert np.array_equal(got, expected), key
        # and the rows line up with the original weights: each block within its quantization step
        step = {"Q8_0": 1 / 127, "Q4_0": 1 / 7, "Q4_1": 1 / 15}[kind]
        blocks = np.abs(weight).reshape(-1, 32).max(-1, keepdims=True)
        assert (np.abs(got - weight).reshape(-1, 32) <= blocks * step * 1.01 + 1e-6).all(), key


@pytest.mark.parametrize("kind", checkpoints.GGUF_TYPES)
@pytest.mark.parametrize("name", NAMES)
def test_rows_equal_the_rows_of_the_whole_array(name, kind):
    rng = np.random.default_rng(0)
    for key, tensor in source(name, kind).tensors.items():
        if len(tensor.shape) != 2:
            continue
        ids = rng.integers(0, tensor.shape[0], size=7)
        assert_copied(tensor.rows(ids), tensor.array()[ids])
        assert tensor.rows([]).shape == (0, tensor.shape[1])
    with pytest.raises(IndexError):
        source(name, kind).tensors["model.embed_tokens.weight"].rows([512])


def test_the_permutation_is_undone_by_a_row_gather():
    order = gguf.unpermute_order(12, 2)  # 2 heads of 6 rows: pairs (0, 3), (1, 4), (2, 5) in the file
    file_rows = np.arange(12)[:, None] * np.ones((1, 3))
    assert order.tolist() == [0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11]
    assert_copied(file_rows[order], undo_permute(file_rows, 2))  # rows moved, not computed


def test_tensor_names_are_gguf_py_names():
    import gguf as gguf_py

    for arch, hf in ((gguf_py.MODEL_ARCH.LLAMA, originals("tiny-llama")), (gguf_py.MODEL_ARCH.QWEN2, originals("tiny-qwen2"))):
        names = gguf_py.get_tensor_name_map(arch, 2)
        for key in hf:
            assert gguf.hf_name(names.get_name(key, try_suffixes=(".weight", ".bias"))) == key
    assert gguf.hf_name("blk.01.attn_q.weight") is None and gguf.hf_name("blk.0.attn_q.scale") is None
    assert gguf.hf_name("rope_freqs.weight") is None and gguf.hf_name("token_embd") is None


def test_the_type_table_is_ggmls():
    import gguf as gguf_py

    assert {t.value: (t.name, *gguf_py.GGML_QUANT_SIZES[t]) for t in gguf_py.GGML_QUANT_SIZES} == gguf.GGML_TYPES
    for type_id, (name, block, size) in gguf.GGML_TYPES.items():
        blocks = np.zeros((1, size), dtype=np.uint8)
        if name in gguf.READABLE:
            assert gguf.decode(blocks, name, "t").shape == (1, block)
        else:
            with pytest.raises(DataError, match=f"type {name} is not supported; attn reads F32, F16"):
                gguf.decode(blocks, name, "t")


# --- metadata -> config -----------------------------------------------------------------------------------


def hf_llama3_inv_freq(config: dict) -> np.ndarray:
    """transformers' _compute_llama3_parameters, from the folder's rope_parameters."""
    rope = config["rope_parameters"]
    dim = config["head_dim"]
    inv_freq = 1.0 / rope["rope_theta"] ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    factor, low, high, old = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"], rope["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    scaled = np.where(wavelen > old / low, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old / high) & ~(wavelen > old / low)
    return np.where(medium, smoothed, scaled)


@pytest.mark.parametrize("kind", checkpoints.GGUF_TYPES)
@pytest.mark.parametrize("name", NAMES)
def test_metadata_gives_the_folders_config(name, kind):
    config, hf = source(name, kind).config, folder_config(name)
    for key in ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "rms_norm_eps", "max_position_embeddings", "vocab_size", "tie_word_embeddings",
                "bos_token_id", "eos_token_id", "architectures", "hidden_act"):
        assert config[key] == hf[key], key
    assert config["head_dim"] == hf.get("head_dim", hf["hidden_size"] // hf["num_attention_heads"])
    rope = hf.get("rope_parameters") or {"rope_type": "default", "rope_theta": hf["rope_theta"]}
    assert config["rope_theta"] == rope["rope_theta"] and config["rope_scaling"] is None
    if rope["rope_type"] == "llama3":
        base = 1.0 / config["rope_theta"] ** (np.arange(0, config["head_dim"], 2) / config["head_dim"])
        factors = np.array(config["rope_freq_factors"])
        assert factors.min() == 1 and factors.max() == 8 and ((factors > 1) & (factors < 8)).any()  # all three bands
        assert np.allclose(base / factors, hf_llama3_inv_freq(dict(hf, head_dim=config["head_dim"])), rtol=1e-6)
    else:
        assert "rope_freq_factors" not in config
    assert config["attention_bias"] == (name == "tiny-qwen2")


def test_model_names_chat_templates_and_bos():
    llama, qwen = source("tiny-llama", "Q8_0"), source("tiny-qwen2", "Q8_0")
    settings = {n: json.loads((checkpoints.FIXTURES / n / "tokenizer_config.json").read_text()) for n in NAMES}
    assert (llama.name, qwen.name) == ("tiny-llama", "tiny-qwen2")
    assert llama.chat_template == settings["tiny-llama"]["chat_template"] and qwen.chat_template == settings["tiny-qwen2"]["chat_template"]
    assert (llama.add_bos_token, qwen.add_bos_token, llama.bos_token_id, qwen.bos_token_id) == (True, False, 0, None)


# --- the tokenizer -------------------------------------------------------------------------------------------


def encode_all(src, data, prefix=""):
    tok = src.tokenizer()
    for s in range(int(data["n_sentences"])):
        text, chat = str(data[f"{prefix}s{s}_text"]), bool(data[f"{prefix}s{s}_chat"])
        encoding = tok.encode(text, add_special_tokens=not chat)
        yield encoding, data[f"{prefix}s{s}_ids"].tolist(), data[f"{prefix}s{s}_tokens"].tolist()


@pytest.mark.parametrize("kind", checkpoints.GGUF_TYPES)
@pytest.mark.parametrize("name", NAMES)
def test_the_gguf_tokenizer_gives_transformers_ids(name, kind):
    """The ids of the folder's own tokenizer.json, and of transformers' tokenizer built from this GGUF."""
    cases = list(encode_all(source(name, kind), oracle(name)))
    if kind != "F32":
        cases += list(encode_all(source(name, kind), oracle(f"{name}-gguf"), prefix=f"{kind}_"))
    for encoding, ids, tokens in cases:
        assert encoding.ids == ids and encoding.tokens == tokens


def test_the_smollm2_tokenizer_gives_transformers_ids():
    src = smollm2()
    assert (src.add_bos_token, src.bos_token_id, src.eos_token_id) == (False, 1, 2)  # SmolLM2's BOS is <|im_start|>, not added
    assert "<|im_start|>" in src.chat_template
    for encoding, ids, tokens in encode_all(src, oracle("smollm2")):
        assert encoding.ids == ids and encoding.tokens == tokens
    assert [t for t in src.tokenizer().encode("In 2024").tokens] == ["In", "Ġ", "2", "0", "2", "4"]


def test_smollm2_config_and_tensors():
    src = smollm2()
    c = src.config
    assert (c["model_type"], c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"]) == ("llama", 30, 9, 3, 576)
    assert (c["vocab_size"], c["tie_word_embeddings"], c["rope_theta"], c["rms_norm_eps"], c["head_dim"]) == (49152, True, 100000.0, 1e-05, 64)
    embed = src.tensors["model.embed_tokens.weight"]
    assert (embed.shape, embed.dtype) == ((49152, 576), "Q8_0")
    q = src.tensors["model.layers.0.self_attn.q_proj.weight"]
    assert (q.shape, q.dtype) == ((576, 576), "Q4_1") and "lm_head.weight" not in src.tensors
    rows = embed.rows([1, 2, 49151])
    assert rows.shape == (3, 576) and rows.dtype == np.float32 and np.isfinite(rows).all()


# --- the parser against gguf.GGUFReader ---------------------------------------------------------------------------


def agree_with_gguf_reader(path):
    from gguf import GGUFReader

    from attn_cli.models.sources.gguf_file import UnreadArray

    ours, theirs = gguf.read_file(path), GGUFReader(path)
    fields = {k: f for k, f in theirs.fields.items() if not k.startswith("GGUF.")}
    assert list(ours.metadata) == list(fields)
    for key, field in fields.items():
        expected = field.contents()
        got = ours.metadata[key]
        types = [t.value for t in field.types]
        assert (ours.value_types[key] if isinstance(ours.value_types[key], tuple) else (ours.value_types[key],)) == tuple(types), key
        if isinstance(got, UnreadArray):  # an array attn does not use is walked past: its type and length, not its items
            assert (got.item_type, got.count) == (types[1], len(expected)), key
        elif isinstance(got, np.ndarray):
            assert got.tolist() == list(expected), key
        else:
            assert got == expected, key
    assert list(ours.tensors) == [t.name for t in theirs.tensors]
    for t in theirs.tensors:
        info = ours.tensors[t.name]
        assert (list(info.dims), info.type_id, info.offset, info.nbytes) == (t.shape.tolist(), t.tensor_type.value, t.data_offset, t.n_bytes)
    assert ours.version == theirs.fields["GGUF.version"].contents()


@pytest.mark.parametrize("kind", checkpoints.GGUF_TYPES)
@pytest.mark.parametrize("name", NAMES)
def test_the_parser_agrees_with_gguf_reader(name, kind):
    agree_with_gguf_reader(checkpoints.gguf_fixture(name, kind))


@pytest.mark.slow
def test_the_parser_agrees_with_gguf_reader_on_smollm2():
    agree_with_gguf_reader(checkpoints.smollm2_gguf())


# --- damaged and hostile files ---------------------------------------------------------------------------------------


SMALL = checkpoints.gguf_fixture("tiny-llama", "Q4_0")  # 82 KB, 20 KB of it header


def damaged(tmp_path, data: bytes, name="damaged.gguf"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def one_line_error(path) -> str:
    with pytest.raises(DataError) as e:
        src = gguf.load(path)
        src.tokenizer()
        for tensor in src.tensors.values():
            tensor.array()
    message = str(e.value)
    assert "\n" not in message and str(path) in message and len(message) < 400
    return message


def header_field(data: bytes, name: bytes, after: int = 0) -> int:
    """The byte position just after the length-prefixed string `name` (a key or a tensor name) in the header."""
    at = data.index(struct.pack("<Q", len(name)) + name)
    return at + 8 + len(name) + after


def test_wrong_magic_versions_and_tiny_files(tmp_path):
    data = SMALL.read_bytes()
    assert "not a GGUF file (it does not start with the bytes 'GGUF')" in one_line_error(damaged(tmp_path, b"GGUG" + data[4:]))
    assert "GGUF version 1 is not supported" in one_line_error(damaged(tmp_path, data[:4] + struct.pack("<I", 1) + data[8:]))
    assert "GGUF version 99 is not supported" in one_line_error(damaged(tmp_path, data[:4] + struct.pack("<I", 99) + data[8:]))
    assert "big-endian" in one_line_error(damaged(tmp_path, data[:4] + struct.pack(">I", 3) + data[8:]))
    assert "a GGUF header alone is 24" in one_line_error(damaged(tmp_path, data[:10]))
    assert "a GGUF header alone is 24" in one_line_error(damaged(tmp_path, b""))
    with pytest.raises(DataError, match="cannot read it"):
        gguf.load(tmp_path / "missing.gguf")


def test_absurd_counts_are_refused_before_anything_is_allocated(tmp_path):
    data = SMALL.read_bytes()
    huge = struct.pack("<Q", (1 << 63) + 5)
    assert "the tensor count is" in one_line_error(damaged(tmp_path, data[:8] + huge + data[16:]))
    assert "the metadata key count is" in one_line_error(damaged(tmp_path, data[:16] + huge + data[24:]))
    tokens = header_field(data, b"tokenizer.ggml.tokens", after=4 + 4)  # value type ARRAY, item type STRING
    message = one_line_error(damaged(tmp_path, data[:tokens] + struct.pack("<Q", 1 << 40) + data[tokens + 8:]))
    assert "the length of metadata 'tokenizer.ggml.tokens' is 1,099,511,627,776" in message
    key = header_field(data, b"general.architecture", after=4)  # value type STRING: its length follows
    assert "runs past the end" in one_line_error(damaged(tmp_path, data[:key] + struct.pack("<Q", 1 << 50) + data[key + 8:]))
    dims = header_field(data, b"blk.0.attn_q.weight")
    assert "dimensions (1 to 4)" in one_line_error(damaged(tmp_path, data[:dims] + struct.pack("<I", 9) + data[dims + 4:]))
    assert "which no file of" in one_line_error(damaged(tmp_path, data[:dims + 4] + huge + data[dims + 12:]))


def test_bad_offsets_types_and_strings(tmp_path):
    data = SMALL.read_bytes()
    info = header_field(data, b"blk.0.attn_q.weight") + 4 + 16  # n_dims, two dims: then type, offset
    assert "not a multiple of the alignment" in one_line_error(damaged(tmp_path, data[:info + 4] + struct.pack("<Q", 3) + data[info + 12:]))
    assert "runs past the end of the file" in one_line_error(damaged(tmp_path, data[:info + 4] + struct.pack("<Q", 1 << 40) + data[info + 12:]))
    assert "has type 77, not a ggml type" in one_line_error(damaged(tmp_path, data[:info] + struct.pack("<I", 77) + data[info + 4:]))
    i32 = damaged(tmp_path, data[:info] + struct.pack("<I", 26) + data[info + 4:])  # I32: a ggml type, not weights
    assert "type I32, which is not supported; attn reads F32, F16, BF16" in one_line_error(i32)
    assert "truncated?" in one_line_error(damaged(tmp_path, data[:-100]))
    name = data.index(b"general.architecture")
    assert "is not UTF-8" in one_line_error(damaged(tmp_path, data[:name] + b"\xff" + data[name + 1:]))
    value = header_field(data, b"general.architecture", after=4 + 8)
    assert data[value:value + 5] == b"llama"
    message = one_line_error(damaged(tmp_path, data[:value] + b"rwkv6" + data[value + 5:]))  # an RNN, not a transformer
    assert "architecture 'rwkv6' is not supported; attn reads GGUF llama (Llama, Mistral, SmolLM), qwen2 (Qwen2), qwen3" in message
    pre = header_field(data, b"tokenizer.ggml.pre", after=4 + 8)
    assert "pre-tokenizer 'smolxm' is not supported" in one_line_error(damaged(tmp_path, data[:pre] + b"smolxm" + data[pre + 6:]))
    count = header_field(data, b"llama.attention.head_count", after=4)
    assert "do not fit together" in one_line_error(damaged(tmp_path, data[:count] + struct.pack("<I", 3) + data[count + 4:]))


def test_a_wrongly_typed_key(tmp_path):
    data = SMALL.read_bytes()
    at = header_field(data, b"llama.block_count")
    assert data[at:at + 4] == struct.pack("<I", 4)  # UINT32 -> FLOAT32: same size, wrong kind
    assert "llama.block_count should be int, got float" in one_line_error(damaged(tmp_path, data[:at] + struct.pack("<I", 6) + data[at + 4:]))


@settings(max_examples=int(__import__("os").environ.get("ATTN_FUZZ_EXAMPLES", 150)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=8), st.booleans())
def test_mutated_files_load_or_fail_in_one_line(tmp_path, edits, in_header):
    data = bytearray(SMALL.read_bytes())
    header = gguf.read_file(SMALL).data_start
    for where, byte in edits:
        data[int(where * (header if in_header else len(data)))] = byte
    path = damaged(tmp_path, bytes(data), "mutated.gguf")
    try:
        src = gguf.load(path)
        src.tokenizer().encode("The cat sat on 12 mats.")
        for tensor in src.tensors.values():
            tensor.array()
            if len(tensor.shape) == 2:
                tensor.rows([0, tensor.shape[0] - 1])
    except DataError as e:
        assert "\n" not in str(e) and str(path) in str(e) or str(e).startswith("tensor ")


def test_gguf_and_tokenizers_are_imported_only_when_needed():
    """Opening a file reads no number through gguf, nor does a Q4_1 tensor (attn's own decoder reads it: gguf is left for
    the rarer types); the tokenizer imports tokenizers."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom attn_cli.models.sources import gguf\n"
        f"src = gguf.load({str(checkpoints.gguf_fixture('tiny-llama', 'Q4_1'))!r})\n"
        "src.tensors['model.norm.weight'].array(); src.tensors['model.embed_tokens.weight'].shape\n"
        "print('gguf' in sys.modules, 'tokenizers' in sys.modules)\n"
        "src.tensors['model.embed_tokens.weight'].rows([3]); src.tokenizer()\n"
        "print('gguf' in sys.modules, 'tokenizers' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "False", "True"]


HF_LLAMA3_SPLIT = (  # Llama 3's tokenizer.json (transformers' gguf integration keeps the same), before llama.cpp adapted it
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def test_the_llama3_pre_tokenizer_is_llama3s(tmp_path):
    """tokenizer.ggml.pre 'llama3' (Llama 3 and its kin): Llama 3's split regex and its ignore_merges, against the
    same vocabulary in a tokenizer.json spelled as Llama 3's is."""
    from tokenizers import Regex, Tokenizer, pre_tokenizers

    data = checkpoints.gguf_fixture("tiny-llama", "Q8_0").read_bytes()
    at = header_field(data, b"tokenizer.ggml.pre", after=4 + 8)
    assert data[at:at + 6] == b"smollm"
    src = gguf.load(damaged(tmp_path, data[:at] + b"llama3" + data[at + 6:], "llama3.gguf"))
    ours = src.tokenizer()
    reference = Tokenizer.from_file(str(checkpoints.FIXTURES / "tiny-llama" / "tokenizer.json"))
    reference.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(HF_LLAMA3_SPLIT), behavior="isolated"), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    reference.model.ignore_merges = True
    texts = [str(t) for k, t in oracle("tiny-llama").items() if k.endswith("_text")]
    texts += ["In 1999, 312 houses; 1,250 by 2024!", "I'VE been 'told he's there\n\n  \tok", "the the cat's  cattle"]
    for text in texts:
        assert ours.encode(text).ids == reference.encode(text).ids, text
    assert [piece for piece, _ in ours.pre_tokenizer.pre_tokenize_str("12345")] == ["123", "45"]  # digits in threes
    assert ours.model.ignore_merges and src.add_bos_token


def test_the_c_string_reader_gives_what_python_reads_and_leaves_bad_items_to_it(tmp_path, monkeypatch):
    """gguf_file's optional C reader of string arrays (_gguf_strings.c): the same vocabulary and merges as the Python
    walk on the real SmolLM2 file; on a damaged item (cut short, too long, not UTF-8) it steps aside, and the message
    is the Python reader's, naming the item."""
    from attn_cli.models.sources import gguf_file

    if gguf_file.COMPILED is None:
        pytest.skip("the C reader was not built (no C compiler at install)")
    real = checkpoints.smollm2_gguf()
    fast = gguf_file.read_file(real).metadata
    data = SMALL.read_bytes()
    tokens = header_field(data, b"tokenizer.ggml.tokens", after=4 + 4 + 8)  # the first token's length
    (length,) = struct.unpack_from("<Q", data, tokens)
    damages = {"not UTF-8": data[: tokens + 8] + b"\xff" + data[tokens + 9 :],
               "more than is left": data[:tokens] + struct.pack("<Q", 1 << 45) + data[tokens + 8 :]}
    fast_errors = {k: one_line_error(damaged(tmp_path, v)) for k, v in damages.items()}
    monkeypatch.setattr(gguf_file, "COMPILED", None)
    slow = gguf_file.read_file(real).metadata
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges"):
        assert fast[key] == slow[key] and len(fast[key]) > 40_000
    assert fast.keys() == slow.keys()
    for reason, data_ in damages.items():
        assert fast_errors[reason] == one_line_error(damaged(tmp_path, data_)) and reason in fast_errors[reason]
    assert length >= 1


@settings(max_examples=300, deadline=None)
@given(items=st.lists(st.tuples(st.binary(max_size=12), st.integers(-3, 3)), max_size=8), tail=st.binary(max_size=9),
       extra=st.integers(0, 3), keep=st.booleans())
def test_the_c_string_reader_agrees_with_the_python_walk_on_any_bytes(items, tail, extra, keep):
    """Items whose stated lengths are off by a few bytes either way, trailing bytes, more items asked for than there are:
    the C reader reads what the Python walk reads, ends where it ends, and refuses wherever it raises."""
    from attn_cli.models.sources import gguf_file

    if gguf_file.COMPILED is None:
        pytest.skip("the C reader was not built (no C compiler at install)")
    data = b"".join(struct.pack("<Q", max(0, len(b) + off)) + b for b, off in items) + tail
    n = len(items) + extra
    fast = gguf_file.COMPILED.strings(data, 0, n, keep)
    reader = gguf_file._Reader(data, len(data), "x.gguf")
    try:
        slow = python_strings(reader, n, keep)
    except DataError:
        assert fast is None
    else:
        assert fast == (slow, reader.pos)


def python_strings(reader, n, keep):
    from attn_cli.models.sources import gguf_file

    saved, gguf_file.COMPILED = gguf_file.COMPILED, None
    try:
        return reader.strings(n, "x", keep)
    finally:
        gguf_file.COMPILED = saved
