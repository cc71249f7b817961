/* The rows start..stop of one product (_products.c includes this twice: ROWS is rows_avx2, built for AVX2 and FMA,
 * then rows_any). Each row of W is decoded once, into codes that stay in the L1 cache, then met by every row of x:
 *     out[t, r] = sum_s scale_s (sum_{j in s} q_j x_tj) + sum_s min_s xsum_ts
 * eight floats at a step: a sub-block's partial sums, then times its scale into one of four sums (no step waits on
 * the one before it). */

typedef float v8f __attribute__((vector_size(32), aligned(4)));
typedef int8_t v8b __attribute__((vector_size(8), aligned(1)));
typedef int32_t v8i __attribute__((vector_size(32)));
#define X(p) (*(const v8f *)(p)) /* 8 floats from p */
#define HSUM(v) ((((v)[0] + (v)[4]) + ((v)[1] + (v)[5])) + (((v)[2] + (v)[6]) + ((v)[3] + (v)[7])))
#ifdef WIDEN
#define FLOATS(p) WIDEN(p)
#else /* 8 codes as floats: widened, then converted */
#define FLOATS(p) __builtin_convertvector(__builtin_convertvector(*(const v8b *)(p), v8i), v8f)
#endif

static void ROWS(const Job *job, Py_ssize_t start, Py_ssize_t stop) {
    const BlockType *type = job->type;
    const Py_ssize_t k = job->k, blocks_per_row = k / type->values, subs = k / type->sub;
    const int sub = type->sub, per_block = type->values / type->sub, block_bytes = type->block_bytes, values = type->values, affine = type->affine;
    const Py_ssize_t n = job->n, width = job->width, column = job->column, row_bytes = job->row_bytes; /* locals: a store of codes may alias a field */
    const uint8_t *rows = job->blocks;
    const float *xs_all = job->x, *xsum_all = job->xsum;
    const int32_t *where = job->where;
    float *out = job->out;
    const int floats = type->kind == T_F16 || type->kind == T_BF16;
    int8_t *q = PyMem_RawMalloc(k + 64);
    float *scale = PyMem_RawMalloc(sizeof(float) * (subs + 1)), *min = PyMem_RawMalloc(sizeof(float) * (subs + 1));
    float *f = PyMem_RawMalloc(sizeof(float) * k + 64); /* the row's weights as floats (F16, BF16, or for several rows of x) */
    if (q == NULL || scale == NULL || min == NULL || f == NULL) { /* no memory: NaN, which the pass reports */
        for (Py_ssize_t r = start; r < stop; r++)
            for (Py_ssize_t t = 0; t < job->n; t++) job->out[t * job->width + job->column + (job->where ? job->where[r] : r)] = __builtin_nanf("");
        goto end;
    }
#ifdef DOT_ROW
    if (n == 1 && !floats) { /* a generated token: each row's blocks decoded in registers */
        for (Py_ssize_t r = start; r < stop; r++) out[column + (where ? where[r] : r)] = DOT_ROW(type->kind, rows + r * row_bytes, blocks_per_row, xs_all, xsum_all);
        goto end;
    }
#endif
    for (Py_ssize_t r = start; r < stop; r++) {
        const uint8_t *b = rows + r * row_bytes;
        switch (type->kind) { /* each type's loop on its own, so that each decoder is compiled for its type */
#define DECODE_ROW(kind) \
    case kind: \
        for (Py_ssize_t i = 0; i < blocks_per_row; i++, b += block_bytes) \
            decode(kind, b, q + i * values, scale + i * per_block, min + i * per_block, f + i * values); \
        break;
            DECODE_ROW(T_Q4_0) DECODE_ROW(T_Q4_1) DECODE_ROW(T_Q5_0) DECODE_ROW(T_Q5_1) DECODE_ROW(T_Q8_0)
            DECODE_ROW(T_Q4_K) DECODE_ROW(T_Q5_K) DECODE_ROW(T_Q6_K) DECODE_ROW(T_F16) DECODE_ROW(T_BF16)
#undef DECODE_ROW
        }
        if (n > 1 || floats) { /* several rows of x: the row's weights once as floats, then four rows of x a step */
            if (!floats)
                for (Py_ssize_t s = 0; s < subs; s++)
                    for (int j = 0; j < sub; j += 8) *(v8f *)(f + sub * s + j) = FLOATS(q + sub * s + j) * scale[s] + min[s];
            Py_ssize_t t = 0;
            for (; t + 4 <= n; t += 4) {
                const float *x0 = xs_all + t * k, *x1 = x0 + k, *x2 = x1 + k, *x3 = x2 + k;
                v8f a0 = {0, 0, 0, 0, 0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
                for (Py_ssize_t j = 0; j < k; j += 8) {
                    const v8f w = X(f + j);
                    a0 += w * X(x0 + j);
                    a1 += w * X(x1 + j);
                    a2 += w * X(x2 + j);
                    a3 += w * X(x3 + j);
                }
                float *o = out + t * width + column + (where ? where[r] : r);
                o[0] = HSUM(a0);
                o[width] = HSUM(a1);
                o[2 * width] = HSUM(a2);
                o[3 * width] = HSUM(a3);
            }
            for (; t < n; t++) {
                const float *x = xs_all + t * k;
                v8f a0 = {0, 0, 0, 0, 0, 0, 0, 0}, a1 = a0;
                for (Py_ssize_t j = 0; j < k; j += 16) {
                    a0 += X(f + j) * X(x + j);
                    a1 += X(f + j + 8) * X(x + j + 8);
                }
                out[t * width + column + (where ? where[r] : r)] = HSUM(a0 + a1);
            }
            continue;
        }
        for (Py_ssize_t t = 0; t < n; t++) { /* one row of x: each sub-block's partial sums, then times its scale */
            const float *x = xs_all + t * k;
            v8f a0 = {0, 0, 0, 0, 0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0; /* four sums, in registers: none waits on another */
            {
                const Py_ssize_t groups = sub / 8; /* 4 or 2 groups of 8 */
                Py_ssize_t s = 0;
                for (; s + 2 <= subs; s += 2) {
                    const int8_t *qs = q + sub * s;
                    const float *xs = x + sub * s;
                    v8f p0 = FLOATS(qs) * X(xs), p1 = FLOATS(qs + 8) * X(xs + 8);
                    v8f r0 = FLOATS(qs + sub) * X(xs + sub), r1 = FLOATS(qs + sub + 8) * X(xs + sub + 8);
                    if (groups == 4) {
                        p0 += FLOATS(qs + 16) * X(xs + 16);
                        p1 += FLOATS(qs + 24) * X(xs + 24);
                        r0 += FLOATS(qs + sub + 16) * X(xs + sub + 16);
                        r1 += FLOATS(qs + sub + 24) * X(xs + sub + 24);
                    }
                    a0 += scale[s] * p0;
                    a1 += scale[s] * p1;
                    a2 += scale[s + 1] * r0;
                    a3 += scale[s + 1] * r1;
                }
                for (; s < subs; s++)
                    for (Py_ssize_t g = 0; g < groups; g++) a0 += scale[s] * (FLOATS(q + sub * s + 8 * g) * X(x + sub * s + 8 * g));
            }
            float sum = HSUM((a0 + a1) + (a2 + a3));
            if (affine) {
                const float *xsum = xsum_all + t * subs;
                float m[4] = {0, 0, 0, 0}; /* four sums again: one would wait on each step */
                Py_ssize_t s = 0;
                for (; s + 4 <= subs; s += 4)
                    for (int i = 0; i < 4; i++) m[i] += min[s + i] * xsum[s + i];
                for (; s < subs; s++) m[0] += min[s] * xsum[s];
                sum += (m[0] + m[1]) + (m[2] + m[3]);
            }
            out[t * width + column + (where ? where[r] : r)] = sum;
        }
    }
#undef FLOATS
#undef X
#undef HSUM
end:
    PyMem_RawFree(q);
    PyMem_RawFree(scale);
    PyMem_RawFree(min);
    PyMem_RawFree(f);
}
