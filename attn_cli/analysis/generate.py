"""`attn generate`: the lesson's last loop, "predict the next token, append it, repeat", with the attention of every new token.

Each step runs only the new token through the layers: the keys and values of everything before it are kept in a
cache (attn_cli.models.cache.KVCache), as llama.cpp and transformers' DynamicCache do, so a step costs one row of
attention per layer, not the whole sequence again. What the views need of a step is its logits and the new token's
attention row at every layer and head ([L, H, t]); nothing else is kept.

Sampling, as transformers' and llama.cpp's samplers do it: greedy (T = 0, the argmax, the lowest id on a tie), or
softmax(logits / T) cut to the top k tokens and then to the smallest set holding probability p, drawn with a seeded
generator, so that a seed repeats a run.
"""

import re
import weakref
from collections.abc import Iterator

import numpy as np

from attn_cli.core.softmax import softmax, softmax_at
from attn_cli.errors import InputError
from attn_cli.records import Record

TOP_ALTERNATIVES = 5  # the most probable tokens kept per step (the runner-up is the second)
TOP_SOURCES = 3  # the positions a new token attended to most, per step
HOLD_BYTES = 3 << 30  # the float32 layers kept for the whole run when they fit in this (SmolLM2: 0.5 GB); else read a layer a step
PAGE_CELLS = 8_000_000  # attention cells (float16) the steps hold for a page at most: the newest steps' rows; older ones are let go


class Sampling(Record):
    __slots__ = ("temperature", "top_k", "top_p", "seed")

    def __init__(self, temperature: float = 0.0, top_k: int | None = None, top_p: float | None = None, seed: int | None = None):
        self.temperature = temperature  # 0: greedy
        self.top_k = top_k  # keep the k most probable tokens (None: all)
        self.top_p = top_p  # then the smallest set holding this much probability (None: all)
        self.seed = seed  # the generator's seed (None: a fresh one)


class GenerateSettings(Record):
    __slots__ = ("steps", "sampling", "chat", "head", "attention", "steer", "steered")

    def __init__(self, steps: int = 32, sampling: Sampling | None = None, chat: bool = False, head: tuple[int, int] | None = None,
                 attention: bool = True, steer: list | None = None, steered: list | None = None):
        self.steered = steered or []  # what the steer edits came from, as the result shows it: [{"file", "scale", "layers"}]
        self.steer = steer or []  # edits every step's pass makes (--steer: Add("resid_post", l, scale * v), at the step's new positions)
        self.attention = attention  # keep each step's [L, H, t] rows (the page draws them); else only its sources, so memory
        #                             grows with the KV cache alone
        self.steps = steps  # new tokens at most
        self.sampling = sampling or Sampling()
        self.chat = chat  # wrap the text in the model's chat template first
        self.head = head  # (layer, head) whose attention names each step's sources; None: every head pooled


class Step(Record):
    """One new token: what was drawn, how likely the model found it, what else it offered, where it looked."""

    __slots__ = ("index", "id", "token", "piece", "special", "probability", "logit", "top", "attention", "sources", "text")

    def __init__(self, index: int, id: int, token: str, piece: str, special: bool, probability: float, logit: float, top: list,
                 attention: np.ndarray, sources: list, text: str = ""):
        self.index = index  # 0 for the first new token
        self.id, self.token, self.piece, self.special = id, token, piece, special
        self.text = text  # what this step adds to the decoded text: the steps' texts joined are the text the model wrote
        #                   ("" for a token that ends mid-character: the step that completes the character carries it)
        self.probability = probability  # softmax of the raw logits (T = 1), whatever was sampled with
        self.logit = logit
        self.top = top  # [(id, token, probability)], most probable first
        self.attention = attention  # [L, H, t] float16: the row of the token this step read from over all before it (None: not kept)
        self.sources = sources  # [(position, weight)], the most attended positions (pooled over heads, or --head)


def stop_ids(model) -> set[int]:
    """The ids that end a turn: the model's EOS (one or a list, as config.json and GGUF give it) and its end-of-turn."""
    ids = set()
    for key in ("eos_token_id", "eot_token_id", "eom_token_id"):
        value = model.config.get(key)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, int) and 0 <= v < model.spec.vocab_size:
                ids.add(v)
    return ids


