"""Per-head sums over a pass's attention, a block of query rows at a time (a watcher of attn.pattern), so that the
head detector and `heads stats` read every head of a long text without [L, H, n, n] ever existing.

A block is a RowBlock (core.blocked): weights A [H, b, k] of rows r0 .. r0 + b - 1 over keys lo .. lo + k - 1
(keys outside hold weight 0). Per layer and head it adds up
    total     sum(A K)                    K: the pairs a score counts (analysis.detect.kept)
    hit[p]    sum(A K P_p)                P_p: pattern p's 0/1 matrix, gathered at its few 1s
    count[p]  sum(K P_p)                  (no weights: the same for every head)
and, for stats, the measures' sums (analysis.stats.MEASURES). The detector's scores follow:
    mul  hit / total;   abs  1 - sum(|A - P| K) / n = 1 - (total - 2 hit + count) / n   (A >= 0, P in {0, 1}).
"""

import numpy as np


MEASURES = ("entropy", "distance", "first", "special", "self", "previous")


def pattern_pairs(name: str, ids: list[int], special: list[bool]) -> tuple[np.ndarray, np.ndarray]:  # -> rows [m], keys [m], by row
    """The (query, key) pairs where detect.targets(name) is True, without its [n, n] matrix."""
    n = len(ids)
    rows = np.arange(n)
    if name == "previous":
        return rows[1:], rows[:-1]
    if name == "self":
        return rows, rows
    if name == "first":
        return rows, np.zeros(n, np.int64)
    if name == "special":
        keys = np.flatnonzero(np.asarray(special, dtype=bool))
        return np.repeat(rows, len(keys)), np.tile(keys, n)
    if name in ("duplicate", "induction"):
        tokens = np.asarray(ids)
        order = np.argsort(tokens, kind="stable")
        qs, ks = [], []
        starts = np.flatnonzero(np.r_[True, tokens[order][1:] != tokens[order][:-1]])
        for group in np.split(order, starts[1:]):  # positions holding the same token
            if len(group) > 1:
                q, k = np.meshgrid(group, group, indexing="ij")
                earlier = k < q
                qs.append(q[earlier])
                ks.append(k[earlier])
        q = np.concatenate(qs) if qs else np.zeros(0, np.int64)
        k = np.concatenate(ks) if ks else np.zeros(0, np.int64)
        if name == "induction":  # the key right after an earlier copy, that the query can see
            k = k + 1
            seen = k <= q
            q, k = q[seen], k[seen]
        by_row = np.lexsort((k, q))
        return q[by_row], k[by_row]
    raise ValueError(f"no pattern {name!r}")


