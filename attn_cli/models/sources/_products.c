/* x W^T straight from a GGUF tensor's blocks: the products of a few rows (a generated token, a short prompt, the
 * output head), without a float32 copy of the weight. The optional fast path of products.py.
 *
 * Each block is decoded into its integer codes q (int8) and, per sub-block s of S values, a scale and a minimum, so
 * that a weight is w = scale_s q + min_s (ggml's own block layouts, as _quants.c reads them). Then
 *     sum_j w_j x_j = scale_s (sum_j q_j x_j) + min_s (sum_j x_j)
 * the sum of x over each sub-block made once per call. Activations stay float32 and every sum is a float32 sum (no
 * quantized activations, as llama.cpp uses): the result is the dequantized product to float32 rounding.
 *
 * Two builds of the same loops: one for AVX2, FMA and F16C (chosen at run time when the CPU has them), one for any CPU. The
 * output rows are split over `threads` threads (the calling one and a pool kept between calls), the GIL released.
 *
 *     product(parts, x, out, threads) -> None
 *         parts: up to 8 tuples (type, blocks, rows, column, order), each a matrix (Q, K, V) of `rows` rows of blocks,
 *         C-contiguous; x: float32 [n, k], k the values of a row; out: float32 [n, width]; writes
 *         out[t, column + c(r)] = sum_j W[r, j] x[t, j], c(r) = r, or order[r] (int32, a permutation) when given.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_blocks.h"

#ifndef _WIN32
#include <pthread.h>
#include <time.h>
#define POOL 1
#endif

#define QK_K 256
#define MAX_WORKERS 63

typedef struct {
    const char *name;
    int block_bytes, values, sub; /* bytes and values of a block, values of a sub-block (one scale) */
    int affine;                   /* whether it has minimums */
    int kind;
} BlockType;

enum { T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0, T_Q4_K, T_Q5_K, T_Q6_K, T_F16, T_BF16 };

static const BlockType TYPES[] = {
    {"Q4_0", 18, 32, 32, 1, T_Q4_0}, {"Q4_1", 20, 32, 32, 1, T_Q4_1}, {"Q5_0", 22, 32, 32, 1, T_Q5_0},
    {"Q5_1", 24, 32, 32, 1, T_Q5_1}, {"Q8_0", 34, 32, 32, 0, T_Q8_0}, {"Q4_K", 144, QK_K, 32, 1, T_Q4_K},
    {"Q5_K", 176, QK_K, 32, 1, T_Q5_K}, {"Q6_K", 210, QK_K, 16, 1, T_Q6_K}, {"F16", 512, 256, 256, 0, T_F16},
    {"BF16", 512, 256, 256, 0, T_BF16},
};
#define N_TYPES (sizeof(TYPES) / sizeof(TYPES[0]))

static float HALF[1 << 16]; /* every f16 as a float, made once at import (ggml's own table, for CPUs without F16C) */
#define HALF_AT(p) HALF[(uint16_t)((p)[0] | ((p)[1] << 8))]


/* One block's codes, scales and minimums: w = scale[s] q[j] + min[s] for value j of sub-block s. The codes are
 * unpacked 8 at a time as 64-bit words (a byte each), and kept unsigned: a type's offset (Q4_0's q - 8) is folded
 * into its minimum (-8 d). F16 and BF16 are decoded to floats instead (f), one "sub-block" of 256 values, scale 1. */
#define LOW4 0x0F0F0F0F0F0F0F0FULL
#define BIT0 0x0101010101010101ULL
static uint64_t SPREAD[256]; /* bit i of a byte -> bit 0 of byte i */

