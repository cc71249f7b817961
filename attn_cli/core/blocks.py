"""The pieces a transformer block is made of, in plain NumPy: positions, norms, activations, MLPs.

Float32 in, float32 out where a model runs (F32 constants keep NumPy from promoting), float64
for the lesson's sinusoids (the GloVe heads run in float64). Shapes: n tokens, d = d_model,
ff = the MLP's width, h heads of d_head.
"""

import math

from functools import lru_cache

import numpy as np

F32 = np.float32

POSITION_SCALE = 0.5  # sinusoids have norm sqrt(d/2) (5.0 at d=50), GloVe words a median 4.7: position is a clear signal, not the main one


def positional_encoding(n: int, d: int, scale: float = POSITION_SCALE) -> np.ndarray:  # -> [n, d]
    """Sinusoidal positions (Vaswani et al. 2017): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...)."""
    pos = np.arange(n)[:, None]  # [n, 1]
    rate = 1.0 / 10000 ** (np.arange(0, d, 2) / d)  # [ceil(d/2)]
    angles = pos * rate  # [n, ceil(d/2)]
    pe = np.zeros((n, d))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d // 2])
    return scale * pe


@lru_cache(maxsize=8)
def _positions(n_max: int, d: int) -> np.ndarray:  # [n_max, d], read-only; row p depends only on p and d
    pe = positional_encoding(n_max, d)
    pe.setflags(write=False)
    return pe


def input_embeddings(words: np.ndarray, position: bool = True) -> np.ndarray:  # [n, d] -> [n, d]
    """E = word vectors + positional encoding: what every head sees (the sinusoids made once per power-of-two length)."""
    words = np.asarray(words, dtype=np.float64)
    if not position:
        return words
    n, d = words.shape
    return words + _positions(max(64, 1 << (n - 1).bit_length()), d)[:n]


def norm_scale(x: np.ndarray, kind: str, eps: float) -> np.ndarray:  # [..., d] -> [..., 1]
    """What a norm divides each row by: sqrt(var(x) + eps) for LayerNorm, sqrt(mean(x^2) + eps) for RMSNorm. It is a
    point of the pass (models.points: "attn.norm.scale", ...), so an analysis can freeze it and make the norm linear."""
    centred = x - row_mean(x) if kind == "layer" else x
    square = row_mean(centred * centred)
    square[np.isinf(square)] = np.nan  # squares beyond float32: NaN (the forward pass then refuses it), not a row normalised to 0
    square += F32(eps)
    return np.sqrt(square, out=square)


def normalize(x: np.ndarray, g: np.ndarray, b: np.ndarray | None, kind: str, scale: np.ndarray) -> np.ndarray:  # [..., d], [..., 1] -> [..., d]
    """(x - mean) / scale * g + b (LayerNorm: BERT, GPT-2), or x / scale * g (RMSNorm: Llama and the rest), with the
    scale given: norm_scale(x) in a pass, a frozen one when an analysis splits a stream into parts."""
    out = np.divide(x - row_mean(x) if kind == "layer" else x, scale)
    out *= g
    return out if b is None else out + b


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray | None, eps: float) -> np.ndarray:  # [n, d] -> [n, d]
    return normalize(x, g, b, "layer", norm_scale(x, "layer", eps))


def rms_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray | None, eps: float) -> np.ndarray:  # [n, d] -> [n, d]
    return normalize(x, g, b, "rms", norm_scale(x, "rms", eps))


def row_mean(x: np.ndarray) -> np.ndarray:  # [..., d] -> [..., 1]
    """np.mean over the last axis, the same sum and division (so the same bits) without its wrapper's cost."""
    total = np.add.reduce(x, axis=-1, keepdims=True)
    total /= x.shape[-1]
    return total


def erf(x: np.ndarray) -> np.ndarray:
    """erf to within 1.5e-7 (Abramowitz & Stegun 7.1.26): NumPy has none, and float32 needs no better."""
    a = np.abs(x)
    t = F32(1.0) / (F32(1.0) + F32(0.3275911) * a)
    poly = t * (F32(0.254829592) + t * (F32(-0.284496736) + t * (F32(1.421413741) + t * (F32(-1.453152027) + t * F32(1.061405429)))))
    return np.copysign(F32(1.0) - poly * np.exp(-a * a), x)


def gelu(x: np.ndarray) -> np.ndarray:  # BERT's "gelu": x * Phi(x), exact
    return F32(0.5) * x * (F32(1.0) + erf(x * F32(1 / np.sqrt(2.0))))


