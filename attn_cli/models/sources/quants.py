"""llama.cpp's commonest block types dequantized in NumPy, a few blocks at a time, straight into the output.

`gguf.quants` (llama.cpp's own package) decodes a type in a dozen whole-array steps, each allocating a
temporary as large as its output; here the 4- to 8-bit codes are unpacked as bytes (a quarter of the
float32's size), turned into float32 by one cast into the output itself, then scaled there, a block of
values small enough to stay in the CPU's cache at a time. The arithmetic is gguf.quants' own, step for
step (the same float32 products and sums in the same order), so the values are the same bits.

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
CHUNK_VALUES = 1 << 18  # values decoded per step: 1 MiB of float32 plus its byte-sized codes fit a 2 MiB L2 cache
SHIFT_8 = tuple(np.uint8(i) for i in range(8))  # Q5_K: bit i of a high-bit byte belongs to sub-block i
SHIFT_4 = tuple(np.uint8(i) for i in (0, 2, 4, 6))  # Q6_K: 2 high bits for each of 4 groups


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


def _k_affine(b: np.ndarray, out: np.ndarray) -> None:  # Q4_K/Q5_K: out [n, 8, 32] holding q -> (d sc) q - dmin m
    n = len(b)
    d, dmin = b[:, :2].view(F16).astype(F32), b[:, 2:4].view(F16).astype(F32)  # [n, 1]
    sc, mn = _k_scales(b[:, 4:16])
    np.multiply((d * sc.astype(F32)).reshape(n, 8, 1), out, out=out)
    np.subtract(out, (dmin * mn.astype(F32)).reshape(n, 8, 1), out=out)


def q4_k(b: np.ndarray, out: np.ndarray, codes: np.ndarray) -> None:  # [n, 144] uint8 -> out [n, 256] float32
    n = len(b)
    low, high = _nibbles(b, codes)
    o = out.reshape(n, 4, 2, 32)  # 4 groups of 32 bytes: sub-block 2g is their low halves, 2g + 1 their high
    np.copyto(o[:, :, 0], low[:, 16:].reshape(n, 4, 32), casting="unsafe")
    np.copyto(o[:, :, 1], high[:, 16:].reshape(n, 4, 32), casting="unsafe")
    _k_affine(b, out.reshape(n, 8, 32))


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
    n = len(b)
    low, high = _nibbles(b, codes)
    fifth = _high_bits(b[:, 16:48], SHIFT_8, 1, codes[2 * b.size : 2 * b.size + n * QK_K].reshape(8, n, 32))  # sub-block i's fifth bit is bit i
    q = codes[2 * b.size + n * QK_K : 2 * b.size + 2 * n * QK_K].reshape(n, 4, 2, 32)
    np.bitwise_or(low[:, 48:].reshape(n, 4, 32), fifth[0::2].transpose(1, 0, 2), out=q[:, :, 0])
    np.bitwise_or(high[:, 48:].reshape(n, 4, 32), fifth[1::2].transpose(1, 0, 2), out=q[:, :, 1])
    np.copyto(out.reshape(n, 8, 32), q.reshape(n, 8, 32), casting="unsafe")
    _k_affine(b, out.reshape(n, 8, 32))


def q6_k(b: np.ndarray, out: np.ndarray, codes: np.ndarray) -> None:  # [n, 210] uint8 -> out [n, 256] float32
    n = len(b)
    low, high = _nibbles(b, codes)
    top = _high_bits(b[:, 128:192].reshape(n, 2, 32), SHIFT_4, 3, codes[2 * b.size : 2 * b.size + n * QK_K].reshape(4, n, 2, 32))
    q = codes[2 * b.size + n * QK_K : 2 * b.size + 2 * n * QK_K].reshape(n, 2, 4, 32)  # [half, group, 32]
    # groups 0, 1 of a half: the low 4 bits of its 64 bytes, groups 2, 3: their high 4 bits; group k's top 2 bits: bits 2k, 2k + 1
    np.bitwise_or(low[:, :128].reshape(n, 2, 2, 32), top[:2].transpose(1, 2, 0, 3), out=q[:, :, :2])
    np.bitwise_or(high[:, :128].reshape(n, 2, 2, 32), top[2:].transpose(1, 2, 0, 3), out=q[:, :, 2:])
    q = q.reshape(-1)
    q -= 32  # wraps: viewed as int8 it is q - 32
    scale = (b[:, 208:210].view(F16).astype(F32) * b[:, 192:208].view(np.int8).astype(F32)).reshape(n, 16, 1)
    o = out.reshape(n, 16, 16)
    np.copyto(o, q.reshape(n, 16, 16).view(np.int8), casting="unsafe")
    np.multiply(scale, o, out=o)


# type -> (decoder, values per block, bytes per block, scratch bytes per block: both halves of each byte, the codes)
DECODERS = {
    "Q4_0": (q4_0, 32, 18, 36), "Q4_1": (q4_1, 32, 20, 40), "Q5_0": (q5_0, 32, 22, 44 + 64), "Q8_0": (q8_0, 32, 34, 0),
    "Q4_K": (q4_k, QK_K, 144, 288), "Q5_K": (q5_k, QK_K, 176, 352 + 2 * QK_K), "Q6_K": (q6_k, QK_K, 210, 420 + 2 * QK_K),
}


def dequantize(blocks: np.ndarray, dtype: str, out: np.ndarray | None = None) -> np.ndarray:  # [rows, bytes] uint8 -> [rows, values] float32
    """The values of `blocks` (whole rows of one of DECODERS' types) as float32, in `out` when given."""
    decode, per_block, block_bytes, scratch = DECODERS[dtype]
    b = np.ascontiguousarray(blocks).reshape(-1, block_bytes)  # [blocks, bytes]
    if out is None:
        out = np.empty((len(blocks), blocks.shape[1] // block_bytes * per_block), dtype=F32)
    flat = out.reshape(-1, per_block)  # [blocks, values]: out is C-contiguous, so this is a view
    step = max(1, CHUNK_VALUES // per_block)
    codes = np.empty(min(step, len(b)) * scratch, dtype=np.uint8)  # the unpacked codes
    for start in range(0, len(b), step):
        decode(b[start : start + step], flat[start : start + step], codes)
    return out