static inline uint64_t word(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline void put(int8_t *q, uint64_t w) { memcpy(q, &w, 8); }

static inline __attribute__((always_inline)) void decode(int kind, const uint8_t *restrict b, int8_t *restrict q, float *restrict scale, float *restrict min, float *restrict f) {
    switch (kind) {
    case T_Q4_0: case T_Q4_1: case T_Q5_0: case T_Q5_1: {
        const int off = kind == T_Q4_0 || kind == T_Q5_0 ? 2 : 4, fifth = kind == T_Q5_0 || kind == T_Q5_1;
        const uint8_t *qs = b + off + (fifth ? 4 : 0);
        uint32_t qh = 0;
        if (fifth) memcpy(&qh, b + off, 4);
        scale[0] = HALF_AT(b);
        min[0] = kind == T_Q4_1 || kind == T_Q5_1 ? HALF_AT(b + 2) : (fifth ? -16.0f : -8.0f) * scale[0];
        for (int i = 0; i < 2; i++) {
            const uint64_t w = word(qs + 8 * i);
            uint64_t low = w & LOW4, high = (w >> 4) & LOW4;
            if (fifth) {
                low |= SPREAD[(qh >> (8 * i)) & 0xff] << 4;
                high |= SPREAD[(qh >> (16 + 8 * i)) & 0xff] << 4;
            }
            put(q + 8 * i, low);
            put(q + 16 + 8 * i, high);
        }
        break;
    }
    case T_Q8_0:
        scale[0] = HALF_AT(b);
        min[0] = 0.0f;
        memcpy(q, b + 2, 32);
        break;
    case T_Q4_K: case T_Q5_K: {
        const int fifth = kind == T_Q5_K;
        const float d = HALF_AT(b), dmin = HALF_AT(b + 2);
        const uint8_t *qh = b + 16, *ql = b + (fifth ? 48 : 16);
        for (int s = 0; s < 8; s++) {
            uint8_t sc, m;
            scale_min_k4(s, b + 4, &sc, &m);
            scale[s] = d * (float)sc;
            min[s] = -dmin * (float)m;
        }
        for (int g = 0; g < 4; g++, ql += 32, q += 64) /* sub-blocks 2g (low halves) and 2g + 1 (high halves) */
            for (int i = 0; i < 4; i++) {
                const uint64_t w = word(ql + 8 * i);
                uint64_t low = w & LOW4, high = (w >> 4) & LOW4;
                if (fifth) {
                    const uint64_t h = word(qh + 8 * i);
                    low |= ((h >> (2 * g)) & BIT0) << 4;
                    high |= ((h >> (2 * g + 1)) & BIT0) << 4;
                }
                put(q + 8 * i, low);
                put(q + 32 + 8 * i, high);
            }
        break;
    }
    case T_Q6_K: {
        const float d = HALF_AT(b + 208);
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        for (int s = 0; s < 16; s++) {
            scale[s] = d * (float)sc[s];
            min[s] = -32.0f * scale[s];
        }
        for (int half = 0; half < 2; half++, q += 128, ql += 64, qh += 32)
            for (int i = 0; i < 4; i++) { /* value l of each group of 32: low 4 bits from ql, top 2 from qh */
                const uint64_t a = word(ql + 8 * i), c = word(ql + 32 + 8 * i), h = word(qh + 8 * i);
                put(q + 8 * i, (a & LOW4) | (((h >> 0) & 0x0303030303030303ULL) << 4));
                put(q + 32 + 8 * i, (c & LOW4) | (((h >> 2) & 0x0303030303030303ULL) << 4));
                put(q + 64 + 8 * i, ((a >> 4) & LOW4) | (((h >> 4) & 0x0303030303030303ULL) << 4));
                put(q + 96 + 8 * i, ((c >> 4) & LOW4) | (((h >> 6) & 0x0303030303030303ULL) << 4));
            }
        break;
    }
    case T_F16:
        for (int j = 0; j < 256; j++) f[j] = HALF_AT(b + 2 * j);
        scale[0] = 1.0f;
        min[0] = 0.0f;
        break;
    case T_BF16:
        for (int j = 0; j < 256; j++) {
            uint32_t bits = ((uint32_t)b[2 * j] | ((uint32_t)b[2 * j + 1] << 8)) << 16;
            memcpy(f + j, &bits, 4);
        }
        scale[0] = 1.0f;
        min[0] = 0.0f;
        break;
    }
}

typedef struct {
    const BlockType *type;
    const uint8_t *blocks;
    Py_ssize_t rows, row_bytes, k, n, width, column;
    const float *x, *xsum; /* x [n, k]; xsum [n, k / sub]: the sums of x over each sub-block */
    const int32_t *where;  /* the output column of each row (a permutation), or NULL: column + r */
    float *out;
} Job;

typedef struct { /* one call: the parts of a weight (Q, K, V), each a Job, their rows cut into chunks of the same size */
    Job *jobs;
    Py_ssize_t count, chunk, chunks, first[8]; /* first[j]: the first chunk of job j */
} Call;

/* The same loops twice: for AVX2 and FMA, and for any CPU (GCC's and clang's vector types: 8 floats a step). */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define X86 1
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#endif
#include <immintrin.h>
/* GCC 12 widens 8 int8 into 8 int32 one by one: AVX2's own instruction instead */
#define WIDEN(p) ((v8f)_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p)))))

static inline __m256 codes8(__m128i q) { return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)); } /* the low 8 bytes as floats */