class PatternSums:
    """The sums of every layer's heads over one pass (module docstring); `watch` is the attn.pattern watcher."""

    def __init__(self, n_layers: int, n_heads: int, ids: list[int], special: list[bool], patterns, exclude_bos: bool = False,
                 exclude_current: bool = False, measures: bool = False):
        self.n = len(ids)
        self.exclude_bos, self.exclude_current, self.measures = exclude_bos, exclude_current, measures
        self.special = np.asarray(special, dtype=bool)
        self.total = np.zeros((n_layers, n_heads))
        self.pairs, self.hit, self.count = {}, {}, {}
        for name in patterns:
            q, k = pattern_pairs(name, ids, special)
            counted = self.counted(q, k)
            self.pairs[name] = (q[counted], k[counted])
            self.count[name] = int(counted.sum())
            self.hit[name] = np.zeros((n_layers, n_heads))
        self.sums = {m: np.zeros((n_layers, n_heads)) for m in (MEASURES if measures else ())}

    def counted(self, q: np.ndarray, k: np.ndarray) -> np.ndarray:  # the pairs K keeps
        keep = np.ones(len(q), bool)
        if self.exclude_bos:
            keep &= k != 0
        if self.exclude_current:
            keep &= k != q
        return keep

    def watch(self, l: int, block) -> None:
        """One block of layer l's weights (a core.blocked.RowBlock)."""
        self.add(l, block.first, block.lo, block.values)

    def add(self, l, r0: int, lo: int, a: np.ndarray) -> None:  # a [H, b, k] (l: a layer, or any index into the sums' first axis)
        b, k = a.shape[1:]
        rows = np.arange(r0, r0 + b)
        total = np.add.reduce(a, axis=(1, 2), dtype=np.float64)  # [H]
        diagonal = rows - lo
        on = (diagonal >= 0) & (diagonal < k)
        own = np.add.reduce(a[:, rows[on] - r0, diagonal[on]], axis=1, dtype=np.float64)  # [H] each row's weight on itself
        first = np.add.reduce(a[:, :, 0], axis=1, dtype=np.float64) if lo == 0 else 0.0  # [H]
        if self.exclude_bos:
            total -= first
        if self.exclude_current:
            total -= own
            if lo == 0 and r0 == 0:  # row 0's own key is also the first key: not taken out twice
                total += a[:, 0, 0] if self.exclude_bos else 0.0
        self.total[l] += total
        for name, (q, key) in self.pairs.items():
            s, e = np.searchsorted(q, [r0, r0 + b])
            inside = (key[s:e] >= lo) & (key[s:e] < lo + k)
            self.hit[name][l] += np.add.reduce(a[:, q[s:e][inside] - r0, key[s:e][inside] - lo], axis=1, dtype=np.float64)
        if self.measures:
            self.add_measures(l, rows, lo, a, own, first)

    def add_measures(self, l, rows: np.ndarray, lo: int, a: np.ndarray, own: np.ndarray, first) -> None:
        b, k = a.shape[1:]
        wide = a.astype(np.float64)  # the logarithms in float64, as the figures are
        logs = np.log(wide, out=np.zeros_like(wide), where=wide > 0)  # 0 log 0 = 0
        logs *= wide
        self.sums["entropy"][l] -= logs.sum(axis=(1, 2))
        gaps = np.abs(rows[:, None] - np.arange(lo, lo + k)[None, :]).astype(np.float64)  # [b, k] |i - j|
        self.sums["distance"][l] += np.einsum("hbk,bk->h", wide, gaps)
        if lo == 0:
            self.sums["first"][l] += first - (a[:, 0, 0] if rows[0] == 0 else 0.0)  # queries after the first
        keys = np.flatnonzero(self.special[lo : lo + k])
        if len(keys):
            self.sums["special"][l] += np.add.reduce(a[:, :, keys], axis=(1, 2), dtype=np.float64)
        self.sums["self"][l] += own
        before = rows - 1 - lo
        on = (before >= 0) & (before < k) & (rows > 0)
        self.sums["previous"][l] += np.add.reduce(a[:, rows[on] - rows[0], before[on]], axis=1, dtype=np.float64)

    def scorable(self, name: str) -> bool:
        return self.count[name] > 0

    def scores(self, name: str, error: str = "mul") -> np.ndarray:  # -> [L, H], as analysis.detect.pattern_scores gives them
        hit = self.hit[name]
        if error == "mul":
            return np.divide(hit, self.total, out=np.full_like(hit, np.nan), where=self.total > 0)
        return 1.0 - (self.total - 2 * hit + self.count[name]) / self.n


def baseline_blocks(n: int, causal: bool, rng: np.random.Generator | None, rows: int = 256):
    """(r0, [2, b, n]) blocks of the detector's two baselines (detect.baseline_weights: even attention over the keys each
    query sees, and all of a query's weight on one key it sees, drawn at random), drawn as that function draws them;
    without `rng`, (r0, [1, b, n]) blocks of the even one alone."""
    counts = np.arange(1, n + 1) if causal else np.full(n, n)
    pick = None if rng is None else (rng.random(n) * counts).astype(int)  # [n]: the how-many-th visible key (causal: the key itself)
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        block = np.zeros((1 if pick is None else 2, r1 - r0, n))
        seen = counts[r0:r1, None]  # [b, 1]
        block[0] = np.where(np.arange(n)[None, :] < seen, 1.0 / seen, 0.0)
        if pick is not None:
            block[1, np.arange(r1 - r0), pick[r0:r1]] = 1.0
        yield r0, block
