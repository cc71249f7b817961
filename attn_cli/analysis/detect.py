"""`attn heads detect`: every (layer, head) of a checkpoint scored against attention patterns, beside baselines.

The scores are TransformerLens's head detector (transformer_lens/head_detector.py). A pattern is
a 0/1 matrix P [n, n] of the query -> key pairs a head of that kind attends to; for a head's
weights A [n, n], with BOS (the first key) and the current token (the diagonal) optionally left
out of A (mul) or of the difference (abs):
    mul: sum(A * P) / sum(A)        the share of the head's weight that lands on the pattern
    abs: 1 - sum(|A - P|) / n       1 a perfect match, -1 a perfect mismatch
TransformerLens rounds the abs score to 3 decimals; attn does not (its demo's 0.6625 is unrounded).
A sequence's scores are averaged over sequences, as TransformerLens does for a list of prompts.

Patterns: previous (key i - 1), duplicate (an earlier copy of the query's token), induction (the
token after an earlier copy), first (key 0), special ([CLS], [SEP], BOS...), self (the diagonal).
Duplicate and induction heads are found on TransformerLens's protocol: random tokens, the same
sequence twice; the others on sentences.
"""

import numpy as np

from attn_cli.errors import DataError, InputError

PATTERNS = ("previous", "duplicate", "induction", "first", "special", "self")
REPEATED = ("duplicate", "induction")  # scored on a random sequence repeated
ABOUT = {
    "previous": "the token just before", "duplicate": "an earlier copy of the query's token",
    "induction": "the token after an earlier copy of the query's token", "first": "the first token",
    "special": "the special tokens the tokenizer adds", "self": "the query itself",
}
MAX_DRAWS = 200  # candidate tokens tried per token of the random sequence


def targets(name: str, ids: list[int], special: list[bool]) -> np.ndarray:  # -> [n, n] bool
    """The detection pattern P: True where a head of kind `name` puts its weight (TransformerLens's for previous, duplicate, induction)."""
    n = len(ids)
    tokens = np.asarray(ids)
    if name == "previous":
        return np.eye(n, k=-1, dtype=bool)
    if name in ("duplicate", "induction"):
        copies = (tokens[:, None] == tokens[None, :]) & np.tri(n, k=-1, dtype=bool)  # [n, n]: key j < i holds the query's token
        if name == "duplicate":
            return copies
        after = np.zeros((n, n), bool)
        after[:, 1:] = copies[:, :-1]  # the key right after each earlier copy ...
        return after & np.tri(n, dtype=bool)  # ... that the query can see
    if name == "first":
        out = np.zeros((n, n), bool)
        out[:, 0] = True
        return out
    if name == "special":
        return np.broadcast_to(np.asarray(special, dtype=bool)[None, :], (n, n)).copy()
    if name == "self":
        return np.eye(n, dtype=bool)
    raise ValueError(f"no pattern {name!r}")


def kept(n: int, exclude_bos: bool, exclude_current: bool) -> np.ndarray:  # -> [n, n] bool
    """The pairs a score counts: all but the first key (exclude_bos) and the diagonal (exclude_current)."""
    keep = np.ones((n, n), bool)
    if exclude_bos:
        keep[:, 0] = False
    if exclude_current:
        np.fill_diagonal(keep, False)
    return keep


def pattern_scores(weights: np.ndarray, pattern: np.ndarray, error: str = "mul", exclude_bos: bool = False,
                   exclude_current: bool = False) -> np.ndarray:  # [..., n, n], [n, n] -> [...]
    """TransformerLens's score of each matrix of the stack against the pattern (module docstring); NaN where mul has no weight left."""
    n = weights.shape[-1]
    a = np.asarray(weights, dtype=np.float64)
    keep = kept(n, exclude_bos, exclude_current)
    p = pattern.astype(np.float64)
    if error == "mul":
        a = a * keep
        total = a.sum(axis=(-2, -1))
        hit = (a * p).sum(axis=(-2, -1))
        return np.divide(hit, total, out=np.full_like(total, np.nan), where=total > 0)
    return 1.0 - (np.abs(a - p) * keep).sum(axis=(-2, -1)) / n


def scorable(pattern: np.ndarray, exclude_bos: bool, exclude_current: bool) -> bool:
    """Whether any pair of the pattern is left once the exclusions are made (else its score says nothing)."""
    return bool((pattern & kept(len(pattern), exclude_bos, exclude_current)).any())


def baseline_weights(n: int, causal: bool, rng: np.random.Generator) -> np.ndarray:  # -> [2, n, n]: even, random
    """Heads anyone could write down: even attention over the keys each query sees, and a head that puts all of a
    query's weight on one key it sees, drawn at random."""
    from attn_cli.analysis.links import even_weights

    seen = np.tri(n, dtype=bool) if causal else np.ones((n, n), bool)
    even = even_weights(n, seen if causal else None)
    counts = seen.sum(axis=1)
    pick = (rng.random(n) * counts).astype(int)  # [n]: the how-many-th visible key (causal: the key itself)
    chosen = np.array([np.flatnonzero(seen[i])[pick[i]] for i in range(n)])
    one = np.zeros((n, n))
    one[np.arange(n), chosen] = 1.0
    return np.stack([even, one])


