"""llama.cpp's commonest block types dequantized, a few blocks at a time, straight into the output.

Two paths give the same bits. `_quants.c` (ggml's own loops, built by pip install where a C compiler is found) runs
when it was built; otherwise NumPy does it here. `gguf.quants` (llama.cpp's own package) decodes a type in a dozen
whole-array steps, each allocating a temporary as large as its output; here the 4- to 8-bit codes are unpacked as
bytes, or as uint64 words of 8 codes (a quarter of the float32's size), turned into float32 by one cast into the
output itself, then scaled there, a block of values small enough to stay in the CPU's cache at a time. The
arithmetic is gguf.quants' own, step for step (the same float32 products and sums in the same order), so the values
are the same bits.

A block (ggml's layout, ggml-common.h):
    Q4_0  [d f16, 16 B of 4-bit q]                       x = d (q - 8)
    Q4_1  [d f16, m f16, 16 B of 4-bit q]                x = d q + m
    Q5_0  [d f16, u32 of fifth bits, 16 B of 4-bit q]    x = d (q - 16)
    Q8_0  [d f16, 32 int8 q]                             x = q d
    Q4_K  [d f16, dmin f16, 12 B of 6-bit scales and mins, 128 B of 4-bit q]     x = (d sc) q - (dmin m), 8 scales of 32
    Q5_K  Q4_K's head, 32 B of each value's fifth bit, 128 B of its low 4 bits   the same, q in 0..31
    Q6_K  [128 B low 4 bits, 64 B high 2 bits, 16 int8 scales, d f16]           x = (d sc) (q - 32), 16 scales of 16
"""

import numpy as np

F16, F32 = np.dtype("<f2"), np.float32
QK_K = 256
CHUNK_VALUES = 1 << 19  # values decoded per step: 2 MiB of float32 and its codes stay in the last-level cache (measured best of 2^17..2^21, bench_big.py)
SHIFT_8 = tuple(np.uint8(i) for i in range(8))  # Q5_0: bit i of a high-bit byte belongs to value i of a row of 8
LOW_NIBBLES, LOW_BITS = np.uint64(0x0F0F0F0F0F0F0F0F), np.uint64(0x0101010101010101)  # Q5_K's masks, a byte at a time
U64_1, U64_4 = np.uint64(1), np.uint64(4)
EACH_GROUP = np.tile(np.arange(4), 4)  # Q5_K: the high-bit words' indices, once for each of 4 groups
GROUP_SHIFTS = np.repeat(np.arange(0, 8, 2, dtype=np.uint64), 4)  # [16]: group g's words take bit 2g
LOW_2_BITS = np.uint64(0x0303030303030303)
EACH_GROUP_Q6 = np.repeat(np.arange(2), 16) * 4 + np.tile(np.arange(4), 8)  # Q6_K: [32] (half, group, word) -> half h's word w
GROUP_SHIFTS_Q6 = np.tile(np.repeat(np.arange(0, 8, 2, dtype=np.uint64), 4), 2)  # [32]: group k takes bits 2k, 2k + 1


def _k_scales(head: np.ndarray):  # [n, 12] uint8 -> sc, m [n, 8] uint8 (6 bits each)
    """Q4_K and Q5_K's packed scales and mins (get_scale_min_k4), four bytes at a time as one uint32: the first
    four whole, the last four split. (A shift crosses into the next byte only bits that the mask then drops.)"""
    d, m, md = np.ascontiguousarray(head).view("<u4").T  # [n] each: bytes 0-3, 4-7, 8-11
    sc = np.empty((len(head), 2), "<u4")
    mn = np.empty((len(head), 2), "<u4")
    sc[:, 0] = d & 0x3F3F3F3F
    sc[:, 1] = (md & 0x0F0F0F0F) | ((d >> 2) & 0x30303030)
    mn[:, 0] = m & 0x3F3F3F3F
    mn[:, 1] = ((md >> 4) & 0x0F0F0F0F) | ((m >> 2) & 0x30303030)
    return sc.view(np.uint8), mn.view(np.uint8)


def _nibbles(b: np.ndarray, codes: np.ndarray):  # [n, bytes] uint8 -> (low, high) [n, bytes] uint8, each byte's 4-bit halves
    """Both halves of every byte of the chunk, in two passes over it as one long array (what follows picks the codes out)."""
    low, high = codes[: b.size].reshape(b.shape), codes[b.size : 2 * b.size].reshape(b.shape)
    np.bitwise_and(b, 0x0F, out=low)
    np.right_shift(b, 4, out=high)
    return low, high


def q4_0(b: np.ndarray, out: np.ndarray, codes: np.ndarray) -> None:  # [n, 18] uint8 -> out [n, 32] float32
    n = len(b)
    d = b[:, :2].view(F16).astype(F32)  # [n, 1]
    low, high = _nibbles(b, codes)
    codes[: 2 * b.size] -= 8  # wraps: viewed as int8 it is q - 8, gguf's int8 subtraction
    np.copyto(out[:, :16], low[:, 2:].view(np.int8), casting="unsafe")
    np.copyto(out[:, 16:], high[:, 2:].view(np.int8), casting="unsafe")
    np.multiply(d, out, out=out)


