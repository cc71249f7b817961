"""`attn inspect`'s one result, for every model: the view, JSON and CSV all read it. Built whole by attn_cli.analysis.inspect.

A result holds the sections its model and options produced (None where absent), and writes each
section it holds:
- every result: tokens, mask, heads (each head shown in full: its weights, and its scores at a --stage);
- a checkpoint's: model, pieces, special, words, hide_special, every head's weights (the overview),
  the residual stream's numbers per layer, and the --focus token's path through the layers;
- the lesson's heads over word vectors: position, scaled, unknown, the update E -> E' = E + Delta E
  with its self and context parts (per token and per head), E' neighbours, the sense meter, E and E'.

Plain classes (attn_cli.records), not dataclasses: they are defined on every start of `inspect`,
and a dataclass compiles its methods then (~0.3 ms each class). They hold arrays: compared by identity.
"""

from attn_cli.records import Record
from attn_cli.results.numbers import NUMBER_DIGITS, SINK_TOKEN, WEIGHT_DIGITS, norms, rounded_score, row_cosines, significant, streamed, with_nulls


class HeadView(Record):
    """One head over one sentence: its matrices at every step (queries are rows)."""

    __slots__ = ("name", "layer", "index", "d_k", "noise", "description", "scores", "masked", "weights", "allowed", "delta",
                 "delta_self", "delta_context", "top_weight", "top_weight_scaled", "distance", "sink", "sink_weights", "special_weight",
                 "value_norms", "window")

    def __init__(self, name: str, d_k: int, weights, allowed, *, layer: int | None = None, index: int | None = None, noise: bool = False,
                 description: str | None = None, scores=None, masked=None, delta=None, delta_self=None, delta_context=None,
                 top_weight: float | None = None, top_weight_scaled: float | None = None, distance: list | None = None,
                 sink: float | None = None, sink_weights=None, special_weight=None, value_norms=None, window: int | None = None):
        self.name = name  # "adjective", "identity", ... or "LAYER.HEAD" of a checkpoint
        self.layer = layer  # a checkpoint's layer and head index (None: a named head of the lesson's one layer)
        self.index = index
        self.d_k = d_k
        self.noise = noise  # untrained random weights: the pattern means nothing
        self.description = description  # a named head's description (None: a checkpoint's head, which has none)
        self.scores = scores  # [n, n] Q K^T before scaling (None: not kept)
        self.masked = masked  # [n, n] Q K^T / sqrt(d_k) (Q K^T itself with --no-scale) - distance penalty (heads with one), -inf where masked (None: not kept)
        self.weights = weights  # [n, n] softmax over keys; rows sum to 1 (less the sink's weight, for a head with one)
        self.allowed = allowed  # [n, n] bool, True where the query may see the key; None = every key
        self.delta = delta  # [n, d] this head's Delta E (the lesson's heads)
        self.delta_self = delta_self  # [n, d] its self part, w_ii v_i (then W_O)
        self.delta_context = delta_context  # [n, d] its context part, sum_{j != i} w_ij v_j (then W_O)
        self.top_weight = top_weight  # with --no-scale: mean over rows of the largest weight, as run
        self.top_weight_scaled = top_weight_scaled  # with --no-scale: the same had the scores been divided by sqrt(d_k)
        self.distance = distance  # [before, after, self]: the score a key loses per token before / after the query (ALiBi), and the query itself; None = none
        self.sink = sink  # the score of the key every query sees that writes nothing (None: the head has none)
        self.sink_weights = sink_weights  # [n] each query's weight on it (None without a sink)
        self.special_weight = special_weight  # [g] with --hide-special: each query's weight on the hidden special tokens
        self.value_norms = value_norms  # [n, n] with --weigh norm: ||alpha_ij f(x_j)||, the length of what key j adds to query i (analysis.flow)
        self.window = window  # a local layer's sliding window (its queries see their last `window` keys: `allowed` says so); None: none

    def stage_matrix(self, stage: str):
        """The matrix at `stage` with NaN where masked (for the raw scores: where the mask will hide them)."""
        import numpy as np

        m = {"weights": self.weights, "scores": self.scores, "norms": self.value_norms}.get(stage, self.masked)
        return m if self.allowed is None else np.where(self.allowed, m, np.nan)

    def norm_rows(self) -> list:  # [3, n]: |Delta E|, |context part|, |self part| per token
        return [norms(self.delta), norms(self.delta_context), norms(self.delta_self)]


