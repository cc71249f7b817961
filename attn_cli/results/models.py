"""The result objects of the --model commands (`inspect --model`, `model info`, `heads find`).

Kept apart from attn_cli.results so the GloVe path does not pay for defining them at start-up.
"""

from dataclasses import asdict, dataclass

from attn_cli.results import NUMBER_DIGITS, WEIGHT_DIGITS, HeadView, _with_nulls, significant

@dataclass
class ModelInfo:
    name: str
    path: str
    type: str  # "bert" | "gpt2"
    mask: str  # "none" (encoder) | "causal" (decoder)
    layers: int
    heads: int  # per layer
    d_model: int
    d_k: int  # d_model / heads
    d_ff: int
    vocabulary: int
    max_positions: int
    activation: str
    per_head: dict  # W_Q, W_K, W_V shapes [d, d_k], W_O's share [d_k, d]; weights and biases counted
    parameters: dict  # embeddings, attention, mlp, layer_norms, total: counted from the loaded tensors

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ResidualRow:
    """One step of a token's residual stream: E (layer 0), then each layer's output."""

    layer: int
    norm: float  # |x_l|
    attn_update: float | None  # |what the layer's attention changed| (None for E)
    mlp_update: float | None  # |what the layer's MLP changed|
    cosine_previous: float | None  # cos(x_l, x_{l-1})
    cosine_input: float  # cos(x_l, E)
    nearest: list  # vocabulary tokens nearest to x_l in the input-embedding space

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ModelResult:
    """A checkpoint over one sentence: every head's weights and what each layer did to each token."""

    model: dict  # name, type, layers, heads, d_model, d_k
    tokens: list  # the units shown: word pieces, or words with --words (special tokens left out with --hide-special)
    pieces: list  # the tokenizer's pieces, all of them
    special: list  # per unit: a special token ([CLS], [SEP], ...)
    words: bool
    hide_special: bool
    mask: str  # "none" (encoder) | "causal" (decoder)
    weights: object  # [L, H, g, g] every head's weights over the units shown
    allowed: object  # [g, g] bool where a query may see a key; None = all
    selected: list  # [(layer, head)] the heads shown in full and in JSON
    special_weight: object  # [L, H, g] with --hide-special: each query's weight on the hidden special tokens
    attn_norms: object  # [L, n] |attention update| per layer and piece
    mlp_norms: object  # [L, n] |MLP update|
    norms: object  # [L + 1, n] |x| of E and of each layer's output
    layer_cosines: object  # [L, n] cos(x_l, x_{l-1})
    scores: object = None  # [L, H, n, n] with --stage: Q K^T / sqrt(d_k), -inf where masked
    stage: str | None = None
    focus_piece: int | None = None
    residual: list | None = None  # [ResidualRow] for --focus
    focus_path: object = None  # [L + 1, d] the focus piece's vector: E, then after each layer

    def head_view(self, layer: int, head: int) -> HeadView:
        """One head as the GloVe views know it, so heatmaps and focus tables are shared."""
        scaled = None if self.scores is None else self.scores[layer, head]
        raw = None if scaled is None else scaled * self.model["d_k"] ** 0.5  # Q K^T before the division
        return HeadView(
            name=f"{layer}.{head}", d_k=self.model["d_k"], noise=False, description="",
            scores=raw, scaled=scaled, weights=self.weights[layer, head],
            allowed=self.allowed,
        )

    def rows(self):
        """Tidy rows, one per (layer, head, query, key) of the heads shown: as GloVe inspect's, the scores
        filled with --stage (empty where masked)."""
        import numpy as np

        n = len(self.tokens)
        for l, h in self.selected:
            view = self.head_view(l, h)
            weights = significant(view.weights, WEIGHT_DIGITS).tolist()
            if view.scaled is not None:
                hidden = ~np.isfinite(view.scaled)
                scores, scaled = (_with_nulls(significant(np.where(hidden, 0.0, m), NUMBER_DIGITS), hidden) for m in (view.scores, view.scaled))
            for i in range(n):
                for j in range(n):
                    yield {"layer": l, "head": h, "query": i, "key": j, "query_token": self.tokens[i], "key_token": self.tokens[j],
                           "score": None if view.scaled is None else scores[i][j], "scaled": None if view.scaled is None else scaled[i][j],
                           "weight": weights[i][j]}

    def to_dict(self) -> dict:
        import numpy as np

        heads = []
        for l, h in self.selected:
            head = {"name": f"{l}.{h}", "layer": l, "head": h, "weights": significant(self.weights[l, h], WEIGHT_DIGITS).tolist()}
            if self.special_weight is not None:
                head["special_weight"] = significant(self.special_weight[l, h], WEIGHT_DIGITS).tolist()
            if self.scores is not None:  # named as in GloVe inspect: scores = Q K^T, masked = Q K^T / sqrt(d_k) with the mask
                hidden = ~np.isfinite(self.scores[l, h])
                matrix = np.where(hidden, 0.0, self.scores[l, h]) * (self.model["d_k"] ** 0.5 if self.stage == "scores" else 1.0)
                head["scores" if self.stage == "scores" else "masked"] = _with_nulls(significant(matrix, NUMBER_DIGITS), hidden)
            heads.append(head)
        layers = [
            {
                "layer": l,
                "attn_update_norms": significant(self.attn_norms[l], NUMBER_DIGITS).tolist(),
                "mlp_update_norms": significant(self.mlp_norms[l], NUMBER_DIGITS).tolist(),
                "norms": significant(self.norms[l + 1], NUMBER_DIGITS).tolist(),
                "cosines_previous": significant(self.layer_cosines[l], NUMBER_DIGITS).tolist(),
            }
            for l in range(len(self.attn_norms))
        ]
        out = {
            "model": self.model, "tokens": self.tokens, "pieces": self.pieces, "special": self.special,
            "words": self.words, "hide_special": self.hide_special, "mask": self.mask,
            "heads": heads, "input_norms": significant(self.norms[0], NUMBER_DIGITS).tolist(), "layers": layers,
        }
        if self.residual is not None:
            out["focus"] = {"piece": self.focus_piece, "token": self.pieces[self.focus_piece], "residual": [r.to_dict() for r in self.residual]}
        return out


@dataclass
class HeadsFound:
    """`attn heads find`: every head of a model ranked on labelled links, beside baselines."""

    file: str
    model: str
    mask: str
    sort: str  # the measure heads are ranked by
    sentences: int
    queries: int  # linked queries scored
    beyond_previous: int  # of them, queries with a key other than the previous word (top_beyond_previous counts these)
    dropped: int  # links that cannot be served (a key after its query under a causal mask, or a word linked to itself)
    heads: list  # [{"layer", "head", "name", "top_on_key", "exact_top", "key_weight", "top_beyond_previous"}], best first
    baselines: list  # [{"name": "previous" | "even", ...}]

    def to_dict(self) -> dict:
        return asdict(self)
