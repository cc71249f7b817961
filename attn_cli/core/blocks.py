"""The pieces a transformer block is made of, in plain NumPy: positions, norms, activations.

Float32 in, float32 out where a model runs (F32 constants keep NumPy from promoting), float64
for the lesson's sinusoids (the GloVe heads run in float64).
"""

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


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:  # [n, d] -> [n, d]
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + F32(eps)) * g + b


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


ACTIVATIONS = {"gelu": gelu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "gelu_fast": gelu_tanh, "relu": lambda x: np.maximum(x, F32(0))}
