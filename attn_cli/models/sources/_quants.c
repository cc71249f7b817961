/* llama.cpp's K-quants and Q4_0, Q4_1, Q5_0, Q8_0 dequantized in C: the optional fast path of quants.py.
 *
 * Each loop is ggml's own (ggml-quants.c, dequantize_row_*), and each value is the same float32 arithmetic
 * as gguf.quants' NumPy code, in the same order: built with -ffp-contract=off, so that no multiply and
 * subtract are fused into one rounding, the values are the same bits as quants.py's NumPy path (tested).
 * The GIL is released while a call runs. Without a compiler, the package installs without this module
 * and quants.py decodes in NumPy.
 *
 *     dequantize(type, blocks, out) -> None
 *         type: "Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q5_K" or "Q6_K"; blocks: a C-contiguous buffer of whole blocks;
 *         out: a writable C-contiguous float32 buffer of exactly the blocks' values.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_blocks.h"

#define QK_K 256

static void q4_0(const uint8_t *b, float *y, Py_ssize_t n) { /* [d f16, 16 B of 4-bit q]: x = d (q - 8) */
    for (Py_ssize_t i = 0; i < n; i++, b += 18, y += 32) {
        const float d = f16_to_f32(b);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)((int8_t)(b[2 + j] & 0x0f) - 8);
            y[j + 16] = d * (float)((int8_t)(b[2 + j] >> 4) - 8);
        }
    }
}

static void q4_1(const uint8_t *b, float *y, Py_ssize_t n) { /* [d f16, m f16, 16 B of 4-bit q]: x = d q + m */
    for (Py_ssize_t i = 0; i < n; i++, b += 20, y += 32) {
        const float d = f16_to_f32(b), m = f16_to_f32(b + 2);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)(b[4 + j] & 0x0f) + m;
            y[j + 16] = d * (float)(b[4 + j] >> 4) + m;
        }
    }
}

static void q5_0(const uint8_t *b, float *y, Py_ssize_t n) { /* [d f16, u32 of fifth bits, 16 B of 4-bit q]: x = d (q - 16) */
    for (Py_ssize_t i = 0; i < n; i++, b += 22, y += 32) {
        const float d = f16_to_f32(b);
        const uint32_t qh = (uint32_t)b[2] | ((uint32_t)b[3] << 8) | ((uint32_t)b[4] << 16) | ((uint32_t)b[5] << 24);
        for (int j = 0; j < 16; j++) {
            const int low = (b[6 + j] & 0x0f) | (((qh >> j) & 1) << 4), high = (b[6 + j] >> 4) | (((qh >> (j + 16)) & 1) << 4);
            y[j] = d * (float)(int8_t)(low - 16);
            y[j + 16] = d * (float)(int8_t)(high - 16);
        }
    }
}

static void q8_0(const uint8_t *b, float *y, Py_ssize_t n) { /* [d f16, 32 int8 q]: x = d q */
    for (Py_ssize_t i = 0; i < n; i++, b += 34, y += 32) {
        const float d = f16_to_f32(b);
        for (int j = 0; j < 32; j++) y[j] = d * (float)(int8_t)b[2 + j];
    }
}

/* Q4_K [d, dmin f16, 12 B scales and mins, 128 B q]; Q5_K: the same head, 32 B of fifth bits, then 128 B q.
 * x = (d sc) q - (dmin m), 8 sub-blocks of 32. */
static void k_affine(const uint8_t *b, float *y, Py_ssize_t n, int fifth) {
    const Py_ssize_t size = fifth ? 176 : 144;
    for (Py_ssize_t i = 0; i < n; i++, b += size) {
        const float d = f16_to_f32(b), dmin = f16_to_f32(b + 2);
        const uint8_t *scales = b + 4, *qh = b + 16, *ql = b + (fifth ? 48 : 16);
        uint8_t u1 = 1, u2 = 2;
        for (int s = 0; s < 8; s += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            uint8_t sc, m;
            scale_min_k4(s, scales, &sc, &m);
            const float d1 = d * (float)sc, m1 = dmin * (float)m;
            scale_min_k4(s + 1, scales, &sc, &m);
            const float d2 = d * (float)sc, m2 = dmin * (float)m;
            for (int l = 0; l < 32; l++) {
                const int high = fifth && (qh[l] & u1) ? 16 : 0;
                *y++ = d1 * (float)((ql[l] & 0x0f) + high) - m1;
            }
            for (int l = 0; l < 32; l++) {
                const int high = fifth && (qh[l] & u2) ? 16 : 0;
                *y++ = d2 * (float)((ql[l] >> 4) + high) - m2;
            }
        }
    }
}

