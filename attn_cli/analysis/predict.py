"""`attn predict`: the model's own output, a softmax over its vocabulary, and the logit lens through its layers.

A decoder predicts the token after a position (the last one by default); an encoder with a
masked-LM head predicts a [MASK]. The logits go through softmax (attn_cli.core.softmax, with the
temperature `attn softmax` takes). The logit lens (nostalgebraist 2020) reads every layer's
residual at that position through the model's own output head: which token it would predict had
the model stopped there, and how likely the final prediction already is.
"""

import numpy as np

from attn_cli.analysis.units import find_focus
from attn_cli.core.neighbors import top_k
from attn_cli.core.softmax import softmax_with_temperature
from attn_cli.errors import InputError
from attn_cli.records import Record
from attn_cli.results.predict import Prediction, PredictResult

LENS_TOP = 3  # tokens shown per layer of the lens
LENS_ROWS = 4  # layers read through the output head at a time


class PredictSettings(Record):
    __slots__ = ("top", "temperature", "chat", "lens", "focus", "asked", "max_memory", "ablate", "ablate_with", "steer", "steered")

    def __init__(self, top: int = 10, temperature: float = 1.0, chat: bool = False, lens: bool = False, focus: str | None = None,
                 asked: list[str] | None = None, max_memory: int | None = None, ablate: list[str] | None = None, ablate_with: str = "zero",
                 steer: list | None = None, steered: list | None = None):
        self.steered = steered or []  # what the steer edits came from, as the result shows it: [{"file", "scale", "layers"}]
        self.steer = steer or []  # edits every pass makes, the own run beside an --ablate one included: Add("resid_post", l, scale * v)
        self.max_memory = max_memory  # bytes the run may take (None: most of what is available)
        self.ablate = ablate  # heads turned off ("3.1"): the prediction that follows, beside the model's own (analysis/ablate.py)
        self.ablate_with = ablate_with
        self.top = top  # predictions listed
        self.temperature = temperature  # softmax(logits / T)
        self.chat = chat  # wrap the text in the model's chat template first
        self.lens = lens  # also read every layer's residual through the output head
        self.focus = focus  # the position to predict from (default: the last token, or the [MASK])
        self.asked = asked or []  # --token: texts of one token each, or "id:N", whose probability and rank are wanted


def token_text(tokenizer, token_id: int) -> str:
    """What a token adds to a text, decoded: the same for byte-level BPE (" Paris" from "ĠParis") and SentencePiece
    (" Paris" from "▁Paris", whose decoder drops a leading space at the start of a text): the token decoded after
    itself, less the token decoded alone. U+FFFD where the token is only some of a character's bytes."""
    alone = tokenizer.decode([token_id], skip_special_tokens=False)
    twice = tokenizer.decode([token_id, token_id], skip_special_tokens=False)
    return twice[len(alone):] if twice.startswith(alone) and len(twice) > len(alone) else alone


def unknown_id(tokenizer) -> int | None:
    """The id a WordPiece or word-level tokenizer gives a word it lacks ([UNK]); None for byte-level BPE, which lacks none."""
    import json

    name = json.loads(tokenizer.to_str()).get("model", {}).get("unk_token")
    return None if name is None else tokenizer.token_to_id(name)


def asked_id(model, text: str) -> int:
    """--token TEXT: the id of a text that is one token, or of id:N; a text of several tokens is an error listing them."""
    vocabulary = model.spec.vocab_size
    if text.startswith("id:"):
        try:
            i = int(text[3:])
        except ValueError:
            raise InputError(f"--token {text!r}: after id: comes a token id, a whole number from 0 to {vocabulary - 1}") from None
        if not 0 <= i < vocabulary:
            raise InputError(f"--token {text}: {model.name} has ids 0 to {vocabulary - 1}")
        return i
    ids = model.tokenizer.encode(text, add_special_tokens=False).ids
    if not ids:
        raise InputError(f"--token {text!r} has no tokens for {model.name}: give a text that is one token, or id:N")
    unknown = unknown_id(model.tokenizer)
    if unknown in ids and text.strip() != model.tokenizer.id_to_token(unknown):  # a word the vocabulary lacks: its rank would be [UNK]'s
        raise InputError(f"--token {text!r} is not in {model.name}'s vocabulary: its tokenizer makes it {model.tokenizer.id_to_token(unknown)}")
    if len(ids) != 1:
        from attn_cli.io.files import printable

        pieces = " ".join(f"{i}:'{printable(token_text(model.tokenizer, i))}'" for i in ids)
        raise InputError(f"--token {text!r} is {len(ids)} tokens for {model.name}, not one: {pieces or '(none)'}; "
                         "ask for one of them (id:N, or its text)")
    return int(ids[0])


