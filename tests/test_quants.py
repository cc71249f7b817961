"""attn's own dequantization (attn_cli.models.sources.quants) against gguf.quants, llama.cpp's package: random blocks of
every type it decodes, blocks spread over several of its steps, and the real SmolLM2 and Gemma 3 files' tensors; each
through both paths: the optional C decoder (_quants.c, built at install) and the NumPy one it stands in for.

The arithmetic is gguf.quants' own, operation for operation, so the tolerance is 0 ULP; scales are finite f16 values
(a damaged, non-finite one is a DataError, tested in test_gguf)."""

from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from attn_cli.models.sources import gguf, quants
from attn_cli.models.sources.gguf_file import GGML_TYPES, read_file
from tests import checkpoints

TYPES = tuple(quants.DECODERS)
F16_FIELDS = {"Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q8_0": (0,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}  # byte offsets of a block's f16 scales


def reference(blocks: np.ndarray, dtype: str) -> np.ndarray:  # [rows, bytes] uint8 -> [rows, values] float32, by gguf.quants
    from gguf import GGMLQuantizationType, quants as theirs

    return theirs.dequantize(blocks, GGMLQuantizationType[dtype])


def random_blocks(rng: np.random.Generator, dtype: str, rows: int, blocks_per_row: int) -> np.ndarray:  # -> [rows, bytes] uint8
    """Random bytes in every field, with finite f16 scales (any finite value, subnormals and zero included)."""
    _, _, block_bytes, _ = quants.DECODERS[dtype]
    raw = rng.integers(0, 256, (rows, blocks_per_row * block_bytes), dtype=np.uint8)
    b = raw.reshape(-1, block_bytes)
    for offset in F16_FIELDS[dtype]:
        bits = rng.integers(0, 1 << 16, len(b), dtype=np.uint16)
        bits[(bits & 0x7C00) == 0x7C00] &= 0xBBFF  # an all-ones exponent (inf, NaN) made finite
        b[:, offset : offset + 2] = bits.view(np.uint8).reshape(-1, 2)
    return raw


@pytest.fixture(params=["compiled", "numpy"])
def path(request, monkeypatch):
    """Each test once through the C decoder (skipped where it was not built) and once through NumPy alone."""
    if request.param == "compiled" and quants.COMPILED is None:
        pytest.skip("the C decoder was not built (no C compiler at install)")
    if request.param == "numpy":
        monkeypatch.setattr(quants, "COMPILED", None)
    return request.param


def test_the_c_decoder_is_built_where_a_compiler_is():
    """pip install -e . builds _quants.c where a C compiler is found (the NumPy path is the fallback, not the rule)."""
    import shutil
    import sysconfig

    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) here")
    assert quants.COMPILED is not None, "attn_cli/models/sources/_quants.c was not built: pip install -e . again"


@pytest.mark.parametrize("dtype", sorted(quants.COMPILED_TYPES))
def test_the_c_decoder_gives_numpys_bits_on_any_bytes(dtype):
    """Every byte random, the scales too (NaN with its payload, inf, subnormals): the same bits as the NumPy path."""
    if quants.COMPILED is None:
        pytest.skip("the C decoder was not built")
    _, per_block, block_bytes, _ = quants.DECODERS[dtype]
    blocks = np.random.default_rng(3).integers(0, 256, (300, 3 * block_bytes), dtype=np.uint8)
    ours = np.empty((300, 3 * per_block), np.float32)
    quants.COMPILED.dequantize(dtype, blocks, ours)
    steps = np.empty_like(ours)
    decode, _, _, scratch = quants.DECODERS[dtype]
    with np.errstate(all="ignore"):
        decode(blocks.reshape(-1, block_bytes), steps.reshape(-1, per_block), np.empty(900 * scratch, np.uint8))
    assert np.array_equal(ours.view(np.uint32), steps.view(np.uint32))


def test_the_c_decoder_refuses_what_does_not_fit():
    if quants.COMPILED is None:
        pytest.skip("the C decoder was not built")
    blocks = np.zeros((2, 144), np.uint8)
    with pytest.raises(ValueError, match="do not fill"):
        quants.COMPILED.dequantize("Q4_K", blocks, np.empty((2, 255), np.float32))
    with pytest.raises(ValueError, match="do not fill"):
        quants.COMPILED.dequantize("Q4_K", blocks[:, :100].copy(), np.empty((2, 256), np.float32))
    with pytest.raises(ValueError, match="no compiled decoder"):
        quants.COMPILED.dequantize("Q2_K", blocks, np.empty((2, 256), np.float32))
    with pytest.raises(TypeError, match="read-write bytes-like"):  # not contiguous: no buffer to write straight into
        quants.COMPILED.dequantize("Q4_K", blocks, np.empty((2, 512), np.float32)[:, ::2])


def test_the_table_matches_ggml():
    """Block sizes as ggml's own table (gguf_file.GGML_TYPES) gives them."""
    names = {info[0]: info for info in GGML_TYPES.values()}
    for dtype, (_, per_block, block_bytes, _) in quants.DECODERS.items():
        assert names[dtype][1:] == (per_block, block_bytes)