static inline float half(const uint8_t *p) { /* F16C's own conversion: no table to wait on */
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

/* 32 bits as 32 bytes: 0x10 where bit j is set, in byte j (llama.cpp's bytes_from_bits_32, then moved to bit 4) */
static inline __m256i fifth_bits(const uint8_t *p) {
    uint32_t bits;
    memcpy(&bits, p, 4);
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfeLL)), _mm256_set1_epi64x(-1));
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

static inline __m256 dot32codes(__m256i q, const float *x, float sa, float sb, __m256 acc);

/* One row of a 32-value block type (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) times one row of x, its blocks decoded in registers
 * (a generated token's product: nothing is written but the result). sum_j w_j x_j = sum_b (d_b (q_b . x_b) + m_b xsum_b). */
static inline __attribute__((always_inline)) float dot32_widened(int kind, const uint8_t *b, Py_ssize_t blocks, const float *x, const float *xsum) {
    const int block_bytes = kind == T_Q4_0 ? 18 : kind == T_Q4_1 ? 20 : kind == T_Q5_0 ? 22 : kind == T_Q5_1 ? 24 : 34;
    const int off = kind == T_Q4_0 || kind == T_Q5_0 || kind == T_Q8_0 ? 2 : 4, fifth = kind == T_Q5_0 || kind == T_Q5_1;
    const __m128i low4 = _mm_set1_epi8(0x0f);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    float m0 = 0.0f, m1 = 0.0f;
    for (Py_ssize_t i = 0; i < blocks; i++, b += block_bytes, x += 32) {
        const float d = half(b);
        if (kind == T_Q8_0) {
            __m256 p0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 2)))), _mm256_loadu_ps(x));
            __m256 p1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 10)))), _mm256_loadu_ps(x + 8));
            p0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 18)))), _mm256_loadu_ps(x + 16), p0);
            p1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 26)))), _mm256_loadu_ps(x + 24), p1);
            if (i & 1)
                acc1 = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_add_ps(p0, p1), acc1);
            else
                acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_add_ps(p0, p1), acc0);
            continue;
        }
        const __m128i bytes = _mm_loadu_si128((const __m128i *)(b + off + (fifth ? 4 : 0)));
        __m256i q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(bytes, 4), low4), _mm_and_si128(bytes, low4)); /* values 0..31 */
        if (fifth) q = _mm256_or_si256(q, fifth_bits(b + off));
        if (i & 1)
            acc1 = dot32codes(q, x, d, d, acc1);
        else
            acc0 = dot32codes(q, x, d, d, acc0);
        const float m = kind == T_Q4_1 || kind == T_Q5_1 ? half(b + 2) : kind == T_Q4_0 ? -8.0f * d : -16.0f * d;
        if (i & 1)
            m1 += m * xsum[i];
        else
            m0 += m * xsum[i];
    }
    const __m256 acc = _mm256_add_ps(acc0, acc1);
    const __m128 half4 = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    const __m128 quarter = _mm_add_ps(half4, _mm_movehl_ps(half4, half4));
    return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter))) + (m0 + m1);
}

/* Q4_0 and Q4_1: their nibbles moved into 32-bit lanes by in-lane byte shuffles, cheaper here than AVX2's widening of 8
 * bytes across the register's halves (0.73x the time on Zen 3; Q5 and Q8_0 are faster widened, as above). */