TOKEN_NUMBERS = ("delta_norms", "delta_context_norms", "delta_self_norms", "input_norms", "cosines", "context_cosines")
HEAD_NUMBERS = ("delta_norms", "delta_context_norms", "delta_self_norms", "cosines", "context_cosines")  # each head's, in number_rows
SLOTS = (
    "tokens", "mask", "heads", "stage", "focus",  # every result
    "model", "caption", "pieces", "special", "words", "hide_special", "weights", "allowed", "special_weight",  # a checkpoint's units and heads
    "attn_norms", "mlp_norms", "norms", "layer_cosines", "first_token", "focus_piece", "residual", "focus_path",  # its residual stream
    "unknown", "position", "scale", "e", "delta", "e_prime", "delta_self", "delta_context",  # the lesson's heads and their update
    "with_embeddings", "near_input", "near_output", "senses", "senses_note",
    "value_norms", "special_shares", "rollout", "rollout_layers",  # --weigh norm (a checkpoint's every head [L, H, g, g]; weight and norm
    # on special tokens), --rollout [g, g] and the layers (A, B) it ran through, both included
    "sense_meter",  # every model's: one word read against its senses at each layer (E and E' for the lesson's heads), and alone
    "layer_allowed",  # [L, g, g] each layer's visible keys when some layer has a sliding window (else None: `allowed` for all)
    "ablation",  # --ablate: the heads turned off before the run shown (analysis.ablate.Ablation)
    "steered",  # --steer: [{"file", "scale", "layers"}], the control vectors added to the run shown
)


