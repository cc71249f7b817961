"""`attn circuit L.H`: what one head's matrices look for (its QK circuit) and what they write (its OV circuit).

Tokens: the text's own (--text, each distinct token once, special ones left out) or the N most frequent English words
that are one token of the model (GloVe's keys are in frequency order: " the", " of", ...). Each token's row is its
embedding (the family's scale folded in, learned positions left out) through the norm that reads it: the layer's
input norm for a pre-norm model, the embedding norm for a post-norm one.

    QK:  score(query s, key t) = rope_D(norm_q(x_s W_Q)) . rope_0(norm_k(x_t W_K)) / root    [n, n]
         the bilinear form W_Q W_K^T (no biases), with the family's q/k norms applied to each row as the model applies
         them, and RoPE turning the query D positions after the key (--distance D; 0: no turn); root as the model
         divides (sqrt(d_head), or Gemma's query_pre_attn_scalar). Gemma 2's score soft-cap is left out.
    OV:  logits(source s) = f(x_s W_V W_O diag(w_post)) W_U^T   [n, V], read a block of the vocabulary at a time,
         f the final norm's weight (and a LayerNorm's centring), its division by the stream's scale left out, and so the
         soft-cap (Gemma 2's, monotone); w_post Gemma's norm after the attention block, its weight only.
    copying: the fraction of the tokens whose top promotion over the whole vocabulary is themselves.
    positivity: sum(lambda) / sum(|lambda|) over the eigenvalues of the vocabulary's OV circuit N W_V W_O' F W_U^T
         (V x V, N the normed embeddings), as Elhage et al. (2021) use it; its nonzero eigenvalues are those of the
         [d_head, d_head] matrix W_O' F (W_U^T N) W_V, with W_U^T N [d, d] summed over the vocabulary's blocks.

Baselines: the same figures with W_V and W_O replaced by iid standard Gaussian matrices of their shapes (numpy's
default_rng(seed)), their mean and standard deviation: copying over the first `draws` of them (DRAWS), positivity over
POSITIVITY_DRAWS (the same first ones, and more). GQA: query head h uses its group's K and V.
"""

import math
from itertools import chain

import numpy as np

from attn_cli.analysis.matrices import head_slices, layer_tensor
from attn_cli.errors import InputError
from attn_cli.records import Record

DRAWS = 4  # random W_V, W_O pairs of the copying baseline (each costs a product with the whole vocabulary)
POSITIVITY_DRAWS = 100  # and of the positivity baseline (each a [d_head, d_head] matrix, once W_U^T N is summed)
FREQUENT = 100  # tokens of the default set
PROMOTED = 5  # output tokens kept per source
MAX_WORDS = 20_000  # GloVe keys tried for the frequent set


class CircuitSettings(Record):
    __slots__ = ("text", "tokens", "distance", "top", "seed", "draws")

    def __init__(self, text: str | None = None, tokens: int = FREQUENT, distance: int = 0, top: int = 10, seed: int = 0, draws: int = DRAWS):
        self.text = text  # the token set is this text's tokens; None: the `tokens` most frequent words
        self.tokens = tokens
        self.distance = distance  # the query this many positions after the key (RoPE)
        self.top = top  # pairs and sources the view lists
        self.seed, self.draws = seed, draws  # the random baseline's generator and its number of draws


def frequent_ids(model, count: int) -> list[int]:
    """The ids of the `count` most frequent English words (GloVe's order) that the tokenizer writes as one token,
    with a leading space where that is one token, else without."""
    from attn_cli.vectors.store import DEFAULT_VECTORS

    ids: dict[int, None] = {}
    with open(DEFAULT_VECTORS / "keys.txt", encoding="utf-8") as keys:
        for number, line in enumerate(keys):
            word = line.rstrip("\n")
            if number >= MAX_WORDS or len(ids) >= count:
                break
            if not word.isalpha():
                continue
            for form in (" " + word, word):
                got = model.tokenizer.encode(form, add_special_tokens=False).ids
                if len(got) == 1 and got[0] < model.spec.vocab_size:
                    ids.setdefault(got[0])
                    break
    return list(ids)


