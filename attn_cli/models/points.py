"""The names of what a forward pass can keep or change, as data (TransformerLens's hook names).

Shape letters: n = the positions this pass runs (a cached pass: the new tokens only), t = the keys
each query may read (n, or the cache's length + n), d = d_model, H query heads, h_kv key/value heads
of d_head. A pass started with a batch of streams (`Start` with resid [B, n, d]) gives every point a
leading B axis.

    resid_pre[l]    [n, d]             the stream entering layer l (resid_pre[0] = the embeddings E)
    attn.q[l]       [n, H, d_head]     the queries as the scores read them (after q/k norms and RoPE)
    attn.k[l]       [h_kv, t, d_head]  the keys likewise (new positions and the cache's)
    attn.qk[l]      [H, n, t]          Q K^T as computed, before scaling (--stage scores)
    attn.scores[l]  [H, n, t]          Q K^T / sqrt(d_head) (+ soft-cap), -inf where masked: what softmax reads
    attn.pattern[l] [H, n, t]          the softmax weights
    attn.z[l]       [n, H, d_head]     each head's weighted values, before W_O
    attn.out[l]     [n, d]             the attention block's update (after W_O, + bias)
    resid_mid[l]    [n, d]             the stream between the attention block and the MLP
    mlp.hidden[l]   [n, ff]            the MLP's hidden layer, after its activation (and gate): what W_out reads
    mlp_out[l]      [n, d]             the MLP block's update
    resid_post[l]   [n, d]             the stream leaving layer l (= resid_pre[l + 1])
    v[l]            [h_kv, t, d_head]  the values (new positions and the cache's)
    resid_final     [n, d]             after the final norm: what the unembedding reads
    NORM.scale[l]   [n, 1]             what a norm divides each row by (sqrt(mean(x^2) + eps), or of the variance):
                                       attn.norm, mlp.norm, attn.post_norm and mlp.post_norm (Gemma's sandwich norms),
                                       final_norm and embed.norm (layerless); attn.q_norm [n, H, 1], attn.k_norm [n, h_kv, 1].
                                       Given these, every norm is a linear map: how explain splits a logit exactly.

A `Keep` says which of them a pass stores; everything else is computed and dropped at once. An edit
(`Zero`, `Mean`, `Patch`, `Add`) changes one point of one layer where it is computed, and so everything
computed from it after, always through its own `apply`. `Start` runs a pass from layer l on a given stream.
"""

import numpy as np

NORMS = ("attn.norm", "mlp.norm", "attn.post_norm", "mlp.post_norm", "final_norm", "embed.norm")
SCALES = tuple(f"{norm}.scale" for norm in NORMS) + ("attn.q_norm.scale", "attn.k_norm.scale")
POINTS = ("resid_pre", "attn.q", "attn.k", "attn.z", "attn.pattern", "attn.scores", "attn.out", "resid_mid", "mlp.hidden", "mlp_out",
          "resid_post", "v", "resid_final", "attn.qk", *SCALES)

# Each point's axes after any batch axis: "n" is the position axis (what `rows` and an edit's positions index),
# "H" / "h_kv" the head axis (what `heads` and an edit's head index).
AXES = {
    "resid_pre": ("n", "d"), "resid_mid": ("n", "d"), "resid_post": ("n", "d"), "resid_final": ("n", "d"),
    "attn.out": ("n", "d"), "mlp_out": ("n", "d"), "attn.z": ("n", "H", "d_head"),
    "attn.qk": ("H", "n", "t"), "attn.scores": ("H", "n", "t"), "attn.pattern": ("H", "n", "t"), "v": ("h_kv", "t", "d_head"),
    "attn.q": ("n", "H", "d_head"), "attn.k": ("h_kv", "t", "d_head"), "mlp.hidden": ("n", "ff"),
    **{scale: ("n", "1") for scale in SCALES}, "attn.q_norm.scale": ("n", "H", "1"), "attn.k_norm.scale": ("n", "h_kv", "1"),
}
PATTERNS = ("attn.qk", "attn.scores", "attn.pattern")  # [H, n, t]: computed a block of query rows at a time
LAYERLESS = ("resid_final", "final_norm.scale", "embed.norm.scale")
EVERYTHING = ("resid_pre", "attn.z", "attn.pattern", "attn.scores", "attn.out", "resid_mid", "mlp_out", "resid_post", "resid_final")


def axis(point: str, letter: str) -> int | None:
    """The (negative) axis of `letter` in a point's value, counted from the end so that a batch axis in front changes nothing."""
    axes = AXES[point]
    return axes.index(letter) - len(axes) if letter in axes else None


def head_axis(point: str) -> int | None:
    return axis(point, "H") if "H" in AXES[point] else axis(point, "h_kv")


def check_point(point: str) -> str:
    if point not in AXES:
        raise ValueError(f"no point {point!r}; the points are {', '.join(POINTS)}")
    return point