@pytest.mark.parametrize("dtype", TYPES)
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 5), blocks_per_row=st.integers(1, 4))
def test_random_blocks_match_gguf(compiled, dtype, seed, rows, blocks_per_row):
    if compiled and quants.COMPILED is None:
        pytest.skip("the C decoder was not built (no C compiler at install)")
    blocks = random_blocks(np.random.default_rng(seed), dtype, rows, blocks_per_row)
    with pytest.MonkeyPatch.context() as patch:
        if not compiled:
            patch.setattr(quants, "COMPILED", None)
        ours = quants.dequantize(blocks, dtype)
    assert ours.dtype == np.float32 and ours.shape == (rows, blocks.shape[1] // quants.DECODERS[dtype][2] * quants.DECODERS[dtype][1])
    np.testing.assert_array_max_ulp(ours, reference(blocks, dtype), maxulp=0)


@pytest.mark.parametrize("dtype", TYPES)
def test_many_steps_and_a_given_output(path, dtype, monkeypatch):
    """Blocks spread over several steps (the last one short), written into a given array, which is returned."""
    monkeypatch.setattr(quants, "CHUNK_VALUES", 3 * quants.DECODERS[dtype][1])  # 3 blocks a step
    blocks = random_blocks(np.random.default_rng(7), dtype, 5, 2)  # 10 blocks: steps of 3, 3, 3, 1
    out = np.full((5, 2 * quants.DECODERS[dtype][1]), np.nan, dtype=np.float32)
    assert quants.dequantize(blocks, dtype, out) is out
    np.testing.assert_array_max_ulp(out, reference(blocks, dtype), maxulp=0)


@cache
def real_file(which: str):
    return read_file({"smollm2": checkpoints.smollm2_gguf, "gemma3": checkpoints.gemma3_gguf}[which]())


ROWS = 8  # rows of each end of each tensor compared: every block type, in a few hundred kilobytes


@pytest.mark.parametrize("which", ["smollm2", "gemma3"])
def test_real_files_match_gguf(path, which):
    """Every tensor of a type attn decodes, in the SmolLM2 (Q4_1, Q8_0) and Gemma 3 (Q4_K, Q5_0, Q6_K, Q8_0) files:
    its first and last rows."""
    file = real_file(which)
    seen = set()
    for info in file.tensors.values():
        if info.type_name not in quants.DECODERS:
            continue
        seen.add(info.type_name)
        _, per_block, block_bytes, _ = quants.DECODERS[info.type_name]
        rows = file.raw(info).reshape(-1, info.dims[0] // per_block * block_bytes)
        for part in (rows[:ROWS], rows[-ROWS:]):
            np.testing.assert_array_max_ulp(quants.dequantize(part, info.type_name), reference(part, info.type_name), maxulp=0)
    assert seen == ({"Q4_1", "Q8_0"} if which == "smollm2" else {"Q4_K", "Q5_0", "Q6_K", "Q8_0"})


def test_a_row_range_is_those_rows():
    """GGUFTensor.row_range: rows start..stop read from their own bytes, equal to the same rows of the whole tensor,
    also for Q and K, whose rows the file stores permuted."""
    source = gguf.load(checkpoints.gguf_fixture("tiny-llama", "Q4_1"))
    for name in ("model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight"):
        tensor = source.tensors[name]
        whole = tensor.array()
        for start, stop in ((0, 1), (3, 11), (tensor.shape[0] - 2, tensor.shape[0]), (5, 5)):
            np.testing.assert_array_max_ulp(tensor.row_range(start, stop), whole[start:stop], maxulp=0)
        out = np.empty((4, tensor.shape[1]), np.float32)
        assert tensor.row_range(2, 6, out=out) is out
        np.testing.assert_array_max_ulp(out, whole[2:6], maxulp=0)
        with pytest.raises(IndexError):
            tensor.row_range(0, tensor.shape[0] + 1)
        ids = np.arange(3, 11)
        np.testing.assert_array_max_ulp(tensor.rows(ids), whole[3:11], maxulp=0)  # a block of rows, read in place
        np.testing.assert_array_max_ulp(tensor.rows(ids[::-1]), whole[3:11][::-1], maxulp=0)  # gathered


def test_a_large_layer_is_not_read_ahead_nor_kept_after_the_pass(monkeypatch):
    """Layers over AHEAD_BYTES as float32 are read when the pass reaches them, into the memory of the one before;
    after the last one nothing dequantized is held (the output head's blocks get that memory). The pass is unchanged."""
    from attn_cli.models import loading, weights

    path = str(checkpoints.gguf_fixture("tiny-llama", "Q4_1"))
    expected = loading.load(path).forward([5, 7, 11, 13]).get("resid_final")
    monkeypatch.setattr(weights, "AHEAD_BYTES", 0)  # every layer counts as large
    model = loading.load(path)
    submitted = []
    pool = model.weights._pool()
    monkeypatch.setattr(pool, "submit", lambda *a, **k: submitted.append(a) or pytest.fail("a layer was read ahead"))
    np.testing.assert_allclose(model.forward([5, 7, 11, 13]).get("resid_final"), expected, rtol=1e-6, atol=1e-7)
    assert not submitted and not model.weights._spare and not model.weights._lent