def token_set(model, settings: CircuitSettings) -> list[int]:
    if settings.text is None:
        return frequent_ids(model, settings.tokens)
    tokens = model.tokenize(settings.text)
    ids = list(dict.fromkeys(i for i, special in zip(tokens.ids, tokens.special) if not special and i >= 0))
    if not ids:
        raise InputError("--text has no tokens but special ones: give some words")
    return ids


def normed(model, l: int, e: np.ndarray) -> np.ndarray:  # [n, d] -> [n, d] float64
    """Embedding rows through the norm that reads them at layer l (the module's docstring)."""
    spec, w = model.spec, model.weights
    if spec.pre_norm:
        layer = {k: layer_tensor(model, l, k) for k in ("attn.norm.w", "attn.norm.b")}
        return model.norm(e, {k: v.astype(np.float64) for k, v in layer.items() if v is not None}, "attn.norm", l)
    if spec.embed_norm:
        return model.norm(e, {k: w.get(k).astype(np.float64) for k in ("embed.norm.w", "embed.norm.b") if w.has(k)}, "embed.norm", None)
    return e


def input_rows(model, l: int, ids: list[int]) -> np.ndarray:  # -> [n, d] float64
    return normed(model, l, model.weights.embed(ids).astype(np.float64))


def head_matrices(model, l: int, h: int) -> dict:  # -> W_Q, W_K, W_V [d, dh], W_O [dh, d] float64, as stored
    qkv, o = model.weights.tensor(f"layers.{l}.attn.qkv.w"), model.weights.tensor(f"layers.{l}.attn.o.w")
    sq, sk, sv = head_slices(model.spec, h)
    dh = model.spec.d_head
    return {"q": qkv[:, sq].astype(np.float64), "k": qkv[:, sk].astype(np.float64), "v": qkv[:, sv].astype(np.float64),
            "o": o[h * dh : (h + 1) * dh].astype(np.float64)}


def qk_scores(model, l: int, m: dict, x: np.ndarray, distance: int) -> np.ndarray:  # [n, d] -> [n, n] (query s, key t)
    from attn_cli.core.blocks import rotate

    spec = model.spec
    q, k = x @ m["q"], x @ m["k"]  # [n, d] x [d, dh] -> [n, dh]
    if spec.qk_norm:
        q = model.norm(q, {"attn.q_norm.w": layer_tensor(model, l, "attn.q_norm.w").astype(np.float64)}, "attn.q_norm", l)
        k = model.norm(k, {"attn.k_norm.w": layer_tensor(model, l, "attn.k_norm.w").astype(np.float64)}, "attn.k_norm", l)
    tables = model.rotary(distance + 1, 0, l)
    if tables is not None:
        cos, sin = (t.astype(np.float64) for t in tables)
        q, k = rotate(q, cos[distance], sin[distance]), rotate(k, cos[0], sin[0])
    return q @ k.T / (spec.query_root or math.sqrt(spec.d_head))  # [n, dh] x [dh, n] -> [n, n]


def final_map(model, rows: np.ndarray) -> np.ndarray:  # [..., d] -> [..., d]
    """The final norm as the linear map it is with its scale left out: a LayerNorm's centring, then its weight."""
    if not model.spec.final_norm:
        return rows
    if model.spec.norm == "layer":
        rows = rows - rows.mean(axis=-1, keepdims=True)
    return rows * model.weights.get("final_norm.w").astype(np.float64)


def writes(model, l: int, o: np.ndarray) -> np.ndarray:  # W_O [..., dh, d] -> W_O' F [..., dh, d]
    """W_O's rows through Gemma's post-attention norm weight (where there is one) and the final map."""
    post = layer_tensor(model, l, "attn.post_norm.w")
    return final_map(model, o if post is None else o * post.astype(np.float64))


