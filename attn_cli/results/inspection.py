"""`attn inspect` over word vectors: the heads' matrices, the embedding shift, the sense meter.

The result objects are plain classes (attn_cli.records), not dataclasses: they are defined on
every start of `inspect`, and a dataclass compiles its methods then (~0.3 ms each class).
"""

from functools import lru_cache

from attn_cli.records import Record, ValueRecord


WEIGHT_DIGITS = 7  # 7 significant digits keep every row's sum within 5e-7 of 1
NUMBER_DIGITS = 6  # scores, norms, embeddings
SINK_TOKEN = "∅"  # the key that writes nothing (a head with a sink), where a key token is named


_TENS: list = []  # [10^0 .. 10^22] as one array, built on first use


def _powers_of_ten():
    if not _TENS:
        import numpy as np

        _TENS.append(np.array([float(10**i) for i in range(23)]))  # exact: every 10^i up to 10^22 is a double
    return _TENS[0]


def significant(a, digits):
    """`a` rounded to `digits` significant digits (an int, or one per element); floats that print
    short (0.42, not 0.41999...). Zero, inf and NaN pass through unchanged.
    """
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    size = np.abs(a)
    exponent = np.log10(size, out=np.full_like(size, -np.inf), where=size > 0)  # 0 and NaN -> -inf: 22 decimals
    decimals = np.fmin(np.fmax(digits - 1 - np.floor(exponent), 0), 22)  # inf -> 0 decimals
    scale = _powers_of_ten()[decimals.astype(np.intp)]
    return np.rint(a * scale) / scale


@lru_cache(maxsize=64)
def rounded_score(x: float) -> float:
    """A head's fixed number (its sink's score) as JSON writes it: rounded once, not on every line."""
    return float(significant(x, NUMBER_DIGITS))


def _with_nulls(a, hidden) -> list:
    """Rows of numbers with None where `hidden` is True (masked entries)."""
    if hidden is None:
        return a.tolist()
    cells = a.astype(object)  # the same Python floats as a.tolist()
    cells[hidden] = None
    return cells.tolist()


MATRIX_BLOCK = 1 << 16  # numbers of an [n, n] matrix rounded and written at a time by a streamed document