static inline __attribute__((always_inline)) float dot32_in_lanes(int kind, const uint8_t *b, Py_ssize_t blocks, const float *x, const float *xsum) {
    const int block_bytes = kind == T_Q4_0 ? 18 : 20, off = kind == T_Q4_0 ? 2 : 4;
    /* bytes 0..7 (first8) or 8..15 (last8) of a 16-byte row copied to both halves, each zero-extended to 32 bits */
    const __m256i first8 = _mm256_setr_epi8(0, -1, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, 3, -1, -1, -1, 4, -1, -1, -1, 5, -1, -1, -1, 6, -1, -1, -1, 7, -1, -1, -1);
    const __m256i last8 = _mm256_add_epi32(first8, _mm256_set1_epi32(8));
    const __m256i low4 = _mm256_set1_epi32(0x0f);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    float m0 = 0.0f, m1 = 0.0f;
    for (Py_ssize_t i = 0; i < blocks; i++, b += block_bytes, x += 32) {
        const float d = half(b);
        const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b + off)));
        const __m256i a = _mm256_shuffle_epi8(raw, first8), c = _mm256_shuffle_epi8(raw, last8); /* bytes 0..7, 8..15 */
        const __m256i c0 = _mm256_and_si256(a, low4), c1 = _mm256_and_si256(c, low4); /* values 0..7, 8..15 */
        const __m256i c2 = _mm256_and_si256(_mm256_srli_epi32(a, 4), low4), c3 = _mm256_and_si256(_mm256_srli_epi32(c, 4), low4); /* 16..31 */
        const __m256 pa = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c1), _mm256_loadu_ps(x + 8), _mm256_mul_ps(_mm256_cvtepi32_ps(c0), _mm256_loadu_ps(x)));
        const __m256 pb = _mm256_fmadd_ps(_mm256_cvtepi32_ps(c3), _mm256_loadu_ps(x + 24), _mm256_mul_ps(_mm256_cvtepi32_ps(c2), _mm256_loadu_ps(x + 16)));
        const float m = kind == T_Q4_1 ? half(b + 2) : -8.0f * d;
        if (i & 1) {
            acc1 = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_add_ps(pa, pb), acc1);
            m1 += m * xsum[i];
        } else {
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_add_ps(pa, pb), acc0);
            m0 += m * xsum[i];
        }
    }
    const __m256 acc = _mm256_add_ps(acc0, acc1);
    const __m128 half4 = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    const __m128 quarter = _mm_add_ps(half4, _mm_movehl_ps(half4, half4));
    return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter))) + (m0 + m1);
}

/* acc + sa (codes 0..15 . x 0..15) + sb (codes 16..31 . x 16..31): 32 codes (bytes 0..63) of a register, two scales */
static inline __m256 dot32codes(__m256i q, const float *x, float sa, float sb, __m256 acc) {
    const __m128i c0 = _mm256_castsi256_si128(q), c2 = _mm256_extracti128_si256(q, 1);
    const __m256 pa = _mm256_fmadd_ps(codes8(_mm_srli_si128(c0, 8)), _mm256_loadu_ps(x + 8), _mm256_mul_ps(codes8(c0), _mm256_loadu_ps(x)));
    const __m256 pb = _mm256_fmadd_ps(codes8(_mm_srli_si128(c2, 8)), _mm256_loadu_ps(x + 24), _mm256_mul_ps(codes8(c2), _mm256_loadu_ps(x + 16)));
    return _mm256_fmadd_ps(_mm256_set1_ps(sb), pb, _mm256_fmadd_ps(_mm256_set1_ps(sa), pa, acc));
}

/* One row of K-quant blocks (Q4_K, Q5_K, Q6_K) times one row of x, decoded in registers 32 codes at a time; each
 * type's offset or minimum times the sums of x over its sub-blocks (xsum). */