def gelu_tanh(x: np.ndarray) -> np.ndarray:  # GPT-2's "gelu_new": the tanh approximation
    return F32(0.5) * x * (F32(1.0) + np.tanh(F32(np.sqrt(2.0 / np.pi)) * (x + F32(0.044715) * x * x * x)))


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, F32(0))


def silu(x: np.ndarray) -> np.ndarray:  # x * sigmoid(x), Llama's MLP gate ("silu", also called swish)
    out = np.negative(x)  # x / (1 + exp(-x)) in one array of x's size, not four ([n, ff] each, every layer)
    np.exp(out, out=out)
    out += F32(1.0)
    return np.divide(x, out, out=out)


ACTIVATIONS = {"gelu": gelu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "gelu_fast": gelu_tanh, "relu": relu, "silu": silu, "swish": silu}


def dense_mlp(x: np.ndarray, w: dict, activation, check=lambda hidden: hidden, threads: int = 1) -> np.ndarray:  # [n, d] -> [n, ff] -> [n, d]
    """act(x W_in + b_in) W_out + b_out (BERT, GPT-2); a bias that is None is left out. `check` sees the hidden layer."""
    hidden = check(activation(apply_linear(x, w["mlp.in.w"], w.get("mlp.in.b"), threads)))  # [n, d] x [d, ff] -> [n, ff]
    return apply_linear(hidden, w["mlp.out.w"], w.get("mlp.out.b"), threads)  # [n, ff] x [ff, d] -> [n, d]


def gated_mlp(x: np.ndarray, w: dict, activation, check=lambda hidden: hidden, threads: int = 1) -> np.ndarray:  # [n, d] -> [n, ff] -> [n, d]
    """(act(x W_gate) * x W_in) W_out: the gated MLP (SwiGLU with silu: Llama, Mistral, Qwen2). "mlp.gate_in.w", where
    a layer has it ([d, 2 ff], a quantized file's gate and up as one product from their blocks), makes both at once."""
    if "mlp.gate_in.w" in w and w.get("mlp.gate.b") is None and w.get("mlp.in.b") is None:
        both = apply_linear(x, w["mlp.gate_in.w"], None, threads)  # [n, d] x [d, 2 ff] -> [n, 2 ff]
        gate, up = both[:, : both.shape[1] // 2], both[:, both.shape[1] // 2 :]
    else:
        gate = apply_linear(x, w["mlp.gate.w"], w.get("mlp.gate.b"), threads)  # [n, d] x [d, ff] -> [n, ff]
        up = apply_linear(x, w["mlp.in.w"], w.get("mlp.in.b"), threads)  # [n, d] x [d, ff] -> [n, ff]
    hidden = activation(gate)
    hidden *= up  # in place: the product is a new [n, ff] array otherwise
    return apply_linear(check(hidden), w["mlp.out.w"], w.get("mlp.out.b"), threads)  # [n, ff] x [ff, d] -> [n, d]


MLPS = {"dense": dense_mlp, "gated": gated_mlp}


FEW_ROWS, SHORT_ROWS = 8, 64  # on one BLAS thread, from FEW_ROWS + 1 to SHORT_ROWS rows, x W is computed as (W^T x^T)^T


def apply_linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, threads: int = 1) -> np.ndarray:  # [n, d_in] x [d_in, d_out] -> [n, d_out]
    """x W (+ b), one BLAS call on `threads` threads. For a sentence's rows on one thread OpenBLAS is up to twice as
    fast with the weights as the long side of the product: W^T x^T, then turned back. Up to 8 rows (a generated
    token), past 64, or on more threads (which split x W better), x W is as fast or faster
    (tests/benchmarks/bench_decoders.py measures both)."""
    if not isinstance(w, np.ndarray):  # a quantized matrix kept as its file's blocks (models.sources.products.Blocks)
        out = w.product(x, threads)
        return out if b is None else np.add(out, b, out=out)
    short = threads == 1 and x.ndim == 2 and FEW_ROWS < len(x) <= SHORT_ROWS
    out = np.ascontiguousarray(np.matmul(w.T, x.T).T) if short else x @ w
    if b is not None:
        out += b
    return out


# --- rotary positions (Su et al. 2021), as Hugging Face's Llama computes them ------------------------


ROPE_TYPES = ("default", "linear", "llama3", "longrope", "su")  # "su": Phi-3's first name for longrope


def longrope_long(scaling: dict | None, n: int) -> bool:
    """Whether longrope turns a sequence of n tokens with its long factors: when the whole sequence is longer than
    the original context (transformers' Phi-3 decides by the length so far); False for other kinds of scaling."""
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type"))
    return kind in ("longrope", "su") and n > int(scaling["original_max_position_embeddings"])