def _streamed(matrix, digits: int, hidden=None):  # [n, n] -> output.Rows of its rows, rounded as they are written
    """The rows of `matrix` rounded to `digits` significant digits (None where `hidden`), a block at a time."""
    from attn_cli.io.output import Rows

    step = max(1, MATRIX_BLOCK // max(1, matrix.shape[1]))

    def blocks():
        for r0 in range(0, len(matrix), step):
            rows = slice(r0, r0 + step)
            yield _with_nulls(significant(matrix[rows], digits), None if hidden is None else hidden[rows])

    return Rows(blocks)


def _norms(rows):  # [n, d] -> [n]
    import numpy as np

    return np.linalg.norm(rows, axis=1)


def row_cosines(a, b):  # [..., d], [..., d] -> [...]: cos(a_i, b_i), 0 where either row is zero
    import numpy as np

    dots = np.asarray(np.sum(a * b, axis=-1))
    norms = np.asarray(np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


class HeadView(Record):
    """One head over one sentence: its matrices at every step (queries are rows). Holds arrays: compared by identity."""

    __slots__ = ("name", "d_k", "noise", "description", "scores", "scaled", "weights", "allowed", "delta", "delta_self",
                 "delta_context", "top_weight", "top_weight_scaled", "distance", "sink", "sink_weights")

    def __init__(self, name: str, d_k: int, noise: bool, description: str, scores, scaled, weights, allowed, delta=None,
                 delta_self=None, delta_context=None, top_weight: float | None = None, top_weight_scaled: float | None = None,
                 distance: list | None = None, sink: float | None = None, sink_weights=None):
        self.name = name
        self.d_k = d_k
        self.noise = noise  # untrained random weights: the pattern means nothing
        self.description = description
        self.scores = scores  # [n, n] Q K^T before scaling
        self.scaled = scaled  # [n, n] Q K^T / sqrt(d_k) (Q K^T itself with --no-scale) - distance penalty (heads with one), -inf where masked
        self.weights = weights  # [n, n] softmax over keys; rows sum to 1 (less the sink's weight, for a head with one)
        self.allowed = allowed  # [n, n] bool, True where the query may see the key; None = every key
        self.delta = delta  # [n, d] this head's Delta E
        self.delta_self = delta_self  # [n, d] its self part, w_ii v_i (then W_O)
        self.delta_context = delta_context  # [n, d] its context part, sum_{j != i} w_ij v_j (then W_O)
        self.top_weight = top_weight  # with --no-scale: mean over rows of the largest weight, as run
        self.top_weight_scaled = top_weight_scaled  # with --no-scale: the same had the scores been divided by sqrt(d_k)
        self.distance = distance  # [before, after, self]: the score a key loses per token before / after the query (ALiBi), and the query itself; None = none
        self.sink = sink  # the score of the key every query sees that writes nothing (None: the head has none)
        self.sink_weights = sink_weights  # [n] each query's weight on it (None without a sink)

    def stage_matrix(self, stage: str):
        """The matrix at `stage` with NaN where masked (for the raw scores: where the mask will hide them)."""
        import numpy as np

        m = {"weights": self.weights, "scores": self.scores}.get(stage, self.scaled)
        return m if self.allowed is None else np.where(self.allowed, m, np.nan)

    def norm_rows(self) -> list:  # [3, n]: |Delta E|, |context part|, |self part| per token
        return [_norms(self.delta), _norms(self.delta_context), _norms(self.delta_self)]


class SenseRow(ValueRecord):
    """The sense meter for one token: its score for each sense before (E) and after (E') the heads."""

    __slots__ = ("index", "token", "names", "before", "after", "nearest_before", "nearest_after")

    def __init__(self, index: int, token: str, names: list, before: list, after: list, nearest_before: str, nearest_after: str):
        self.index = index
        self.token = token
        self.names = names  # sense names
        self.before = before  # mean cosine of E_i with each sense's probe words
        self.after = after  # the same for E'_i
        self.nearest_before = nearest_before  # the sense scoring highest before
        self.nearest_after = nearest_after  # and after

    @property
    def change(self) -> list:
        return [a - b for a, b in zip(self.after, self.before)]

    def to_dict(self) -> dict:
        import numpy as np

        before, after, change = (significant(np.array(x), NUMBER_DIGITS).tolist() for x in (self.before, self.after, self.change))
        return {
            "index": self.index,
            "token": self.token,
            "senses": [{"name": n, "before": b, "after": a, "change": c} for n, b, a, c in zip(self.names, before, after, change)],
            "nearest_before": self.nearest_before,
            "nearest_after": self.nearest_after,
        }


TOKEN_NUMBERS = ("delta_norms", "delta_context_norms", "delta_self_norms", "input_norms", "cosines", "context_cosines")
HEAD_NUMBERS = ("delta_norms", "delta_context_norms", "delta_self_norms", "cosines", "context_cosines")  # each head's, in number_rows


class InspectResult(Record):
    """Everything `attn inspect` reports for one sentence: the view, JSON and CSV all read it. Holds arrays: compared by identity."""

    __slots__ = ("tokens", "unknown", "mask", "position", "heads", "e", "delta", "e_prime", "stage", "with_embeddings", "near_input",
                 "near_output", "delta_self", "delta_context", "scale", "senses", "senses_note")

    def __init__(self, tokens: list, unknown: list, mask: str, position: bool, heads: list, e, delta, e_prime, stage: str | None = None,
                 with_embeddings: bool = False, near_input: list | None = None, near_output: list | None = None, delta_self=None,
                 delta_context=None, scale: bool = True, senses: list | None = None, senses_note: str | None = None):
        self.tokens = tokens
        self.unknown = unknown  # words without a vector (skipped or zeroed under --oov)
        self.mask = mask  # "causal" | "none"
        self.position = position
        self.heads = heads  # [HeadView]
        self.e = e  # [n, d] input embeddings (word vector + position)
        self.delta = delta  # [n, d] summed Delta E of every head
        self.e_prime = e_prime  # [n, d] E + Delta E
        self.stage = stage  # with --stage: report each head's matrix at that step
        self.with_embeddings = with_embeddings
        self.near_input = near_input  # keys nearest to each E (the token itself left out)
        self.near_output = near_output  # keys nearest to each E'
        self.delta_self = delta_self  # [n, d] summed self parts, w_ii v_i (then W_O)
        self.delta_context = delta_context  # [n, d] summed context parts, sum_{j != i} w_ij v_j (then W_O)
        self.scale = scale  # scores divided by sqrt(d_k) (False: --no-scale)
        self.senses = senses  # [SenseRow] with --sense or --sense-set
        self.senses_note = senses_note  # why no token was measured against a sense set

    @property
    def input_norms(self):
        return _norms(self.e)

    @property
    def delta_norms(self):
        return _norms(self.delta)

    @property
    def delta_context_norms(self):
        return _norms(self.delta_context)

    @property
    def delta_self_norms(self):
        return _norms(self.delta_self)

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
        norms = np.sqrt(np.einsum("knd,knd->kn", rows, rows))  # [k, n]
        dots = np.einsum("nd,knd->kn", e, rows)  # [k, n]: E . each row (used for the rows that are moved embeddings)
        scale = norms[3] * norms  # [k, n]
        cos = np.divide(dots, scale, out=np.zeros_like(dots), where=scale > 0)  # [k, n]: cos(E, row)
        heads = np.concatenate([norms[6:], cos[6:]]).reshape(2, len(self.heads), 5, -1)  # [norm | cos, h, 5, n]
        per_head_numbers = np.concatenate([heads[0, :, :3], heads[1, :, 3:]], axis=1)  # [h, 5, n]: 3 norms, then 2 cosines
        return np.concatenate([norms[:4], cos[4:6], per_head_numbers.reshape(-1, len(e))])  # delta, context, self, input, cos, context cos, heads

    def rounded_numbers(self, with_weights: bool = True) -> tuple[list | None, dict, list]:
        """Every head's weights (None without `with_weights`), the per-token numbers and each head's
        norms and cosines, rounded in one pass (it runs once per streamed line):
        (weights [h][n][n], {name: [n]}, [{name: [n]}] per head)."""
        import numpy as np

        n, n_heads = len(self.tokens), len(self.heads)
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

    def head_dict(self, h: int, weights, norms: dict, stream: bool = False) -> dict:
        head = self.heads[h]
        norms = dict(norms)
        sink_weights = norms.pop("sink", None)  # rounded with the other numbers (rounded_numbers)
        out = {"name": head.name, "d_k": head.d_k, "description": head.description, "noise": head.noise,
               "weights": _streamed(head.weights, WEIGHT_DIGITS) if stream else weights, **norms}  # norms, then cosines
        if head.distance is not None:  # [before, after, self]: what a key loses for where it stands
            out["distance"] = head.distance
        if head.sink is not None:  # the key that writes nothing: its score and each query's weight on it
            out["sink"] = {"score": rounded_score(head.sink), "weights": sink_weights}
        if head.top_weight is not None:  # --no-scale: how peaked the rows are, as run and had they been scaled
            out["mean_top_weight"] = float(significant(head.top_weight, NUMBER_DIGITS))
            out["mean_top_weight_scaled"] = float(significant(head.top_weight_scaled, NUMBER_DIGITS))
        if self.stage:  # named by what it holds: Q K^T as computed (scores), or scaled and masked (masked)
            key, matrix = ("scores", head.scores) if self.stage == "scores" else ("masked", head.scaled)
            hidden = None if head.allowed is None else ~head.allowed  # hidden entries become null
            out[key] = _streamed(matrix, NUMBER_DIGITS, hidden) if stream else _with_nulls(significant(matrix, NUMBER_DIGITS), hidden)
        return out

    def document(self) -> dict:
        """to_dict(stream=True): the JSON document with its [n, n] matrices written block by block."""
        return self.to_dict(stream=True)

    def rows(self):
        """Tidy rows, one per (layer, head, query, key): indices, tokens, the score Q.K, the scaled
        score (Q.K itself with --no-scale), both empty where the mask hides the key, and the weight."""
        import numpy as np

        n = len(self.tokens)
        queries, keys = np.divmod(np.arange(n * n), n)
        for head in self.heads:
            hidden = None if head.allowed is None else ~head.allowed
            scores = _with_nulls(significant(head.scores, NUMBER_DIGITS), hidden)
            scaled = _with_nulls(significant(head.scaled, NUMBER_DIGITS), hidden)
            weights = significant(head.weights, WEIGHT_DIGITS).ravel().tolist()
            sunk = None if head.sink is None else significant(head.sink_weights, WEIGHT_DIGITS).tolist()
            for c, (i, j) in enumerate(zip(queries.tolist(), keys.tolist())):
                yield {"layer": 0, "head": head.name, "query": i, "key": j, "query_token": self.tokens[i], "key_token": self.tokens[j],
                       "score": scores[i][j], "scaled": scaled[i][j], "weight": weights[c]}
                if sunk is not None and j == n - 1:  # the sink after each query's keys: no token, no Q.K, its score as compared
                    yield {"layer": 0, "head": head.name, "query": i, "key": None, "query_token": self.tokens[i], "key_token": SINK_TOKEN,
                           "score": None, "scaled": rounded_score(head.sink), "weight": sunk[i]}

    def to_dict(self, stream: bool = False) -> dict:
        """The JSON document. With `stream`, each head's [n, n] matrices are output.Rows, rounded
        block by block as output.write_json writes them: the same text, never whole in memory."""
        weights, per_token, per_head = self.rounded_numbers(with_weights=not stream)
        out = {
            "tokens": self.tokens,
            "mask": self.mask,
            "position": self.position,
            "scaled": self.scale,
            "unknown": self.unknown,
            "heads": [self.head_dict(h, w, norms, stream) for h, (w, norms) in enumerate(zip(weights or [None] * len(self.heads), per_head))],
            **per_token,
        }
        if self.senses is not None:
            out["senses"] = [row.to_dict() for row in self.senses]
        if self.near_input is not None:
            out["neighbors"] = {"input": self.near_input, "output": self.near_output}
        if self.with_embeddings:
            out["embeddings"] = {
                "input": significant(self.e, NUMBER_DIGITS).tolist(),
                "output": significant(self.e_prime, NUMBER_DIGITS).tolist(),
            }
        return out
