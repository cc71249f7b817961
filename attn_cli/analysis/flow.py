"""Where attention carries, beyond its weights: value-weighted attention and attention rollout, for any model.

- Value-weighted attention (Kobayashi et al. 2020, "Attention is not only a weight"): what key j
  adds to query i's update through head h is alpha_ij f(x_j), with f(x_j) = (x_j W_V + b_V) W_O
  the key's value through the head's own rows of W_O. Its length ||alpha_ij f(x_j)|| =
  alpha_ij ||f(x_j)||: a large weight on a key whose value is short moves little.
- Attention rollout (Abnar & Zuidema 2020): each layer's weights averaged over its heads, the
  residual connection added as the identity (0.5 A + 0.5 I, rows normalised), multiplied up
  through the layers: how much of each input token reaches each position.
"""

import numpy as np


def write_norms(values, maps, n_heads: int) -> np.ndarray:  # [h_kv][n, d_v], per head [d_v, d] or None -> [h, n]
    """||f(x_j)|| per query head and key: key j's value, of the key/value head the query head reads
    (grouped-query attention: g = h / h_kv query heads share one), through the head's slice of W_O."""
    g = n_heads // len(values)
    out = np.empty((n_heads, len(values[0])))  # [h, n]
    for h in range(n_heads):
        v = values[h // g]  # [n, d_v]
        f = v if maps[h] is None else v @ maps[h]  # [n, d_v] x [d_v, d] -> [n, d]
        out[h] = np.linalg.norm(np.asarray(f, dtype=np.float64), axis=-1)
    return out


def value_weighted(weights: np.ndarray, norms: np.ndarray) -> np.ndarray:  # [..., n, n], [..., n] -> [..., n, n]
    """||alpha_ij f(x_j)|| = alpha_ij ||f(x_j)|| (weights are never negative)."""
    return np.asarray(weights, dtype=np.float64) * norms[..., None, :]


def layer_value_norms(model, trace) -> np.ndarray:  # -> [L, H, n, n]
    """Every head's value-weighted attention, from a trace kept with its values (forward(..., keep_values=True))."""
    out = []
    for l in range(trace.n_layers):
        weights = trace.get("attn.pattern", l)  # [H, n, n]
        out.append(value_weighted(weights, write_norms(trace.get("v", l), model.output_maps(l), len(weights))))
    return np.stack(out)


def rollout(weights: np.ndarray) -> np.ndarray:  # [L, H, n, n] -> [L, n, n]
    """Attention rollout after each layer: R_l = norm(0.5 mean_h A_l + 0.5 I) R_{l-1}, R_0 = I."""
    n = weights.shape[-1]
    eye = np.eye(n)
    reached, out = eye, []
    for layer in np.asarray(weights, dtype=np.float64):
        mixed = 0.5 * layer.mean(axis=0) + 0.5 * eye  # [n, n]: the residual stream keeps half of each token
        mixed /= mixed.sum(axis=-1, keepdims=True)  # a head's sink (weight on nothing) would leave rows short of 1
        reached = mixed @ reached  # [n, n] x [n, n] -> [n, n]
        out.append(reached)
    return np.stack(out)


def layer_range(text: str, n_layers: int) -> tuple[int, int]:
    """--rollout-layers A:B: layers A to B, both included (0-based); "A:" runs to the last layer, ":B" from the first."""
    from attn_cli.errors import InputError

    first, colon, last = text.partition(":")
    try:
        a = int(first) if first.strip() else 0
        b = int(last) if last.strip() else n_layers - 1
    except ValueError:
        a = b = None
    if not colon or a is None:
        raise InputError(f"--rollout-layers {text!r}: give A:B, two layer numbers (0-based, both included), e.g. 0:{n_layers - 1}")
    if not 0 <= a <= b < n_layers:
        raise InputError(f"--rollout-layers {text}: the model has layers 0 to {n_layers - 1}, and A must not come after B")
    return a, b


def rollout_span(rolled, n_layers: int) -> tuple[int, int] | None:
    """The layers a rollout runs through: all of them for --rollout, (A, B) for --rollout-layers A:B, None without one."""
    if not rolled:
        return None
    return (0, n_layers - 1) if rolled is True else tuple(rolled)


def special_shares(weights: np.ndarray, norms: np.ndarray, special: list[bool]) -> tuple[float, float]:
    """(share of all weight on special tokens, share of all value-weighted norm on them), over every head and query."""
    keys = np.asarray(special, dtype=bool)
    weights = np.asarray(weights, dtype=np.float64)
    before = float(weights[..., keys].sum() / weights.sum()) if weights.sum() > 0 else float("nan")
    after = float(norms[..., keys].sum() / norms.sum()) if norms.sum() > 0 else float("nan")
    return before, after


def piece_flows(model, trace, weigh: bool, rolled) -> tuple[dict, tuple | None]:
    """What inspect asked for over a checkpoint's pieces: {"value_norms": [L, H, n, n], "rollout": [n, n]} (those asked for),
    and with value_norms the shares of weight and of norm on the special tokens (special_shares). `rolled`: False, True (every
    layer) or (A, B), the layers the rollout runs through."""
    out, shares = {}, None
    weights = trace.stacked("attn.pattern")  # [L, H, n, n]
    if weigh:
        out["value_norms"] = layer_value_norms(model, trace)
        shares = special_shares(weights, out["value_norms"], trace.tokens.special) if any(trace.tokens.special) else None
    if rolled:
        a, b = rollout_span(rolled, len(weights))
        out["rollout"] = rollout(weights[a:b + 1])[-1]
    return out, shares