def position(model, tokens, focus: str | None) -> int:
    if focus is not None:
        return find_focus(tokens.labels, tokens.pieces, focus, model.fold)
    if model.predicts == "next":
        return len(tokens.ids) - 1
    masks = [i for i, piece in enumerate(tokens.pieces) if piece == "[MASK]"]
    if not masks:
        raise InputError(f"{model.name} predicts a masked word: put [MASK] where it should predict one (e.g. 'the cat [MASK] on the mat')")
    return masks[0]


def read_out(model, rows: np.ndarray, temperature: float) -> tuple[np.ndarray, np.ndarray]:  # [m, d] -> logits, probabilities [m, V] float64
    logits = model.readout(rows).astype(np.float64)
    with np.errstate(over="ignore", under="ignore"):
        return logits, softmax_with_temperature(logits, temperature)


def predict_keep(model, i: int, lens: bool):
    """What predict keeps of a pass: the stream at position i only (after the last layer; with the lens, before and after every
    layer), and no attention at all."""
    from attn_cli.models.points import Keep

    if lens:
        return Keep(("resid_pre", "resid_post"), rows=[i])
    return Keep(("resid_post",), layers=[model.n_layers - 1], rows=[i])


def predict(model, text: str, settings: PredictSettings) -> PredictResult:
    from attn_cli.models import footprint

    if model.predicts is None:
        raise InputError(f"{model.name} has no output head to predict with: an encoder without a masked-LM head (only its layers can be inspected)")
    from attn_cli.analysis.ablate import ablation_edits, parse_ablation

    asked = [asked_id(model, t) for t in settings.asked]  # before the forward pass: a bad --token costs nothing
    ablation = parse_ablation(settings.ablate, settings.ablate_with, model)
    tokens = model.tokenize(text, chat=settings.chat)
    i = position(model, tokens, settings.focus)
    rows = model.n_layers + 1 if settings.lens else 1
    footprint.check(model, len(tokens.ids), lambda n: footprint.estimate(model, n, logits_rows=rows), "predict", settings.max_memory)
    model.weights.prefetch_vocabulary()  # the output head's matrix, read while the layers run (when it is small)
    keep = predict_keep(model, i, settings.lens)
    own = None
    if ablation:  # the model's own prediction first, to show the ablated one beside it
        mine = model.forward(tokens, keep=keep, edits=settings.steer).get("resid_post", model.n_layers - 1)  # [1, d]
        own = read_out(model, mine, settings.temperature)[1][0]  # [V]
    trace = model.forward(tokens, keep=keep, edits=ablation_edits(model, tokens.ids, ablation) + list(settings.steer))
    rows = np.concatenate([trace.get("resid_pre", 0)] + [trace.get("resid_post", l) for l in range(model.n_layers)]) if settings.lens \
        else trace.get("resid_post", model.n_layers - 1)  # [L + 1, d] or [1, d]: position i only
    last = (len(rows) - 1) // LENS_ROWS * LENS_ROWS  # the block of rows the output is read in (the lens's last block)
    final, probabilities = outputs = read_out(model, rows[last:], settings.temperature)  # [m, V] each
    best = top_k(probabilities[-1], settings.top)

    def prediction(j, p: np.ndarray, logit: np.ndarray) -> Prediction:  # token j with its probability and logit in one row
        j = int(j)
        piece = model.tokenizer.id_to_token(j)
        return Prediction(j, model.labels([j], [piece or f"#{j}"])[0], piece, float(p[j]), float(logit[j]), token_text(model.tokenizer, j))

    predictions = [prediction(j, probabilities[-1], final[-1]) for j in best]
    asked = [(prediction(j, probabilities[-1], final[-1]), rank(final[-1], j)) for j in asked]
    lens = None
    if settings.lens:
        winner = int(best[0])
        lens = []
        for first in range(0, len(rows), LENS_ROWS):  # a few layers at a time: [L + 1, V] float64 would be 40 MB on a 262k vocabulary
            logits, probabilities = outputs if first == last else read_out(model, rows[first : first + LENS_ROWS], settings.temperature)
            for l, (logit, p) in enumerate(zip(logits, probabilities), first):
                top = [prediction(j, p, logit) for j in top_k(p, LENS_TOP)]
                lens.append({"layer": l, "top": top, "final_probability": float(p[winner]), "final_rank": rank(logit, winner)})
    before = None
    if own is not None:
        before = {"probabilities": {p.id: float(own[p.id]) for p in predictions},
                  "top": [prediction(j, own, np.full_like(own, np.nan)) for j in top_k(own, settings.top)]}
    return PredictResult(model=model.summary(), tokens=list(tokens.labels), position=i, predicts=model.predicts,
                         temperature=settings.temperature, chat=settings.chat, predictions=predictions, lens=lens, asked=asked,
                         ablation=ablation, before=before, steered=settings.steered)


def rank(logits: np.ndarray, j: int) -> int:  # [V], a token -> 1 for the top token
    """Where token j stands among all tokens by logit: 1 + how many have a larger one (a tie shares the better rank)."""
    return int(np.sum(logits > logits[j])) + 1
