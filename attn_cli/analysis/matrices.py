"""A head's four matrices read from a checkpoint, and the Frobenius norms of their products kept factored.

Shapes, as TransformerLens writes them (a residual vector is a row, x @ W):
    W_Q, W_K, W_V [d, d_head]   W_O [d_head, d]   W_QK = W_Q W_K^T [d, d]   W_OV = W_V W_O [d, d]
Grouped-query attention: query head h reads key/value head h // (n_heads / n_kv_heads).

Folded (TransformerLens's fold_ln): the input norm's weight w scales the rows of W_Q, W_K and W_V (diag(w) W), and a
LayerNorm's centring is folded too (each column of them less its mean over d, as fold_ln's center_weights). The norm's
division by each row's scale is a positive number per token, and is left out, as there. Where a family has more
norms around a head, their weights are folded the same way and their scales left out: Qwen3's and Gemma 3's q/k
norms (W_Q diag(w_q), W_K diag(w_k)) and Gemma's norm after the attention block (W_O diag(w_post)).

Composition (TransformerLens's utils.composition_scores): for an earlier head's W_OV and a later head's matrix M,
    score = ||W_OV M||_F / (||W_OV||_F ||M||_F),   M = W_QK (Q-composition), W_QK^T (K), W_OV (V).
With every matrix a pair A B (A [d, d_head], B [d_head, d]) no [d, d] product is formed: for W_OV = V O and M = A B,
    ||V O A B||_F^2 = tr(A^T O^T (V^T V) O A (B B^T)) = ||R_V O A R_B^T||_F^2,
where V^T V = R_V^T R_V and B B^T = R_B^T R_B (the R of a factorisation, [d_head, d_head]). So each earlier head
gives left = R_V O [d_head, d], each later head right = A R_B^T [d, d_head], and a pair's score is
||left right||_F / (||left||_F ||right||_F): a [d_head, d] x [d, d_head] product.
"""

import numpy as np

MODES = ("q", "k", "v")


def head_slices(spec, h: int) -> tuple[slice, slice, slice]:
    """Columns of attn.qkv.w that are query head h's W_Q, and its group's W_K and W_V."""
    dh, kv = spec.d_head, h // (spec.n_heads // spec.n_kv_heads)
    q0, k0, v0 = h * dh, (spec.n_heads + kv) * dh, (spec.n_heads + spec.n_kv_heads + kv) * dh
    return slice(q0, q0 + dh), slice(k0, k0 + dh), slice(v0, v0 + dh)