def random_pairs(d: int, dh: int, count: int, seed: int):  # -> (V [d, dh], O [dh, d]), count of them
    """iid standard Gaussian W_V and W_O, a pair at a time (numpy's default_rng(seed): V, then O, then the next pair's)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        yield rng.standard_normal((d, dh)), rng.standard_normal((dh, d))


def vocabulary_blocks(model, l: int):
    """(start, W_U rows [c, d], normed embedding rows [c, d] float64) over the vocabulary, a block at a time."""
    from attn_cli.models.weights import EMBEDDING

    w = model.weights
    out = w.each_unembedding_block()
    if not w.has("unembed"):
        for start, block in out:
            scaled = block if model.spec.embed_scale is None else block * np.float32(model.spec.embed_scale)
            yield start, block, normed(model, l, scaled.astype(np.float64))
        return
    for (start, block), (_, e) in zip(out, w.each_unembedding_block(key=EMBEDDING)):
        scaled = e if model.spec.embed_scale is None else e * np.float32(model.spec.embed_scale)
        yield start, block, normed(model, l, scaled.astype(np.float64))


def merge_top(best: tuple, logits: np.ndarray, start: int, k: int) -> tuple:  # ([m, k'], [m, k']), [m, c] -> the top k of both
    """The k highest values of each row over what was kept and a new block of columns (ids start ..), highest first; of
    equal values, the lower id first."""
    values = np.concatenate([best[0], logits], axis=1)
    ids = np.concatenate([best[1], np.broadcast_to(np.arange(start, start + logits.shape[1]), logits.shape)], axis=1)
    if values.shape[1] > k:
        keep = np.argpartition(-values, k - 1, axis=1)[:, :k]
        threshold = np.take_along_axis(values, keep, 1).min(axis=1, keepdims=True)
        tied = np.flatnonzero(np.sum(values >= threshold, axis=1) > k)  # more than k at or above the k-th: ties at the edge
        for r in tied:  # rare with real logits: that row's candidates in full order
            keep[r] = np.lexsort((ids[r], -values[r]))[:k]
        values, ids = np.take_along_axis(values, keep, 1), np.take_along_axis(ids, keep, 1)
    order = np.lexsort((ids, -values), axis=1)
    return np.take_along_axis(values, order, 1), np.take_along_axis(ids, order, 1)


def vocabulary_pass(model, l: int, outs: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """outs [m, d]: each row's top k logits over the vocabulary (values [m, k], ids [m, k]), and W_U^T N [d, d], in one pass."""
    d = outs.shape[1]
    best = (np.empty((len(outs), 0)), np.empty((len(outs), 0), dtype=np.int64))
    gram = np.zeros((d, d))
    rows = outs.astype(np.float32)
    for start, block, n in vocabulary_blocks(model, l):
        best = merge_top(best, (rows @ block.T).astype(np.float64), start, k)  # [m, d] x [d, c] -> [m, c]
        gram += block.T.astype(np.float32) @ n.astype(np.float32)  # [d, c] x [c, d] -> [d, d]
    return best[0], best[1], gram


def positivity(small: np.ndarray) -> float:  # [..., dh, dh] -> sum(lambda) / sum(|lambda|)
    values = np.linalg.eigvals(small)
    total = np.sum(np.abs(values), axis=-1)
    return np.divide(np.sum(values, axis=-1).real, total, out=np.zeros(total.shape), where=total > 0)