def q5_0(b: np.ndarray, out: np.ndarray, codes: np.ndarray) -> None:  # [n, 22] uint8 -> out [n, 32] float32
    n = len(b)
    d = b[:, :2].view(F16).astype(F32)  # [n, 1]
    low, high = _nibbles(b, codes)
    fifth = _high_bits(b[:, 2:6], SHIFT_8, 1, codes[2 * b.size : 2 * b.size + n * 32].reshape(8, n, 4)).transpose(1, 2, 0)  # [n, 4, 8]: value j's is bit j of the uint32
    q = codes[2 * b.size + n * 32 : 2 * b.size + 2 * n * 32].reshape(n, 2, 2, 8)
    np.bitwise_or(low[:, 6:].reshape(n, 2, 8), fifth[:, :2], out=q[:, 0])
    np.bitwise_or(high[:, 6:].reshape(n, 2, 8), fifth[:, 2:], out=q[:, 1])
    q = q.reshape(n, 32)
    q -= 16  # wraps: viewed as int8 it is q - 16
    np.copyto(out, q.view(np.int8), casting="unsafe")
    np.multiply(d, out, out=out)


def q4_1(b: np.ndarray, out: np.ndarray, codes: np.ndarray) -> None:  # [n, 20] uint8 -> out [n, 32] float32
    d, m = b[:, :2].view(F16).astype(F32), b[:, 2:4].view(F16).astype(F32)  # [n, 1]
    low, high = _nibbles(b, codes)
    np.copyto(out[:, :16], low[:, 4:], casting="unsafe")
    np.copyto(out[:, 16:], high[:, 4:], casting="unsafe")
    np.multiply(d, out, out=out)
    np.add(out, m, out=out)


def q8_0(b: np.ndarray, out: np.ndarray, codes: np.ndarray) -> None:  # [n, 34] uint8 -> out [n, 32] float32
    d = b[:, :2].view(F16).astype(F32)  # [n, 1]
    np.copyto(out, b[:, 2:].view(np.int8), casting="unsafe")
    np.multiply(out, d, out=out)


def _each_value(per_sub_block: np.ndarray, width: int) -> np.ndarray:  # [n, s] -> [n, s * width]
    """A sub-block's scale for each of its values: multiplying by it is one long loop, where a broadcast [n, s, 1]
    runs one short loop of `width` values per sub-block."""
    return np.repeat(per_sub_block.reshape(-1), width).reshape(len(per_sub_block), -1)


def _k_affine(b: np.ndarray, out: np.ndarray) -> None:  # Q4_K/Q5_K: out [n, 256] holding q -> (d sc) q - dmin m
    d, dmin = b[:, :2].view(F16).astype(F32), b[:, 2:4].view(F16).astype(F32)  # [n, 1]
    sc, mn = _k_scales(b[:, 4:16])
    np.multiply(_each_value(d * sc.astype(F32), 32), out, out=out)
    np.subtract(out, _each_value(dmin * mn.astype(F32), 32), out=out)


def q4_k(b: np.ndarray, out: np.ndarray, codes: np.ndarray) -> None:  # [n, 144] uint8 -> out [n, 256] float32
    n = len(b)
    low, high = _nibbles(b, codes)
    o = out.reshape(n, 4, 2, 32)  # 4 groups of 32 bytes: sub-block 2g is their low halves, 2g + 1 their high
    np.copyto(o[:, :, 0], low[:, 16:].reshape(n, 4, 32), casting="unsafe")
    np.copyto(o[:, :, 1], high[:, 16:].reshape(n, 4, 32), casting="unsafe")
    _k_affine(b, out)


def _high_bits(qh: np.ndarray, shifts: np.ndarray, mask: int, into: np.ndarray) -> np.ndarray:  # [n, m] -> [s, n, m] uint8
    """((qh >> shift) & mask) << 4 for each shift, with the shifts outermost so that every pass is one long loop
    (a shift by one number: NumPy's vector loop; a shift by an array of them goes element by element)."""
    qh = np.ascontiguousarray(qh)
    for i, shift in enumerate(shifts):
        np.right_shift(qh, shift, out=into[i])
    np.bitwise_and(into, mask, out=into)
    np.left_shift(into, 4, out=into)
    return into


