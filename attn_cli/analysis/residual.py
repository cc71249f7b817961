"""A token's path through the layers: its vector after each one, how much attention and the MLP moved it, what it is near."""

import numpy as np

from attn_cli.models.base import Model, Trace
from attn_cli.results.numbers import row_cosines
from attn_cli.results.models import ResidualRow


def residual(model: Model, trace: Trace, i: int, k: int) -> list[ResidualRow]:
    """Token i's vector through the layers: E, then each layer's attention and MLP updates, and its k nearest vocabulary tokens."""
    x = trace.streams()[:, i]  # [L + 1, d]
    near = model.nearest(x, k) if k > 0 else [[] for _ in x]
    rows = [ResidualRow(0, float(np.linalg.norm(x[0])), None, None, None, float(row_cosines(x[0], x[0])), near[0])]
    for l in range(1, trace.n_layers + 1):
        attn, mlp = trace.between("resid_pre", "resid_mid", l - 1)[i], trace.between("resid_mid", "resid_post", l - 1)[i]  # [d], [d]
        rows.append(ResidualRow(
            l, float(np.linalg.norm(x[l])), float(np.linalg.norm(attn)), float(np.linalg.norm(mlp)),
            float(row_cosines(x[l], x[l - 1])), float(row_cosines(x[l], x[0])), near[l],
        ))
    return rows


def layer_numbers(trace: Trace) -> dict:
    """Per layer and token: |attention update|, |MLP update|, |x| (E first), cos(x_l, x_{l-1})."""
    attn = np.stack([trace.between("resid_pre", "resid_mid", l) for l in range(trace.n_layers)])  # [L, n, d]
    mlp = np.stack([trace.between("resid_mid", "resid_post", l) for l in range(trace.n_layers)])  # [L, n, d]
    x = trace.streams()  # [L + 1, n, d]
    return {"attn_norms": np.linalg.norm(attn, axis=-1), "mlp_norms": np.linalg.norm(mlp, axis=-1),
            "norms": np.linalg.norm(x, axis=-1), "layer_cosines": row_cosines(x[1:], x[:-1])}