static void q6_k(const uint8_t *b, float *y, Py_ssize_t n) { /* [128 B low 4 bits, 64 B high 2, 16 int8 scales, d f16] */
    for (Py_ssize_t i = 0; i < n; i++, b += 210) {
        const float d = f16_to_f32(b + 208);
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        for (int half = 0; half < 2; half++, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int is = 0; is < 2; is++) { /* 16 values share a scale: a loop the compiler vectorizes */
                const float d1 = d * (float)sc[is], d2 = d * (float)sc[is + 2], d3 = d * (float)sc[is + 4], d4 = d * (float)sc[is + 6];
                for (int l = 16 * is; l < 16 * is + 16; l++) {
                    const int8_t q1 = (int8_t)((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
                    const int8_t q2 = (int8_t)((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
                    const int8_t q3 = (int8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                    const int8_t q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                    y[l] = d1 * (float)q1;
                    y[l + 32] = d2 * (float)q2;
                    y[l + 64] = d3 * (float)q3;
                    y[l + 96] = d4 * (float)q4;
                }
            }
        }
    }
}

static PyObject *dequantize(PyObject *self, PyObject *args) {
    const char *type;
    Py_buffer blocks, out;
    if (!PyArg_ParseTuple(args, "sy*w*", &type, &blocks, &out)) return NULL;
    Py_ssize_t block_bytes, values;
    if (!strcmp(type, "Q4_0")) block_bytes = 18, values = 32;
    else if (!strcmp(type, "Q4_1")) block_bytes = 20, values = 32;
    else if (!strcmp(type, "Q5_0")) block_bytes = 22, values = 32;
    else if (!strcmp(type, "Q8_0")) block_bytes = 34, values = 32;
    else if (!strcmp(type, "Q4_K")) block_bytes = 144, values = QK_K;
    else if (!strcmp(type, "Q5_K")) block_bytes = 176, values = QK_K;
    else if (!strcmp(type, "Q6_K")) block_bytes = 210, values = QK_K;
    else {
        PyBuffer_Release(&blocks);
        PyBuffer_Release(&out);
        return PyErr_Format(PyExc_ValueError, "no compiled decoder for %s", type);
    }
    const Py_ssize_t n = blocks.len / block_bytes;
    if (blocks.len % block_bytes || out.len != n * values * (Py_ssize_t)sizeof(float) || ((uintptr_t)out.buf % sizeof(float))) {
        PyBuffer_Release(&blocks);
        PyBuffer_Release(&out);
        return PyErr_Format(PyExc_ValueError, "%s: %zd bytes of blocks do not fill an aligned output of %zd bytes", type, blocks.len, out.len);
    }
    const uint8_t *b = blocks.buf;
    float *y = out.buf;
    Py_BEGIN_ALLOW_THREADS
    if (block_bytes == 18) q4_0(b, y, n);
    else if (block_bytes == 20) q4_1(b, y, n);
    else if (block_bytes == 22) q5_0(b, y, n);
    else if (block_bytes == 34) q8_0(b, y, n);
    else if (block_bytes == 210) q6_k(b, y, n);
    else k_affine(b, y, n, block_bytes == 176);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&blocks);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"dequantize", dequantize, METH_VARARGS, "dequantize(type, blocks, out): whole blocks of a GGML type into float32 `out`."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_quants", "llama.cpp's block types dequantized in C.", -1, methods};

PyMODINIT_FUNC PyInit__quants(void) { return PyModule_Create(&module); }