static inline __attribute__((always_inline)) float dot256(int kind, const uint8_t *b, Py_ssize_t blocks, const float *x, const float *xsum) {
    const int block_bytes = kind == T_Q4_K ? 144 : kind == T_Q5_K ? 176 : 210;
    const __m256i low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(0x03), bit0 = _mm256_set1_epi8(0x01);
    __m256 acc = _mm256_setzero_ps();
    float m0 = 0.0f, m1 = 0.0f;
    for (Py_ssize_t i = 0; i < blocks; i++, b += block_bytes, x += 256) {
        if (kind == T_Q6_K) { /* 16 sub-blocks of 16: w = d sc (q - 32) */
            const float d = half(b + 208);
            const int8_t *sc = (const int8_t *)(b + 192);
            for (int h = 0; h < 2; h++) {
                const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
                const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql), l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
                const __m256i hi = _mm256_loadu_si256((const __m256i *)qh);
                const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_slli_epi16(_mm256_and_si256(hi, low2), 4));
                const __m256i q2 = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hi, 2), low2), 4));
                const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hi, 4), low2), 4));
                const __m256i q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hi, 6), low2), 4));
                const int8_t *s = sc + 8 * h;
                const float *xh = x + 128 * h;
                acc = dot32codes(q1, xh, d * s[0], d * s[1], acc);
                acc = dot32codes(q2, xh + 32, d * s[2], d * s[3], acc);
                acc = dot32codes(q3, xh + 64, d * s[4], d * s[5], acc);
                acc = dot32codes(q4, xh + 96, d * s[6], d * s[7], acc);
                const float *xs = xsum + 16 * i + 8 * h; /* -32 d sc, times the sums of x over each sub-block of 16 */
                for (int j = 0; j < 8; j += 2) {
                    m0 -= 32.0f * d * (float)s[j] * xs[j];
                    m1 -= 32.0f * d * (float)s[j + 1] * xs[j + 1];
                }
            }
        } else { /* 8 sub-blocks of 32: w = d sc q - dmin m */
            const float d = half(b), dmin = half(b + 2);
            const uint8_t *qs = b + (kind == T_Q5_K ? 48 : 16);
            const __m256i qh = kind == T_Q5_K ? _mm256_loadu_si256((const __m256i *)(b + 16)) : _mm256_setzero_si256();
            for (int g = 0; g < 4; g++) {
                uint8_t sc0, mn0, sc1, mn1;
                scale_min_k4(2 * g, b + 4, &sc0, &mn0);
                scale_min_k4(2 * g + 1, b + 4, &sc1, &mn1);
                const __m256i bytes = _mm256_loadu_si256((const __m256i *)(qs + 32 * g));
                __m256i lo = _mm256_and_si256(bytes, low4), hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low4);
                if (kind == T_Q5_K) {
                    const __m128i s0 = _mm_cvtsi32_si128(2 * g), s1 = _mm_cvtsi32_si128(2 * g + 1);
                    lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, s0), bit0), 4));
                    hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srl_epi16(qh, s1), bit0), 4));
                }
                acc = dot32codes(lo, x + 64 * g, d * sc0, d * sc0, acc);
                acc = dot32codes(hi, x + 64 * g + 32, d * sc1, d * sc1, acc);
                m0 -= dmin * (float)mn0 * xsum[8 * i + 2 * g];
                m1 -= dmin * (float)mn1 * xsum[8 * i + 2 * g + 1];
            }
        }
    }
    const __m128 half4 = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    const __m128 quarter = _mm_add_ps(half4, _mm_movehl_ps(half4, half4));
    return _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter))) + (m0 + m1);
}

static float dot_row(int kind, const uint8_t *b, Py_ssize_t blocks, const float *x, const float *xsum) {
    switch (kind) { /* each type's loop compiled for it */
    case T_Q4_0: return dot32_in_lanes(T_Q4_0, b, blocks, x, xsum);
    case T_Q4_1: return dot32_in_lanes(T_Q4_1, b, blocks, x, xsum);
    case T_Q5_0: return dot32_widened(T_Q5_0, b, blocks, x, xsum);
    case T_Q5_1: return dot32_widened(T_Q5_1, b, blocks, x, xsum);
    case T_Q4_K: return dot256(T_Q4_K, b, blocks, x, xsum);
    case T_Q5_K: return dot256(T_Q5_K, b, blocks, x, xsum);
    case T_Q6_K: return dot256(T_Q6_K, b, blocks, x, xsum);
    default: return dot32_widened(T_Q8_0, b, blocks, x, xsum);
    }
}
#define DOT_ROW dot_row

#define ROWS rows_avx2
#include "_products_rows.h"
#undef ROWS
#undef WIDEN
#undef DOT_ROW
#ifdef __clang__
#pragma clang attribute pop
#endif
#pragma GCC pop_options
#endif
#define ROWS rows_any
#include "_products_rows.h"
#undef ROWS

typedef void (*RowsFn)(const Job *, Py_ssize_t, Py_ssize_t);
static RowsFn rows_fn = rows_any;

#ifdef POOL
/* A pool of workers kept between calls (a call is one matrix of a layer: creating threads each time would cost more
 * than a small product). The rows are cut into chunks that each thread claims in turn, the caller too, so that a thread
 * the OS leaves waiting (a busy core) holds up no more than the chunk it took. A claim names the call's generation, so
 * a worker that wakes after its call ended claims nothing of the next. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t work, finished;
    int started;
    unsigned generation;
    uint64_t state; /* generation << 32 | the next chunk to claim */
    Py_ssize_t done, chunks;
    const Call *call;
    pthread_mutex_t busy; /* held by the one caller using the pool */
    int strikes, alone;   /* calls in a row that waited on a worker; calls left to run alone */
    int sleeping;         /* workers asleep on `work` (the rest are polling for the next call) */
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, NULL, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};