def rotary_frequencies(d_rot: int, theta: float, scaling: dict | None = None, factors=None, n: int = 0,
                       long: bool | None = None) -> np.ndarray:  # -> [d_rot / 2] float32
    """The angle per position of each pair of dimensions: theta^(-2i / d_rot), then rescaled.

    In float32, as transformers computes them. scaling: a config's rope_scaling ("linear": all
    frequencies divided by its factor; "llama3": low frequencies divided, high ones kept, the
    middle smoothed between, as in Llama 3.1). factors [d_rot / 2]: divisors read from a GGUF file's
    rope_freqs tensor (llama.cpp's form of the same rescaling). "longrope" (Phi-3's 128k models): each
    frequency divided by its short factor, or by its long factor when the text (n tokens) is longer than
    the original context, as transformers chooses (`long` says which, whatever n).
    """
    powers = F32(theta) ** (np.arange(0, d_rot, 2, dtype=np.int64).astype(F32) / F32(d_rot))  # [d_rot / 2]
    inv = F32(1.0) / powers
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "linear":
        inv = inv / F32(scaling["factor"])
    elif kind == "llama3":
        factor, low, high = (float(scaling[k]) for k in ("factor", "low_freq_factor", "high_freq_factor"))
        old = float(scaling["original_max_position_embeddings"])
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > old / low, inv / F32(factor), inv)
        smooth = (old / wavelen - low) / (high - low)
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        inv = np.where(medium, (1 - smooth) * scaled / F32(factor) + smooth * scaled, scaled).astype(F32)
    elif kind in ("longrope", "su"):
        long = longrope_long(scaling, n) if long is None else long
        inv = (F32(1.0) / (np.asarray(scaling["long_factor" if long else "short_factor"], dtype=F32) * powers)).astype(F32)  # as transformers rounds it
    if factors is not None:
        inv = (inv / np.asarray(factors, dtype=F32)).astype(F32)
    return inv


def rotary_attention_factor(scaling: dict | None, max_positions: int) -> float:
    """What longrope multiplies cos and sin by (so Q K^T by its square): the config's attention_factor, else
    sqrt(1 + ln(s) / ln(original)) for s = max_positions / original (transformers' default); 1 for other kinds."""
    if (scaling or {}).get("rope_type", (scaling or {}).get("type")) not in ("longrope", "su"):
        return 1.0
    if scaling.get("attention_factor") is not None:
        return float(scaling["attention_factor"])
    original = int(scaling["original_max_position_embeddings"])
    factor = float(scaling.get("factor") or max_positions / original)
    return 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))


def rotary_tables(n: int, inv_freq: np.ndarray, factor: float = 1.0) -> tuple[np.ndarray, np.ndarray]:  # -> cos, sin [n, d_rot] float32
    """cos and sin of position p times each frequency, each frequency twice (the two halves of a head), times `factor`."""
    angles = np.arange(n, dtype=F32)[:, None] * inv_freq[None, :]  # [n, 1] x [1, d_rot / 2] -> [n, d_rot / 2]
    both = np.concatenate([angles, angles], axis=-1)  # [n, d_rot]
    if factor == 1.0:
        return np.cos(both), np.sin(both)
    return np.cos(both) * F32(factor), np.sin(both) * F32(factor)


def soft_cap(x: np.ndarray, cap: float) -> np.ndarray:  # [...] -> [...], in place
    """cap tanh(x / cap): scores or logits kept inside (-cap, cap), nearly unchanged where small (Gemma 2)."""
    np.divide(x, F32(cap), out=x)
    np.tanh(x, out=x)
    return np.multiply(x, F32(cap), out=x)


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:  # [..., n, h, d_head] or [..., h, n, d_head], the tables broadcast to x
    """Each head's first d_rot dimensions turned by its position: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)
    over the halves (x1, x2) of the rotated part ("rotate_half", as transformers pairs them)."""
    d_rot, half = cos.shape[-1], cos.shape[-1] // 2
    rot, rest = x[..., :d_rot], x[..., d_rot:]
    x1, x2 = rot[..., :half], rot[..., half:]
    turned = rot * cos  # then each half's partner times sin, added in place (the same sums as rot * cos + [-x2, x1] * sin)
    turned[..., :half] -= x2 * sin[..., :half]
    turned[..., half:] += x1 * sin[..., half:]
    return turned if not rest.shape[-1] else np.concatenate([turned, rest], axis=-1)