def q5_k(b: np.ndarray, out: np.ndarray, codes: np.ndarray) -> None:  # [n, 176] uint8 -> out [n, 256] float32
    """As uint64 words, 8 codes at a time. Group g's 32 bytes hold sub-block 2g in their low halves and 2g + 1 in
    their high; value j's fifth bit in sub-block s is bit s of high-bit byte j, moved to bit 4 by a right shift by s
    (so nothing crosses a byte: bit 8j + s lands on 8j, then << 4)."""
    n = len(b)
    qs = b[:, 48:].view("<u8")  # [n, 16] words: (group, word)
    q = codes[: n * QK_K].view("<u8").reshape(n, 2, 16)  # [n, low/high half, (group, word)]: sub-block 2 group + half
    fifth = codes[n * QK_K : 2 * n * QK_K].view("<u8").reshape(n, 2, 16)
    np.bitwise_and(qs, LOW_NIBBLES, out=q[:, 0])
    np.right_shift(qs, U64_4, out=q[:, 1])
    np.bitwise_and(q[:, 1], LOW_NIBBLES, out=q[:, 1])
    qh = np.take(b[:, 16:48].view("<u8"), EACH_GROUP, axis=1)  # [n, 16]: the 4 high-bit words once per group
    np.right_shift(qh, GROUP_SHIFTS, out=fifth[:, 0])  # sub-block 2g: bit 2g
    np.right_shift(fifth[:, 0], U64_1, out=fifth[:, 1])  # sub-block 2g + 1: bit 2g + 1
    np.bitwise_and(fifth, LOW_BITS, out=fifth)
    np.left_shift(fifth, U64_4, out=fifth)
    np.bitwise_or(q, fifth, out=q)
    np.copyto(out.reshape(n, 4, 2, 32), codes[: n * QK_K].reshape(n, 2, 4, 32).transpose(0, 2, 1, 3), casting="unsafe")
    _k_affine(b, out)


def q6_k(b: np.ndarray, out: np.ndarray, codes: np.ndarray) -> None:  # [n, 210] uint8 -> out [n, 256] float32
    """As uint64 words, 8 codes at a time. Each half of 128 values: groups 0 and 1 are the low 4 bits of its two parts
    of 32 bytes, groups 2 and 3 their high 4 bits; group k's top 2 bits are bits 2k, 2k + 1 of the half's 32 high-bit
    bytes, moved to bits 4, 5 by a right shift by 2k (nothing crosses a byte)."""
    n = len(b)
    ql = b[:, :128].view("<u8").reshape(n, 2, 2, 4)  # [n, half, part, word]
    q = codes[: n * QK_K].view("<u8").reshape(n, 2, 2, 2, 4)  # [n, half, low/high 4 bits, part, word]: group 2 (bits) + part
    top = codes[n * QK_K : 2 * n * QK_K].view("<u8").reshape(n, 32)  # [n, (half, group, word)]
    np.bitwise_and(ql, LOW_NIBBLES, out=q[:, :, 0])
    np.right_shift(ql, U64_4, out=q[:, :, 1])
    np.bitwise_and(q[:, :, 1], LOW_NIBBLES, out=q[:, :, 1])
    np.right_shift(np.take(b[:, 128:192].view("<u8"), EACH_GROUP_Q6, axis=1), GROUP_SHIFTS_Q6, out=top)
    np.bitwise_and(top, LOW_2_BITS, out=top)
    np.left_shift(top, U64_4, out=top)
    np.bitwise_or(q.reshape(n, 32), top, out=q.reshape(n, 32))
    q = codes[: n * QK_K]
    q -= 32  # wraps: viewed as int8 it is q - 32
    scale = b[:, 208:210].view(F16).astype(F32) * b[:, 192:208].view(np.int8).astype(F32)  # [n, 16]
    np.copyto(out, q.reshape(n, QK_K).view(np.int8), casting="unsafe")
    np.multiply(_each_value(scale, 16), out, out=out)


# type -> (decoder, values per block, bytes per block, scratch bytes per block: both halves of each byte, the codes)
DECODERS = {
    "Q4_0": (q4_0, 32, 18, 36), "Q4_1": (q4_1, 32, 20, 40), "Q5_0": (q5_0, 32, 22, 44 + 64), "Q8_0": (q8_0, 32, 34, 0),
    "Q4_K": (q4_k, QK_K, 144, 288), "Q5_K": (q5_k, QK_K, 176, 4 * QK_K), "Q6_K": (q6_k, QK_K, 210, 2 * QK_K),
}


try:  # the optional C decoder (_quants.c, built at install where a compiler is found): the same values, ~10x as fast
    from attn_cli.models.sources import _quants as COMPILED
except ImportError:
    COMPILED = None
COMPILED_TYPES = frozenset(DECODERS)


def dequantize(blocks: np.ndarray, dtype: str, out: np.ndarray | None = None) -> np.ndarray:  # [rows, bytes] uint8 -> [rows, values] float32
    """The values of `blocks` (whole rows of one of DECODERS' types) as float32, in `out` when given."""
    decode, per_block, block_bytes, scratch = DECODERS[dtype]
    b = np.ascontiguousarray(blocks).reshape(-1, block_bytes)  # [blocks, bytes]
    if out is None:
        out = np.empty((len(blocks), blocks.shape[1] // block_bytes * per_block), dtype=F32)
    flat = out.reshape(-1, per_block)  # [blocks, values]: out is C-contiguous, so this is a view
    if COMPILED is not None and dtype in COMPILED_TYPES and out.flags.aligned:
        COMPILED.dequantize(dtype, b, flat)
        return out
    step = max(1, CHUNK_VALUES // per_block)
    codes = np.empty(min(step, len(b)) * scratch, dtype=np.uint8)  # the unpacked codes
    for start in range(0, len(b), step):
        decode(b[start : start + step], flat[start : start + step], codes)
    return out
