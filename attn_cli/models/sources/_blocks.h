/* What _quants.c and _products.c both read from a GGUF block: an IEEE half, a K-quant's packed scale and minimum. */
#ifndef ATTN_BLOCKS_H
#define ATTN_BLOCKS_H
#include <stdint.h>
#include <string.h>

static float f16_to_f32(const uint8_t *p) { /* NumPy's npy_halfbits_to_floatbits, bit for bit */
    uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, bits;
    uint16_t exp = h & 0x7c00u, sig = h & 0x03ffu;
    if (exp == 0) {
        if (sig == 0) {
            bits = sign;
        } else { /* subnormal: normalized */
            uint32_t shifts = 0;
            sig <<= 1;
            while ((sig & 0x0400u) == 0) {
                sig <<= 1;
                shifts++;
            }
            bits = sign | ((127u - 15u - shifts) << 23) | ((uint32_t)(sig & 0x03ffu) << 13);
        }
    } else if (exp == 0x7c00u) { /* inf or NaN, its payload kept */
        bits = sign | 0x7f800000u | ((uint32_t)sig << 13);
    } else {
        bits = sign | (((uint32_t)(h & 0x7fffu) + 0x1c000u) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static void scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) { /* ggml's get_scale_min_k4 */
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

#endif