#define SPIN 20000 /* polls of about 0.1 microsecond each (x86's pause) before a worker, or the caller, sleeps */
#if defined(__x86_64__) || defined(__i386__)
#define PAUSE() __builtin_ia32_pause()
#else
#define PAUSE() __asm__ __volatile__("" ::: "memory")
#endif

#define STRIKES 3
#define ALONE 256

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static Py_ssize_t claim(unsigned generation, Py_ssize_t chunks) { /* -> a chunk of this call, or -1 */
    uint64_t s = __atomic_load_n(&pool.state, __ATOMIC_ACQUIRE);
    for (;;) {
        if ((unsigned)(s >> 32) != generation || (Py_ssize_t)(s & 0xffffffffu) >= chunks) return -1;
        if (__atomic_compare_exchange_n(&pool.state, &s, s + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return (Py_ssize_t)(s & 0xffffffffu);
    }
}

static void chunk_rows(const Call *call, Py_ssize_t c) { /* chunk c: some rows of one part */
    Py_ssize_t j = 0;
    while (j + 1 < call->count && call->first[j + 1] <= c) j++;
    const Job *job = &call->jobs[j];
    const Py_ssize_t start = (c - call->first[j]) * call->chunk, stop = start + call->chunk < job->rows ? start + call->chunk : job->rows;
    rows_fn(job, start, stop);
}

static void work(const Call *call, unsigned generation, Py_ssize_t chunks) { /* chunks: read with the generation, under the lock */
    Py_ssize_t c;
    while ((c = claim(generation, chunks)) >= 0) {
        chunk_rows(call, c);
        if (__atomic_add_fetch(&pool.done, 1, __ATOMIC_ACQ_REL) == chunks) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.finished);
            pthread_mutex_unlock(&pool.lock);
        }
    }
}

static void *worker(void *arg) {
    unsigned seen = 0;
    (void)arg;
    for (;;) {
        /* a generation's calls come every few tens of microseconds (one matrix of a layer after another): wait for the
         * next by polling a while, which takes far less than a wake through the OS, then sleep */
        unsigned g = __atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE);
        for (int spin = 0; g == seen && spin < SPIN; spin++) {
            PAUSE();
            g = __atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE);
        }
        if (g == seen) {
            pthread_mutex_lock(&pool.lock);
            pool.sleeping++;
            while (__atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE) == seen) pthread_cond_wait(&pool.work, &pool.lock);
            pool.sleeping--;
            pthread_mutex_unlock(&pool.lock);
            g = __atomic_load_n(&pool.generation, __ATOMIC_ACQUIRE);
        }
        seen = g; /* the call and its chunks were written before the generation: a claim checks the generation anyway */
        work(__atomic_load_n(&pool.call, __ATOMIC_ACQUIRE), seen, __atomic_load_n(&pool.chunks, __ATOMIC_ACQUIRE));
    }
    return NULL;
}

static void forget_pool(void) { /* in a forked child the workers do not exist: start afresh */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    pool.lock = fresh;
    pool.busy = fresh;
    pool.strikes = pool.alone = pool.sleeping = 0;
    pool.work = cond;
    pool.finished = cond;
    pool.started = 0;
}