class Keep:
    """What a pass stores (see the module's docstring).

    points: the names kept; layers: the layers kept (None: every layer); heads: for the [H, ...] points
    and attn.z, only these query heads (the H axis becomes len(heads)); rows: only these query
    positions of the per-position points (an int list, a slice, or None: every row; predict keeps [-1]).
    watch: {point: callable(layer, value)}, called with each layer's value as it is computed, whether
    kept or not. For the [H, n, t] points the value comes a block of query rows at a time, as a
    `core.blocked.RowBlock` (its first row, and its [H, b, k] values over the keys 0 .. k - 1 the block
    may see; later keys hold 0 weight), so a watcher can reduce patterns without [H, n, n] ever existing.
    """

    __slots__ = ("points", "layers", "heads", "rows", "watch")

    def __init__(self, points=EVERYTHING, layers=None, heads=None, rows=None, watch: dict | None = None):
        self.points = frozenset(check_point(p) for p in points)
        self.layers = None if layers is None else frozenset(int(l) for l in layers)
        self.heads = None if heads is None else [int(h) for h in heads]
        self.rows = rows
        self.watch = dict(watch or {})
        for point in self.watch:
            check_point(point)

    @classmethod
    def everything(cls, scores: bool = False, values: bool = False) -> "Keep":
        """What a pass kept before keeping could be chosen: every layer's patterns and streams (+ Q K^T, + V when asked)."""
        return cls(EVERYTHING + (("attn.qk",) if scores else ()) + (("v",) if values else ()))

    @classmethod
    def nothing(cls) -> "Keep":
        return cls(())

    def wants(self, point: str, layer: int | None = None) -> bool:
        """Whether the pass stores `point` of `layer`."""
        return point in self.points and (layer is None or self.layers is None or layer in self.layers)

    def needs(self, point: str, layer: int | None = None) -> bool:
        """Whether the pass must compute `point` of `layer` as a whole: stored or watched."""
        return self.wants(point, layer) or point in self.watch

    def row_index(self, n: int):
        """The rows kept of a pass over n positions: a slice or an int array (absolute within the pass)."""
        if self.rows is None:
            return slice(None)
        if isinstance(self.rows, slice):
            return self.rows
        return np.arange(n)[np.asarray(self.rows, dtype=np.int64)]

    def __repr__(self) -> str:
        return f"Keep(points={sorted(self.points)}, layers={self.layers}, heads={self.heads}, rows={self.rows}, watch={sorted(self.watch)})"