def choose(logits: np.ndarray, sampling: Sampling, rng: np.random.Generator) -> int:  # [V] -> a token id
    """Greedy, or a draw from softmax(logits / T) cut by top-k, then top-p."""
    if sampling.temperature == 0:
        return int(np.argmax(logits))
    z = logits.astype(np.float64) / sampling.temperature
    order = np.argsort(-z, kind="stable")  # most probable first; ties: the lower id first
    if sampling.top_k is not None:
        order = order[: sampling.top_k]
    p = softmax(z[order])
    if sampling.top_p is not None:
        keep = int(np.searchsorted(np.cumsum(p), sampling.top_p) + 1)  # the smallest prefix whose mass reaches p
        order, p = order[:keep], p[:keep] / p[:keep].sum()
    return int(order[rng.choice(len(order), p=p)])


def sources_of(attention: np.ndarray, head: tuple[int, int] | None, k: int = TOP_SOURCES) -> list[tuple[int, float]]:  # [L, H, t]
    row = attention[head[0], head[1]] if head is not None else attention.mean(axis=(0, 1))  # [t]
    best = np.argsort(-row, kind="stable")[:k]
    return [(int(j), float(row[j])) for j in best]


def generate(model, text: str, settings: GenerateSettings, cache=None) -> Iterator:
    """Yield the prompt's Tokens, then one Step per new token as it is made; the generator's return value is why it stopped
    ("eos", "steps", "context"). `cache`: the KVCache to fill (a new one if None)."""
    from attn_cli.models.cache import KVCache
    from attn_cli.models.points import Keep

    if model.predicts != "next":
        raise InputError(f"{model.name} does not predict a next token: generate takes a decoder")
    if settings.head is not None:
        l, h = settings.head
        if not (0 <= l < model.n_layers and 0 <= h < model.n_heads):
            raise InputError(f"--head {l}.{h}: {model.name} has layers 0 to {model.n_layers - 1} and heads 0 to {model.n_heads - 1}")
    tokens = model.tokenize(text, chat=settings.chat)
    yield tokens
    rng = np.random.default_rng(settings.sampling.seed)
    stops = stop_ids(model)
    keep = Keep(points=("attn.pattern", "resid_post"), rows=[-1])  # the new token's row at every layer, nothing else
    cache = KVCache(model) if cache is None else cache
    model.weights.hold(HOLD_BYTES, rows=1)  # every step reads every layer: from their blocks, or dequantized once, not once a step
    new = list(tokens.ids)
    length = len(new)
    text = NewText(model)
    for index in range(settings.steps):
        if length >= model.spec.max_positions:
            return "context"
        trace = model.forward(new, keep=keep, cache=cache, edits=settings.steer)
        attention = np.stack([trace.get("attn.pattern", l)[:, -1] for l in range(model.n_layers)])  # [L, H, t]
        logits = model.readout(trace.get("resid_post", model.n_layers - 1)[-1:])[0]  # [V] float32, final norm included
        chosen = choose(logits, settings.sampling, rng)
        probability = softmax_at(logits)
        best = np.argpartition(-logits, TOP_ALTERNATIVES)[:TOP_ALTERNATIVES]  # the top few without sorting the vocabulary
        best = best[np.lexsort((best, -logits[best]))]  # most probable first; the lower id first on a tie
        top = [(int(j), label(model, int(j)), probability(j)) for j in best]
        piece = model.tokenizer.id_to_token(chosen) or f"#{chosen}"
        last = chosen in stops or index == settings.steps - 1 or length + 1 >= model.spec.max_positions
        yield Step(index, chosen, label(model, chosen), piece, chosen in stops or is_special(model, chosen), probability(chosen),
                   float(logits[chosen]), top, attention.astype(np.float16) if settings.attention else None, sources_of(attention, settings.head),
                   text.add(chosen, last))
        if chosen in stops:
            return "eos"
        new = [chosen]
        length += 1
    return "steps"


BYTE_PIECE = re.compile(r"<0x[0-9A-Fa-f]{2}>")  # a SentencePiece byte-fallback token