def raw_heads(model, l: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # -> Q, K, V [H, d, dh], O [H, dh, d] float32
    """Layer l's heads' matrices as stored (GQA: each query head with its group's K and V), nothing folded."""
    spec, w = model.spec, model.weights
    qkv, o = w.tensor(f"layers.{l}.attn.qkv.w"), w.tensor(f"layers.{l}.attn.o.w")  # [d, (h + 2 h_kv) dh], [h dh, d]
    parts = [[qkv[:, s] for s in head_slices(spec, h)] for h in range(spec.n_heads)]
    q, k, v = (np.stack([p[i] for p in parts]) for i in range(3))
    return q, k, v, o.reshape(spec.n_heads, spec.d_head, spec.d_model)


def layer_tensor(model, l: int, key: str) -> np.ndarray | None:
    w = model.weights
    name = f"layers.{l}.{key}"
    return w.tensor(name) if w.has(name) else None


def fold_reading(m: np.ndarray, norm_w: np.ndarray | None, layer_norm: bool) -> np.ndarray:  # [..., d, dh] -> [..., d, dh]
    """diag(w) W, then (LayerNorm) each column less its mean over d: fold_ln on a matrix that reads the stream."""
    out = m if norm_w is None else m * norm_w[:, None]
    return out - out.mean(axis=-2, keepdims=True) if layer_norm else out


def folded_heads(model, l: int, dtype=np.float64):  # -> Q, K, V [H, d, dh], O [H, dh, d]
    """Layer l's heads with the norms around them folded in (the module's docstring)."""
    spec = model.spec
    q, k, v, o = (a.astype(dtype) for a in raw_heads(model, l))
    norm_w = layer_tensor(model, l, "attn.norm.w") if spec.pre_norm else None
    layer_norm = spec.pre_norm and spec.norm == "layer"
    q, k, v = (fold_reading(m, None if norm_w is None else norm_w.astype(dtype), layer_norm) for m in (q, k, v))
    if spec.qk_norm:
        q = q * layer_tensor(model, l, "attn.q_norm.w").astype(dtype)
        k = k * layer_tensor(model, l, "attn.k_norm.w").astype(dtype)
    post = layer_tensor(model, l, "attn.post_norm.w")
    if post is not None:
        o = o * post.astype(dtype)
    return q, k, v, o


def gram_root(a: np.ndarray) -> np.ndarray:  # [..., m, k] -> [..., k, k]
    """R with a^T a = R^T R: the small factor that keeps a's Frobenius products. The Cholesky factor of the [k, k] Gram
    matrix; where that is not positive definite (a rank-deficient `a`), from its eigenvalues: R = diag(sqrt(lambda)) U^T."""
    a = a.astype(np.float64, copy=False)
    gram = np.swapaxes(a, -1, -2) @ a  # [..., k, m] x [..., m, k] -> [..., k, k]
    try:
        return np.swapaxes(np.linalg.cholesky(gram), -1, -2)
    except np.linalg.LinAlgError:
        values, vectors = np.linalg.eigh(gram)
        return np.sqrt(np.clip(values, 0, None))[..., :, None] * np.swapaxes(vectors, -1, -2)


def lefts(v: np.ndarray, o: np.ndarray) -> np.ndarray:  # V [N, d, dh], O [N, dh, d] -> [N, dh, d]
    """R_V O for each head: ||left right||_F = ||W_OV A B||_F (the module's docstring)."""
    return gram_root(v) @ o


def rights(q: np.ndarray, k: np.ndarray, v: np.ndarray, o: np.ndarray) -> dict:  # [N, d, dh] x3, [N, dh, d] -> mode -> [N, d, dh]
    """A R_B^T for each head and mode: W_QK = Q K^T, W_QK^T = K Q^T, W_OV = V O."""
    rt = lambda a: np.ascontiguousarray(np.swapaxes(gram_root(a), -1, -2))  # noqa: E731  R^T, [N, dh, dh], in row order for matmul
    return {"q": q @ rt(k), "k": k @ rt(q), "v": v @ rt(np.swapaxes(o, -1, -2))}


def frobenius(a: np.ndarray) -> np.ndarray:  # [N, m, k] -> [N]
    return np.sqrt(np.einsum("nij,nij->n", a, a, dtype=np.float64))


def pair_scores(left: np.ndarray, right: np.ndarray, rows: int = 4096) -> np.ndarray:  # [A, dh, d], [B, d, dh] -> [A, B]
    """||left_a right_b||_F / (||left_a|| ||right_b||) for every pair, as one [A dh, d] x [d, B dh] product in blocks of rows."""
    a, dh, d = left.shape
    b, _, dh_r = right.shape
    flat_right = np.ascontiguousarray(np.moveaxis(right, 0, 1).reshape(d, b * dh_r))  # [d, B dh]
    flat_left = left.reshape(a * dh, d)
    squares = np.empty((a, b))
    step = max(1, rows // dh)
    for start in range(0, a, step):
        block = flat_left[start * dh : (start + step) * dh] @ flat_right  # [s dh, d] x [d, B dh] -> [s dh, B dh]
        block *= block
        squares[start : start + step] = block.reshape(-1, dh, b, dh_r).sum(axis=(1, 3), dtype=np.float64)
    norms = np.outer(frobenius(left), frobenius(right))
    return np.divide(np.sqrt(squares), norms, out=np.zeros((a, b)), where=norms > 0)


def random_heads(rng, shape: tuple, count: int, dtype=np.float64):  # -> Q, K, V [count, d, dh], O [count, dh, d]
    """Heads of iid standard Gaussian entries, of a model's shapes (d, d_head)."""
    d, dh = shape
    return (rng.standard_normal((count, d, dh)).astype(dtype), rng.standard_normal((count, d, dh)).astype(dtype),
            rng.standard_normal((count, d, dh)).astype(dtype), rng.standard_normal((count, dh, d)).astype(dtype))


def random_composition(d: int, dh: int, draws: int, seed: int) -> dict:  # -> mode -> [draws]
    """Each mode's score for `draws` pairs of random heads (an earlier one's W_OV, a later one's matrix), a pair at a time:
    draw i is random_heads(rng, (d, dh), 1) twice, from numpy's default_rng(seed) continued."""
    rng = np.random.default_rng(seed)
    out = {m: np.empty(draws) for m in MODES}
    for i in range(draws):
        first, second = random_heads(rng, (d, dh), 1), random_heads(rng, (d, dh), 1)
        left = lefts(first[2], first[3])
        for mode, right in rights(*second).items():
            out[mode][i] = pair_scores(left, right)[0, 0]
    return out