class Edit:
    """A change made to one point of one layer where it is computed (the point's value as trace.get gives it).

    head: one head of a point with a head axis (attn.z, attn.pattern, attn.scores: a query head; v: a
    key/value head); None: all of the point. positions: rows of this pass (0 .. n - 1; a cached pass
    counts from its first new token) along the point's position axis; None: every position. An edit on
    attn.z changes attn.out and everything after it; one on resid_pre[l] is the stream layer l reads.
    """

    __slots__ = ("point", "layer", "head", "positions")

    def __init__(self, point: str, layer: int | None, head: int | None = None, positions=None):
        self.point = check_point(point)
        if point not in LAYERLESS and layer is None:
            raise ValueError(f"an edit of {point} needs its layer")
        if head is not None and head_axis(point) is None:
            raise ValueError(f"{point} has no head axis: an edit of it takes no head")
        self.point, self.layer, self.head = point, layer, head
        self.positions = None if positions is None else np.atleast_1d(np.asarray(positions, dtype=np.int64))

    def where(self, value: np.ndarray, at: tuple[int, int] | None = None) -> tuple[tuple, tuple]:
        """The cells of `value` this edit changes, as (their index in `value`, the same cells' index in the whole point).

        value: the point, with or without a batch axis; or, with `at` = (r0, k0), a block of a [.., H, n, t] point as the
        pass computes it a block of query rows at a time (core.blocked): its rows r0 .. and keys k0 .. ."""
        index = [slice(None)] * value.ndim
        whole = list(index)
        position = axis(self.point, "n") if "n" in AXES[self.point] else axis(self.point, "t")
        if at is not None:
            r0, k0 = at
            rows = np.arange(r0, r0 + value.shape[position]) if self.positions is None else \
                self.positions[(self.positions >= r0) & (self.positions < r0 + value.shape[position])]
            index[position], whole[position], whole[-1] = rows - r0, rows, slice(k0, k0 + value.shape[-1])
        elif self.positions is not None:
            index[position] = whole[position] = self.positions
        if self.head is not None:
            index[head_axis(self.point)] = whole[head_axis(self.point)] = self.head
        return tuple(index), tuple(whole)

    def apply(self, value: np.ndarray, at: tuple[int, int] | None = None) -> np.ndarray:
        """`value` changed in place (and returned): the whole point, or a block of it (`at`, see where)."""
        index, whole = self.where(value, at)
        value[index] = self.new(value[index], whole)
        return value

    def new(self, old: np.ndarray, whole: tuple) -> np.ndarray:
        """What the cells become: `old`, their values now; `whole`, their index in the whole point."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.point!r}, {self.layer}, head={self.head}, positions={self.positions})"


class Zero(Edit):
    """Zero-ablation: the point (or one head of it, at some positions) set to 0. Zero("attn.z", 3, head=5) removes
    head 5 of layer 3 from the stream (its values never reach W_O); zeroing attn.pattern leaves a query reading nothing."""

    __slots__ = ()

    def new(self, old: np.ndarray, whole: tuple) -> np.ndarray:
        if self.point == "attn.scores":  # 0 on the keys the query sees: the mask stays
            return np.where(np.isneginf(old), old, 0)
        return np.zeros_like(old)


class Mean(Edit):
    """Mean-ablation: the point set to a given mean (typically its mean over positions and texts of a reference run).
    `mean` has the shape of one position of what is replaced: [d] for a stream, [d_head] for one head of attn.z,
    [H, d_head] for all of attn.z; it is broadcast over the positions edited."""

    __slots__ = ("mean",)

    def __init__(self, point: str, layer: int | None, head: int | None = None, mean=None, positions=None):
        super().__init__(point, layer, head, positions)
        if mean is None:
            raise ValueError("Mean needs the mean to put in")
        if point in PATTERNS:
            raise ValueError(f"a mean of {point} is not defined per position; use Patch")
        self.mean = np.asarray(mean)

    def new(self, old: np.ndarray, whole: tuple) -> np.ndarray:
        return np.broadcast_to(self.mean.astype(old.dtype, copy=False), old.shape)


class Patch(Edit):
    """Activation patching: the point put back from another run. `value` is that run's whole point for this pass
    (as its trace.get(point, layer) gives it: [n, d], [n, H, d_head], [H, n, t], ...; a batch axis is allowed
    when this pass has one); `head` and `positions` pick the part of it put back."""

    __slots__ = ("value",)

    def __init__(self, point: str, layer: int | None, head: int | None = None, positions=None, value=None):
        super().__init__(point, layer, head, positions)
        if value is None:
            raise ValueError("Patch needs the value to put back")
        self.value = np.asarray(value)

    def new(self, old: np.ndarray, whole: tuple) -> np.ndarray:
        return np.broadcast_to(self.value[whole[len(whole) - self.value.ndim :]], old.shape)  # without a batch axis: every stream's


class Add(Edit):
    """A vector added to a point: a steering vector added to resid_post[l] at every position (where llama.cpp adds a control
    vector), or to one head's z. `vector` has the shape of one position of what is changed ([d] for a stream), broadcast."""

    __slots__ = ("vector",)

    def __init__(self, point: str, layer: int | None, vector, head: int | None = None, positions=None):
        super().__init__(point, layer, head, positions)
        if point in PATTERNS:
            raise ValueError(f"adding to {point} is not defined per position; use Patch")
        self.vector = np.asarray(vector)

    def new(self, old: np.ndarray, whole: tuple) -> np.ndarray:
        return old + self.vector.astype(old.dtype, copy=False)


class Start:
    """Where a pass begins, for patching: layer `layer` reads `resid` as its stream ([n, d], or [B, n, d]: B streams,
    such as the same text patched at B different positions, run through the later layers in one batched pass).
    The layers before it are not run; `resid` is resid_pre[layer] (resid_pre[0] = the embeddings).

    `layer` may also be one layer per stream, in increasing order: stream b joins the batch at layer[b] (resid[b] is
    its resid_pre there), so streams patched at different layers share the passes of the layers after. The points
    of a layer then hold the streams that have joined by it; the kept ones after the last layer, every stream."""

    __slots__ = ("layer", "resid", "joins")

    def __init__(self, layer, resid):
        self.resid = np.asarray(resid)
        if self.resid.ndim not in (2, 3):
            raise ValueError(f"Start's resid is [n, d] or [B, n, d], not {list(self.resid.shape)}")
        joins = np.atleast_1d(np.asarray(layer, dtype=np.int64))  # [B] or [1]: the layer each stream joins at
        if joins.size > 1 and (self.resid.ndim != 3 or len(joins) != len(self.resid) or (np.diff(joins) < 0).any()):
            raise ValueError("Start's layers are one per stream of resid [B, n, d], in increasing order")
        self.layer, self.joins = int(joins[0]), joins

    def joining(self, l: int) -> np.ndarray | None:
        """The streams that join at layer l after the first ([b, n, d]), or None."""
        if len(self.joins) == 1 or l == self.layer:
            return None
        here = self.joins == l
        return self.resid[here] if here.any() else None

    def first(self) -> np.ndarray:  # the streams the first layer reads: [n, d], [B, n, d], or those joining there
        return self.resid if len(self.joins) == 1 else self.resid[self.joins == self.layer]


def edits_at(edits, point: str, layer: int | None) -> list:
    """The edits of one point of one layer, in the order given."""
    return [e for e in edits if e.point == point and e.layer == layer]


def apply_edits(edits, point: str, layer: int | None, value: np.ndarray) -> np.ndarray:
    """`value` with the edits of (point, layer) made, in a copy when there are any (the caller may still hold it)."""
    mine = edits_at(edits, point, layer)
    if not mine:
        return value
    value = np.array(value)
    for edit in mine:
        edit.apply(value)
    return value