def ov_circuit(model, l: int, m: dict, x: np.ndarray, ids: list[int], settings: CircuitSettings) -> dict:
    """The OV figures of the module's docstring: each source's promoted tokens, copying, positivity, and their baselines."""
    R, n = settings.draws, len(ids)
    randoms = random_pairs(model.spec.d_model, model.spec.d_head, max(R, POSITIVITY_DRAWS), settings.seed)
    first = [next(randoms) for _ in range(R)]  # the copying baseline's pairs, then the positivity baseline's too
    real = writes(model, l, m["o"])  # [dh, d]
    outs = np.concatenate([x @ m["v"] @ real] + [x @ v @ writes(model, l, o) for v, o in first])  # [(1 + R) n, d]
    values, top, gram = vocabulary_pass(model, l, outs, PROMOTED)
    copies = top[:, 0].reshape(1 + R, n) == np.asarray(ids)[None]  # [1 + R, n]
    random_copying = copies[1:].mean(axis=1)
    own = positivity(real @ gram @ m["v"])  # [dh, d] x [d, d] x [d, dh] -> [dh, dh]
    random_positivity = np.array([positivity(writes(model, l, o) @ gram @ v) for v, o in chain(first, randoms)])  # one pair at a time
    return {"promoted": top[:n], "logits": values[:n], "copying": float(copies[0].mean()),
            "random_copying": (float(random_copying.mean()), float(random_copying.std()), R),
            "positivity": float(own), "random_positivity": (float(random_positivity.mean()), float(random_positivity.std()), len(random_positivity))}


def check(model, layer: int, head: int, settings: CircuitSettings) -> None:
    spec = model.spec
    if not 0 <= layer < spec.n_layers:
        raise InputError(f"head {layer}.{head}: layer {layer} does not exist; the model has layers 0 to {spec.n_layers - 1}")
    if not 0 <= head < spec.n_heads:
        raise InputError(f"head {layer}.{head}: head {head} does not exist; each layer has heads 0 to {spec.n_heads - 1}")
    if settings.distance < 0:
        raise InputError(f"--distance must be >= 0, not {settings.distance}")
    if settings.distance > 0 and spec.position != "rotary":
        raise InputError(f"--distance {settings.distance}: {model.name} has no rotary positions (RoPE) to turn; its QK circuit is the same at every distance here")
    if settings.distance >= spec.max_positions:
        raise InputError(f"--distance {settings.distance}: {model.name} has {spec.max_positions:,} positions")
    if settings.text is None and settings.tokens < 2:
        raise InputError(f"--tokens must be >= 2, not {settings.tokens}")


def circuit(model, layer: int, head: int, settings: CircuitSettings):
    """One head's QK circuit over a token set and, for a decoder, its OV circuit into the vocabulary, with baselines."""
    from attn_cli.results.circuit import CircuitResult

    from attn_cli.io.blas import threads_for

    check(model, layer, head, settings)
    threads_for(1 << 20)  # products with the whole vocabulary: the threads --threads asks for, else the idle cores (io/blas.py)
    ids = token_set(model, settings)
    labels = model.labels(ids, [model.tokenizer.id_to_token(i) or f"#{i}" for i in ids])
    x = input_rows(model, layer, ids)
    m = head_matrices(model, layer, head)
    scores = qk_scores(model, layer, m, x, settings.distance)
    ov = ov_circuit(model, layer, m, x, ids, settings) if model.predicts == "next" else None
    no_ov = None if ov is not None else (f"{model.name} has no linear output head (an encoder{' whose masked-LM head is not linear' if model.predicts == 'mask' else ''}): "
                                         "the OV circuit is not read into the vocabulary")
    promoted = None if ov is None else [[model.labels([int(j)], [model.tokenizer.id_to_token(int(j)) or f"#{j}"])[0] for j in row] for row in ov["promoted"]]
    return CircuitResult(model=model.summary(), layer=layer, head=head, kv_head=head // model.spec.group if model.spec.group > 1 else None, ids=ids, labels=labels,
                         source="text" if settings.text is not None else "frequent", distance=settings.distance, scores=scores, ov=ov,
                         promoted_labels=promoted, no_ov=no_ov, top=settings.top, seed=settings.seed)