static void run(Call *call, int threads) {
    Py_ssize_t rows = 0;
    for (Py_ssize_t j = 0; j < call->count; j++) rows += call->jobs[j].rows;
    if (threads > MAX_WORKERS + 1) threads = MAX_WORKERS + 1;
    /* alone: tiny, one thread asked, another caller has the pool, or the pool's threads kept the caller waiting lately */
    if (threads <= 1 || rows < 64 || __atomic_load_n(&pool.alone, __ATOMIC_RELAXED) > 0 || pthread_mutex_trylock(&pool.busy)) {
        if (threads > 1 && rows >= 64 && __atomic_load_n(&pool.alone, __ATOMIC_RELAXED) > 0) __atomic_sub_fetch(&pool.alone, 1, __ATOMIC_RELAXED);
        for (Py_ssize_t j = 0; j < call->count; j++) rows_fn(&call->jobs[j], 0, call->jobs[j].rows);
        return;
    }
    const Py_ssize_t wanted = (Py_ssize_t)threads * 8;
    call->chunk = (rows + wanted - 1) / wanted < 8 ? 8 : (rows + wanted - 1) / wanted;
    call->chunks = 0;
    for (Py_ssize_t j = 0; j < call->count; j++) {
        call->first[j] = call->chunks;
        call->chunks += (call->jobs[j].rows + call->chunk - 1) / call->chunk;
    }
    pthread_mutex_lock(&pool.lock);
    while (pool.started < threads - 1) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, worker, NULL)) break;
        pthread_detach(thread);
        pool.started++;
    }
    const unsigned generation = pool.generation + 1 ? pool.generation + 1 : 1; /* never 0: a new worker has seen 0 */
    __atomic_store_n(&pool.call, call, __ATOMIC_RELEASE);
    __atomic_store_n(&pool.chunks, call->chunks, __ATOMIC_RELEASE);
    __atomic_store_n(&pool.done, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&pool.state, (uint64_t)generation << 32, __ATOMIC_RELEASE);
    __atomic_store_n(&pool.generation, generation, __ATOMIC_RELEASE); /* last: what a polling worker looks for */
    if (pool.sleeping) pthread_cond_broadcast(&pool.work);
    pthread_mutex_unlock(&pool.lock);
    const double start = seconds();
    work(call, generation, call->chunks);
    const double mine = seconds();
    for (int spin = 0; __atomic_load_n(&pool.done, __ATOMIC_ACQUIRE) < call->chunks && spin < SPIN; spin++) PAUSE();
    pthread_mutex_lock(&pool.lock);
    while (__atomic_load_n(&pool.done, __ATOMIC_ACQUIRE) < call->chunks) pthread_cond_wait(&pool.finished, &pool.lock);
    __atomic_store_n(&pool.state, ((uint64_t)generation << 32) | 0xffffffffu, __ATOMIC_RELEASE); /* closed: nothing left to claim */
    pthread_mutex_unlock(&pool.lock);
    /* a worker that the OS left waiting with a chunk in hand (cores busy with other work) made the caller wait longer
     * than its own share took: after STRIKES such calls, the next ALONE calls run on the caller's thread alone */
    const double waited = seconds() - mine;
    pool.strikes = waited > (mine - start) ? pool.strikes + 1 : 0;
    if (pool.strikes >= STRIKES) {
        pool.strikes = 0;
        __atomic_store_n(&pool.alone, ALONE, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&pool.busy);
}
#else
static void run(Call *call, int threads) {
    (void)threads;
    for (Py_ssize_t j = 0; j < call->count; j++) rows_fn(&call->jobs[j], 0, call->jobs[j].rows);
}
#endif

#define MAX_PARTS 8

static int part(PyObject *item, const Py_buffer *x, const Py_buffer *out, Job *job, Py_buffer *blocks, Py_buffer *where) {
    const char *name;
    PyObject *order;
    Py_ssize_t rows, column;
    if (!PyArg_ParseTuple(item, "sy*nnO", &name, blocks, &rows, &column, &order)) return -1;
    job->type = NULL;
    for (size_t i = 0; i < N_TYPES; i++)
        if (!strcmp(name, TYPES[i].name)) job->type = &TYPES[i];
    if (job->type == NULL) {
        PyErr_Format(PyExc_ValueError, "no compiled product for %s", name);
        return -1;
    }
    const BlockType *type = job->type;
    job->blocks = blocks->buf;
    job->rows = rows;
    job->row_bytes = rows > 0 ? blocks->len / rows : 0;
    job->k = job->row_bytes / type->block_bytes * type->values;
    if (rows <= 0 || blocks->len != rows * job->row_bytes || job->row_bytes % type->block_bytes || job->k == 0 || x->len % (job->k * 4)) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes of blocks in %zd rows do not match %zd bytes of input", name, blocks->len, rows, x->len);
        return -1;
    }
    job->n = x->len / (job->k * 4);
    job->width = job->n ? out->len / 4 / job->n : 0;
    job->column = column;
    if (job->n == 0 || out->len != job->n * job->width * 4 || column < 0 || column + rows > job->width) {
        PyErr_Format(PyExc_ValueError, "%s: an output of %zd bytes has no room for %zd rows of %zd columns at column %zd", name, out->len, job->n, rows, column);
        return -1;
    }
    job->where = NULL;
    if (order != Py_None) { /* the output column of each row: a permutation of 0..rows-1, checked */
        if (PyObject_GetBuffer(order, where, PyBUF_C_CONTIGUOUS) < 0) return -1;
        if (where->len != rows * 4 || ((uintptr_t)where->buf % 4)) {
            PyErr_Format(PyExc_ValueError, "%s: an order of %zd bytes for %zd rows", name, where->len, rows);
            return -1;
        }
        const int32_t *w = where->buf;
        for (Py_ssize_t r = 0; r < rows; r++)
            if (w[r] < 0 || w[r] >= rows) {
                PyErr_Format(PyExc_ValueError, "%s: row %zd goes to column %d, outside 0..%zd", name, r, w[r], rows - 1);
                return -1;
            }
        job->where = w;
    }
    job->x = x->buf;
    job->out = out->buf;
    return 0;
}