def draw_tokens(model, length: int, seed: int) -> list[int]:
    """`length` distinct vocabulary ids, drawn at random (seeded), each a token the tokenizer gives back for its own text
    (no special or added tokens, no piece that only occurs inside a word)."""
    tok = model.tokenizer
    added = set(tok.get_added_tokens_decoder())
    size = tok.get_vocab_size()
    rng = np.random.default_rng(seed)
    chosen: dict[int, None] = {}  # in the order drawn
    for _ in range(MAX_DRAWS):
        for candidate in rng.integers(0, size, length).tolist():
            if candidate in added or candidate in chosen:
                continue
            text = tok.decode([candidate])
            if text and tok.encode(text, add_special_tokens=False).ids == [candidate]:
                chosen[candidate] = None
                if len(chosen) == length:
                    return list(chosen)
    raise DataError(f"{model.name}: found only {len(chosen)} of {length} tokens that stand for their own text in {MAX_DRAWS * length} draws")


def repeated_tokens(model, length: int, seed: int):
    """TransformerLens's induction protocol: a random sequence of `length` tokens, then the same again (inside the special
    tokens the tokenizer adds to any text)."""
    limit = model.spec.max_positions
    too_long = InputError(f"--length {length}: twice {length} tokens is more than the {limit} positions {model.name} has")
    if 2 * length > limit:  # before any draw
        raise too_long
    tokens = model.tokens_of(2 * draw_tokens(model, length, seed))
    if len(tokens.ids) > limit:  # with the special tokens around them
        raise too_long
    return tokens


class Sums:
    """Per-pattern running sums of the heads' scores [L, H] and of the baselines' [2] over the sequences scored."""

    def __init__(self, shape: tuple, names: list[str]):
        self.heads = {p: np.zeros(shape) for p in names}
        self.head_counts = {p: np.zeros(shape, np.int64) for p in names}
        self.baselines = {p: np.zeros(2) for p in names}
        self.sequences = {p: 0 for p in names}

    def add(self, name: str, heads: np.ndarray, baselines: np.ndarray) -> None:
        finite = np.isfinite(heads)
        self.heads[name] += np.where(finite, heads, 0.0)
        self.head_counts[name] += finite
        self.baselines[name] += np.nan_to_num(baselines)
        self.sequences[name] += 1

    def means(self, name: str) -> tuple[np.ndarray, np.ndarray]:  # -> [L, H] (NaN: never scored), [2]
        counts = self.head_counts[name]
        heads = np.divide(self.heads[name], counts, out=np.full(counts.shape, np.nan), where=counts > 0)
        return heads, self.baselines[name] / max(self.sequences[name], 1)


def score_sequence(model, tokens, names: list[str], sums: Sums, options: dict, rng: np.random.Generator) -> None:
    """One sequence through the model; each pattern it can be scored on, for every head and both baselines. The heads' weights
    are summed a block of query rows at a time as the pass makes them (analysis.blockwise): no [L, H, n, n] is kept."""
    from attn_cli.analysis.blockwise import PatternSums, baseline_blocks
    from attn_cli.models.points import Keep

    exclusions = {"exclude_bos": options["exclude_bos"], "exclude_current": options["exclude_current"]}
    heads = PatternSums(model.n_layers, model.n_heads, tokens.ids, tokens.special, names, **exclusions)
    model.forward(tokens, keep=Keep((), watch={"attn.pattern": heads.watch}))
    base = PatternSums(1, 2, tokens.ids, tokens.special, names, **exclusions)
    for r0, block in baseline_blocks(len(tokens.ids), model.causal, rng):  # [2, b, n]
        base.add(0, r0, 0, block)
    for name in names:
        if heads.scorable(name):
            sums.add(name, heads.scores(name, options["error"]), base.scores(name, options["error"])[0])


def detect_heads(model, sentences, source: str, patterns: list[str], *, error: str = "mul", exclude_bos: bool = False,
                 exclude_current: bool = False, length: int = 50, seed: int = 0, progress=None):
    """Every (layer, head) scored on each pattern, best first, beside the even and random baselines (results.detect.HeadsDetected).

    sentences: (line number, text) pairs for the patterns found on text; the repeated random
    sequence (length, seed) for duplicate and induction. progress(done) is called after each sequence.
    """
    from attn_cli.results.detect import HeadsDetected

    options = {"error": error, "exclude_bos": exclude_bos, "exclude_current": exclude_current}
    on_text = [p for p in patterns if p not in REPEATED]
    on_repeat = [p for p in patterns if p in REPEATED]
    sums = Sums((model.n_layers, model.n_heads), patterns)
    rng = np.random.default_rng(seed)
    done = 0
    for line, text in sentences if on_text else []:
        try:
            tokens = model.tokenize(text)
        except InputError as e:
            raise InputError(f"{source} line {line}: {e}") from None
        score_sequence(model, tokens, on_text, sums, options, rng)
        done += 1
        if progress is not None:
            progress(done)
    if on_text and not done:
        raise InputError(f"{source}: no sentence to score")
    if on_repeat:
        score_sequence(model, repeated_tokens(model, length, seed), on_repeat, sums, options, rng)
    found = {}
    for name in patterns:
        heads, baselines = sums.means(name)
        found[name] = {"heads": heads, "even": float(baselines[0]), "random": float(baselines[1]), "sequences": sums.sequences[name]}
    return HeadsDetected(model=model.name, mask="causal" if model.causal else "none", layers=model.n_layers, heads=model.n_heads, **options,
                         text={"source": source, "sentences": done} if on_text else None,
                         repeated={"length": length, "seed": seed} if on_repeat else None, found=found)
