"""Where a labelled query's attention goes: one set of link measures, for `heads eval` (the lesson's heads) and `heads find` (a checkpoint's).

A link says "in this sentence, this query should attend to that key". For one query and any stack
of weight matrices ([..., n, n]: one head, or every head of every layer at once):
- top on key: its largest weight (itself, and tokens to ignore such as [CLS], left out) is on a linked key;
- exact top: its linked keys are exactly its |keys| largest weights;
- key weight: its total weight on the linked keys.
A tie between a linked key and another token counts as a miss. The baselines are patterns anyone
could write down: all weight on the previous token, or spread evenly over what the query sees.
"""

import numpy as np


def link_scores(weights: np.ndarray, q: int, keys: list[int], ignore: list[int] = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For one linked query, per matrix of the stack: (top on key, exact top, key weight). weights [..., n, n]."""
    row = weights[..., q, :].astype(np.float64)  # [..., n]
    ranked = row.copy()
    ranked[..., [q, *ignore]] = -np.inf
    rest = np.delete(ranked, keys, axis=-1)  # [..., n - |keys|]
    best_rest = rest.max(axis=-1, initial=-np.inf)
    on_key = ranked[..., keys]
    return on_key.max(axis=-1) > best_rest, on_key.min(axis=-1) > best_rest, row[..., keys].sum(axis=-1)


def previous_weights(n: int, ignore: list[int] = ()) -> np.ndarray:  # -> [n, n]
    """All weight on the nearest earlier token that counts (the first token: on itself)."""
    w = np.zeros((n, n))
    for i in range(n):
        earlier = [j for j in range(i) if j not in ignore]
        w[i, earlier[-1] if earlier else i] = 1.0
    return w


def even_weights(n: int, allowed: np.ndarray | None, ignore: list[int] = ()) -> np.ndarray:  # -> [n, n]
    """Weight spread evenly over every key the query may see (itself included) that counts."""
    seen = np.ones((n, n)) if allowed is None else np.asarray(allowed, dtype=np.float64)  # [n, n]
    if len(ignore):
        seen = seen.copy()
        seen[:, list(ignore)] = 0.0
        seen[np.arange(n), np.arange(n)] += seen.sum(axis=1) == 0  # nothing to see but itself
    return seen / seen.sum(axis=1, keepdims=True)