static PyObject *product(PyObject *self, PyObject *args) {
    PyObject *parts;
    Py_buffer x, out, blocks[MAX_PARTS], where[MAX_PARTS];
    int threads;
    if (!PyArg_ParseTuple(args, "Oy*w*i", &parts, &x, &out, &threads)) return NULL;
    Job jobs[MAX_PARTS];
    float *xsum[MAX_PARTS] = {NULL};
    Py_ssize_t count = 0, made = 0;
    PyObject *result = NULL, *seq = PySequence_Fast(parts, "parts must be a sequence");
    if (seq == NULL) goto end;
    count = PySequence_Fast_GET_SIZE(seq);
    if (count < 1 || count > MAX_PARTS || ((uintptr_t)x.buf % 4) || ((uintptr_t)out.buf % 4)) {
        PyErr_Format(PyExc_ValueError, "1 to %d parts of aligned float32 buffers", MAX_PARTS);
        goto end;
    }
    for (; made < count; made++) {
        where[made].obj = NULL;
        blocks[made].obj = NULL;
        if (part(PySequence_Fast_GET_ITEM(seq, made), &x, &out, &jobs[made], &blocks[made], &where[made]) < 0) {
            made++;
            goto end;
        }
        if (jobs[made].k != jobs[0].k) {
            PyErr_SetString(PyExc_ValueError, "parts of one product take rows of the same length");
            made++;
            goto end;
        }
        xsum[made] = PyMem_RawMalloc(sizeof(float) * jobs[made].n * (jobs[made].k / jobs[made].type->sub));
        if (xsum[made] == NULL) {
            PyErr_NoMemory();
            made++;
            goto end;
        }
        jobs[made].xsum = xsum[made];
    }
    Call call = {jobs, count};
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t j = 0; j < count; j++) { /* the sums of x over each sub-block, for the minimums */
        const Job *job = &jobs[j];
        const Py_ssize_t sub = job->type->sub, subs = job->k / sub;
        for (Py_ssize_t t = 0; t < job->n; t++)
            for (Py_ssize_t s = 0; s < subs; s++) {
                float total = 0.0f;
                for (Py_ssize_t i = 0; i < sub; i++) total += job->x[t * job->k + s * sub + i];
                xsum[j][t * subs + s] = total;
            }
    }
    run(&call, threads);
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
end:
    for (Py_ssize_t j = 0; j < made; j++) {
        if (blocks[j].obj != NULL) PyBuffer_Release(&blocks[j]);
        if (where[j].obj != NULL) PyBuffer_Release(&where[j]);
        PyMem_RawFree(xsum[j]);
    }
    Py_XDECREF(seq);
    PyBuffer_Release(&x);
    PyBuffer_Release(&out);
    return result;
}

static PyObject *kernel(PyObject *self, PyObject *args) { return PyUnicode_FromString(rows_fn == rows_any ? "any CPU" : "AVX2, FMA and F16C"); }

static PyMethodDef methods[] = {
    {"product", product, METH_VARARGS, "product(parts, x, out, threads): x W^T for each part (type, blocks, rows, column, order or None) into out's columns."},
    {"kernel", kernel, METH_NOARGS, "kernel() -> which build of the loops runs on this CPU."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_products", "x W^T from a GGUF tensor's blocks, in C.", -1, methods};

PyMODINIT_FUNC PyInit__products(void) {
    for (int byte = 0; byte < 256; byte++)
        for (int i = 0; i < 8; i++) SPREAD[byte] |= (uint64_t)((byte >> i) & 1) << (8 * i);
    for (uint32_t h = 0; h < (1u << 16); h++) {
        const uint8_t bytes[2] = {(uint8_t)(h & 0xff), (uint8_t)(h >> 8)};
        HALF[h] = f16_to_f32(bytes);
    }
#ifdef X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) rows_fn = rows_avx2;
#endif
#ifdef POOL
    pthread_atfork(NULL, NULL, forget_pool);
#endif
    return PyModule_Create(&module);
}