class InspectResult(Record):
    """Everything `attn inspect` reports for one sentence (see the module's docstring for its sections)."""

    __slots__ = SLOTS

    def __init__(self, tokens: list, mask: str, heads: list, stage: str | None = None, **sections):
        self.tokens = tokens  # the units shown: tokens, word pieces, or words (--words)
        self.mask = mask  # "causal" | "none"
        self.heads = heads  # [HeadView]: the heads shown in full and in JSON
        self.stage = stage  # with --stage: report each head's matrix at that step
        for name in SLOTS[4:]:  # focus: the unit --focus names (its row under each of the lesson's heads)
            setattr(self, name, sections.pop(name, None))
        if sections:
            raise TypeError(f"InspectResult has no section {', '.join(sections)}")
        # a checkpoint's: model (summary), caption (how to read its updates; not in JSON), pieces (every piece), special (per unit), words, hide_special (flags),
        #   weights [L, H, g, g] (every head), allowed [g, g], special_weight [L, H, g] (--hide-special),
        #   attn_norms, mlp_norms [L, n], norms [L + 1, n], layer_cosines [L, n], first_token [L, H] (each head's mean weight on
        #   the first token, over the queries after it: a decoder's attention sink), focus_piece, residual [ResidualRow], focus_path [L + 1, d]
        # the lesson's heads: unknown (words without a vector), position, scale (flags), e, delta, e_prime, delta_self,
        #   delta_context [n, d], with_embeddings, near_input / near_output (keys nearest E and E'), senses [SenseRow], senses_note

    # --- the update E -> E' (the lesson's heads) -----------------------------------------------------

    @property
    def input_norms(self):
        return norms(self.e)

    @property
    def delta_norms(self):
        return norms(self.delta)

    @property
    def delta_context_norms(self):
        return norms(self.delta_context)

    @property
    def delta_self_norms(self):
        return norms(self.delta_self)

    @property
    def cosines(self):  # cos(E_i, E'_i)
        return row_cosines(self.e, self.e_prime)

    @property
    def context_cosines(self):  # cos(E_i, E_i + Delta E_context_i): the move the other tokens alone cause
        return row_cosines(self.e, self.e + self.delta_context)

    def head_cosines(self, h: int):  # -> [n], [n]: cos(E, E + Delta E_h) and cos(E, E + Delta E_h context)
        head = self.heads[h]
        return row_cosines(self.e, self.e + head.delta), row_cosines(self.e, self.e + head.delta_context)

    def number_rows(self):  # -> [6 + 5 * heads, n]: TOKEN_NUMBERS, then HEAD_NUMBERS for each head
        """Every per-token number of the JSON at once: one stack of [n, d] rows, one pass over it."""
        import numpy as np

        e = self.e
        per_head = [m for h in self.heads for m in (h.delta, h.delta_context, h.delta_self, e + h.delta, e + h.delta_context)]
        rows = np.stack([self.delta, self.delta_context, self.delta_self, e, self.e_prime, e + self.delta_context, *per_head])  # [k, n, d]
        lengths = np.sqrt(np.einsum("knd,knd->kn", rows, rows))  # [k, n]
        dots = np.einsum("nd,knd->kn", e, rows)  # [k, n]: E . each row (used for the rows that are moved embeddings)
        scale = lengths[3] * lengths  # [k, n]
        cos = np.divide(dots, scale, out=np.zeros_like(dots), where=scale > 0)  # [k, n]: cos(E, row)
        heads = np.concatenate([lengths[6:], cos[6:]]).reshape(2, len(self.heads), 5, -1)  # [norm | cos, h, 5, n]
        per_head_numbers = np.concatenate([heads[0, :, :3], heads[1, :, 3:]], axis=1)  # [h, 5, n]: 3 norms, then 2 cosines
        return np.concatenate([lengths[:4], cos[4:6], per_head_numbers.reshape(-1, len(e))])  # delta, context, self, input, cos, context cos, heads

    def rounded_numbers(self, with_weights: bool = True) -> tuple[list | None, dict, list]:
        """Every head's weights (None without `with_weights`), the per-token numbers and each head's
        norms and cosines, rounded in one pass (it runs once per streamed line):
        (weights [h][n][n], {name: [n]}, [{name: [n]}] per head). Results without the update: the weights alone."""
        import numpy as np

        n, n_heads = len(self.tokens), len(self.heads)
        if self.e is None:
            weights = [significant(h.weights, WEIGHT_DIGITS).tolist() for h in self.heads] if with_weights else None
            return weights, {}, [{} for _ in self.heads]
        n_weights = n * n * n_heads if with_weights else 0
        sunk = [h for h in range(n_heads) if self.heads[h].sink is not None]  # heads whose sink weights are written too
        numbers = self.number_rows()
        flat = np.concatenate([h.weights.ravel() for h in self.heads if with_weights] + [numbers.ravel()]
                              + [self.heads[h].sink_weights for h in sunk])
        digits = np.repeat([WEIGHT_DIGITS, NUMBER_DIGITS, WEIGHT_DIGITS], [n_weights, numbers.size, n * len(sunk)])
        flat = significant(flat, digits)
        end = n_weights + numbers.size
        numbers = flat[n_weights:end].reshape(-1, n).tolist()
        weights = flat[:n_weights].reshape(n_heads, n, n).tolist() if with_weights else None
        per_token = dict(zip(TOKEN_NUMBERS, numbers))
        rest = numbers[len(TOKEN_NUMBERS):]
        k = len(HEAD_NUMBERS)
        per_head = [dict(zip(HEAD_NUMBERS, rest[k * h : k * h + k])) for h in range(n_heads)]
        for h, row in zip(sunk, flat[end:].reshape(-1, n).tolist()):
            per_head[h]["sink"] = row
        return weights, per_token, per_head

    # --- JSON and rows -----------------------------------------------------------------------------

    def head_dict(self, h: int, weights, numbers: dict, stream: bool = False) -> dict:
        import numpy as np

        head = self.heads[h]
        numbers = dict(numbers)
        sink_weights = numbers.pop("sink", None)  # rounded with the other numbers (rounded_numbers)
        out = {"name": head.name}
        if head.layer is not None:
            out.update(layer=head.layer, head=head.index)
        if head.description is not None:
            out.update(d_k=head.d_k, description=head.description, noise=head.noise)
        if head.window is not None:  # a local layer: its queries see their last `window` keys
            out["window"] = head.window
        out["weights"] = streamed(head.weights, WEIGHT_DIGITS) if stream else weights
        out.update(numbers)  # norms, then cosines
        if head.special_weight is not None:
            out["special_weight"] = significant(head.special_weight, WEIGHT_DIGITS).tolist()
        if head.value_norms is not None:  # ||alpha_ij f(x_j)||, null where masked
            hidden = None if head.allowed is None else ~head.allowed
            out["value_norms"] = streamed(head.value_norms, NUMBER_DIGITS, hidden) if stream else with_nulls(significant(head.value_norms, NUMBER_DIGITS), hidden)
        if head.distance is not None:  # [before, after, self]: what a key loses for where it stands
            out["distance"] = head.distance
        if head.sink is not None:  # the key that writes nothing: its score and each query's weight on it
            out["sink"] = {"score": rounded_score(head.sink), "weights": sink_weights}
        if head.top_weight is not None:  # --no-scale: how peaked the rows are, as run and had they been scaled
            out["mean_top_weight"] = float(significant(head.top_weight, NUMBER_DIGITS))
            out["mean_top_weight_scaled"] = float(significant(head.top_weight_scaled, NUMBER_DIGITS))
        if self.stage and head.masked is not None:  # named by what it holds: Q K^T as computed (scores), or scaled and masked (masked)
            key, matrix = ("scores", head.scores) if self.stage == "scores" else ("masked", head.masked)
            hidden = None if head.allowed is None else ~head.allowed  # hidden entries become null
            if head.layer is not None:
                matrix = np.where(np.isfinite(matrix), matrix, 0.0)  # a checkpoint's: -inf where hidden (written as null)
            out[key] = streamed(matrix, NUMBER_DIGITS, hidden) if stream else with_nulls(significant(matrix, NUMBER_DIGITS), hidden)
        return out

    def document(self) -> dict:
        """to_dict(stream=True): the JSON document with its [n, n] matrices written block by block."""
        return self.to_dict(stream=True)

    def rows(self):
        """Tidy rows, one per (layer, head, query, key): indices, tokens, the score Q.K, the scaled
        score (Q.K itself with --no-scale), both empty where the mask hides the key, and the weight.
        A checkpoint's scores are columns only where the pass kept them (score_columns)."""
        import numpy as np

        n = len(self.tokens)
        queries, keys = np.divmod(np.arange(n * n), n)
        with_score, with_scaled = self.score_columns()

        def cells(matrix, hidden):  # [n, n] -> rounded lists, None where hidden (a checkpoint's -inf too)
            matrix = np.where(np.isfinite(matrix), matrix, 0.0) if hidden is None else np.where(hidden | ~np.isfinite(matrix), 0.0, matrix)
            return with_nulls(significant(matrix, NUMBER_DIGITS), hidden)

        for head in self.heads:
            layer, name = (0, head.name) if head.layer is None else (head.layer, head.index)
            hidden = None if head.allowed is None else ~head.allowed
            scores = cells(head.scores, hidden) if with_score else None
            scaled = cells(head.masked, hidden) if with_scaled else None
            weights = significant(head.weights, WEIGHT_DIGITS).ravel().tolist()
            sunk = None if head.sink is None else significant(head.sink_weights, WEIGHT_DIGITS).tolist()
            norms = None if head.value_norms is None else significant(head.value_norms, NUMBER_DIGITS).ravel().tolist()
            for c, (i, j) in enumerate(zip(queries.tolist(), keys.tolist())):
                row = {"layer": layer, "head": name, "query": i, "key": j, "query_token": self.tokens[i], "key_token": self.tokens[j]}
                if with_score:
                    row["score"] = scores[i][j]
                if with_scaled:
                    row["scaled"] = scaled[i][j]
                row["weight"] = weights[c]
                if norms is not None:
                    row["value_norm"] = None if hidden is not None and hidden[i, j] else norms[c]
                yield row
                if sunk is not None and j == n - 1:  # the sink after each query's keys: no token, no Q.K, its score as compared
                    row = {"layer": layer, "head": name, "query": i, "key": None, "query_token": self.tokens[i], "key_token": SINK_TOKEN}
                    if with_score:
                        row["score"] = None
                    if with_scaled:
                        row["scaled"] = rounded_score(head.sink)
                    row["weight"] = sunk[i]
                    if norms is not None:
                        row["value_norm"] = 0.0
                    yield row

    def score_columns(self) -> tuple[bool, bool]:
        """Whether the rows carry `score` (Q.K) and `scaled`: always for the lesson's heads; for a checkpoint's,
        only what its pass kept (--stage scores: both; --stage masked: scaled; otherwise neither)."""
        if not self.heads or self.heads[0].layer is None:
            return True, True
        return (self.stage == "scores" and all(h.scores is not None for h in self.heads),
                self.stage in ("scores", "masked") and all(h.masked is not None for h in self.heads))

    def to_dict(self, stream: bool = False) -> dict:
        """The JSON document, each section the result holds. With `stream`, each head's [n, n] matrices are
        output.Rows, rounded block by block as output.write_json writes them: the same text, never whole in memory."""
        weights, per_token, per_head = self.rounded_numbers(with_weights=not stream)
        out = {} if self.model is None else {"model": self.model}
        if self.ablation:
            out.update(ablated=self.ablation.names, ablated_with=self.ablation.mode)
        if self.steered:
            out["steered"] = self.steered
        out["tokens"] = self.tokens
        if self.pieces is not None:
            out.update(pieces=self.pieces, special=self.special, words=self.words, hide_special=self.hide_special)
        out["mask"] = self.mask
        if self.position is not None:
            out.update(position=self.position, scaled=self.scale, unknown=self.unknown)
        out["heads"] = [self.head_dict(h, w, numbers, stream) for h, (w, numbers) in enumerate(zip(weights or [None] * len(self.heads), per_head))]
        out.update(per_token)
        if self.attn_norms is not None:
            out["input_norms"] = significant(self.norms[0], NUMBER_DIGITS).tolist()
            out["layers"] = [self.layer_dict(l) for l in range(len(self.attn_norms))]
        if self.special_shares is not None:  # over every head and query: the weight, and the value-weighted norm, on special tokens
            out["special_shares"] = dict(zip(("weight", "value_norm"), significant(self.special_shares, NUMBER_DIGITS).tolist()))
        if self.rollout is not None:
            out["rollout"] = significant(self.rollout, WEIGHT_DIGITS).tolist()
            out["rollout_layers"] = list(self.rollout_layers)
        if self.residual is not None:
            out["focus"] = {"piece": self.focus_piece, "token": self.pieces[self.focus_piece], "residual": [r.to_dict() for r in self.residual]}
        if self.senses is not None:
            out["senses"] = [row.to_dict() for row in self.senses]
        if self.sense_meter is not None or self.senses_note is not None:
            out["sense_meter"] = None if self.sense_meter is None else self.sense_meter.to_dict()
        if self.near_input is not None:
            out["neighbors"] = {"input": self.near_input, "output": self.near_output}
        if self.with_embeddings:
            out["embeddings"] = {"input": significant(self.e, NUMBER_DIGITS).tolist(), "output": significant(self.e_prime, NUMBER_DIGITS).tolist()}
        return out

    def layer_dict(self, l: int) -> dict:
        out = {
            "layer": l,
            "attn_update_norms": significant(self.attn_norms[l], NUMBER_DIGITS).tolist(),
            "mlp_update_norms": significant(self.mlp_norms[l], NUMBER_DIGITS).tolist(),
            "norms": significant(self.norms[l + 1], NUMBER_DIGITS).tolist(),
            "cosines_previous": significant(self.layer_cosines[l], NUMBER_DIGITS).tolist(),
        }
        if self.first_token is not None:  # per head: its mean weight on the first token (StreamingLLM's attention sink)
            out["first_token_weight"] = significant(self.first_token[l], WEIGHT_DIGITS).tolist()
        return out