class NewText:
    """Each token's share of the decoded text: what decoding it with the tokens before it adds, so that joining the
    shares gives the decoding of them all (Generation.text), whatever the tokenizer's pieces look like. A byte-level
    token that ends mid-character adds "" and the token that completes it the whole character; so does a SentencePiece
    byte token (<0x77>), whose run of bytes decodes as one (a byte that is not UTF-8 turns the whole run into U+FFFD).
    Decoded a window at a time (from the token before the last share on, as vLLM's incremental detokenizer does): a
    share costs a few tokens' decoding, not the whole text's."""

    def __init__(self, model):
        self.decode, self.piece, self.ids, self.start, self.done = model.tokenizer.decode, model.tokenizer.id_to_token, [], 0, 0

    def add(self, token_id: int, last: bool = False) -> str:
        self.ids.append(token_id)
        if not last and BYTE_PIECE.fullmatch(self.piece(token_id) or ""):
            return ""  # a byte of a run not yet closed: the run decodes as one, with the token after it
        before = self.decode(self.ids[self.start:self.done], skip_special_tokens=False)
        now = self.decode(self.ids[self.start:], skip_special_tokens=False)
        if not now.startswith(before) or (now.endswith("\ufffd") and not last):
            return ""  # a character not yet whole (or a decoder still changing what came before): wait for the next token
        self.start, self.done = self.done, len(self.ids)
        return now[len(before):]


def texts_of(model, ids) -> list[str]:
    """Every token's share of the decoded text of `ids` (NewText), each in the context of those before it."""
    text = NewText(model)
    return [text.add(i, last=k == len(ids) - 1) for k, i in enumerate(ids)]


def label(model, i: int) -> str:
    return model.labels([i], [model.tokenizer.id_to_token(i) or f"#{i}"])[0]


def is_special(model, i: int) -> bool:
    piece = model.tokenizer.id_to_token(i)
    return piece is not None and model.tokenizer.token_to_id(piece) == i and piece in special_pieces(model)


SPECIAL_PIECES = weakref.WeakKeyDictionary()  # model -> its tokenizer's special pieces, found once


def special_pieces(model) -> frozenset:
    if model not in SPECIAL_PIECES:
        try:
            SPECIAL_PIECES[model] = frozenset(t.content for t in model.tokenizer.get_added_tokens_decoder().values() if t.special)
        except Exception:  # an old tokenizers without the decoder map: no token is told apart
            SPECIAL_PIECES[model] = frozenset()
    return SPECIAL_PIECES[model]


class Generation:
    """A run of `generate` as it goes: the steps made so far, the text they decode to, and why it stopped, so that
    whatever stops it (the end, or Ctrl-C) leaves a whole result of what was made."""

    def __init__(self, model, text: str, settings: GenerateSettings):
        self.model, self.settings = model, settings
        from attn_cli.models.cache import KVCache

        self.cache = KVCache(model)
        self._steps = generate(model, text, settings, self.cache)
        self.tokens = next(self._steps)  # the prompt, tokenized (errors in it are raised here, before any output)
        self.steps: list[Step] = []
        self.stop = "interrupted"  # until the loop says otherwise
        self.kept_cells = 0  # attention cells the steps still hold (for the page)
        self.first_kept = 0  # the steps before this one have let go of their rows: a page keeps the newest PAGE_CELLS cells

    def __iter__(self) -> Iterator[Step]:
        while True:
            try:
                step = next(self._steps)
            except StopIteration as done:
                self.stop = done.value
                return
            self.steps.append(step)
            self.keep_within(step)
            yield step

    def keep_within(self, step: Step) -> None:
        """Let go of the oldest steps' attention rows once the steps hold more than PAGE_CELLS cells (the newest step's are
        always kept): memory and the page stay bounded however many steps are made, and the page says which it left out."""
        if step.attention is None:
            return
        self.kept_cells += step.attention.size
        while self.kept_cells > PAGE_CELLS and self.first_kept < len(self.steps) - 1:
            old = self.steps[self.first_kept]
            self.kept_cells -= 0 if old.attention is None else old.attention.size
            old.attention = None
            self.first_kept += 1

    def text(self) -> str:
        return self.model.tokenizer.decode([s.id for s in self.steps], skip_special_tokens=False)

    def result(self):
        from attn_cli.results.generate import GenerateResult

        m, t, s = self.model, self.tokens, self.settings.sampling
        prompt = m.tokenizer.decode(list(t.ids), skip_special_tokens=False)
        texts = texts_of(m, list(t.ids) + [step.id for step in self.steps]) if self.settings.attention else None  # the page's
        return GenerateResult(model=m.summary(), prompt_text=prompt, prompt_ids=list(t.ids), prompt_tokens=list(t.labels),
                              prompt_special=list(t.special), steps=list(self.steps), stop=self.stop, text=self.text(), head=self.settings.head,
                              sampling={"temperature": s.temperature, "top_k": s.top_k, "top_p": s.top_p, "seed": s.seed},
                              cache_bytes=self.cache.nbytes(), texts=texts, steered=self.settings.steered)
