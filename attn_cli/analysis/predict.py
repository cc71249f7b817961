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


class PredictSettings(Record):
    __slots__ = ("top", "temperature", "chat", "lens", "focus", "max_memory")

    def __init__(self, top: int = 10, temperature: float = 1.0, chat: bool = False, lens: bool = False, focus: str | None = None,
                 max_memory: int | None = None):
        self.max_memory = max_memory  # bytes the run may take (None: most of what is available)
        self.top = top  # predictions listed
        self.temperature = temperature  # softmax(logits / T)
        self.chat = chat  # wrap the text in the model's chat template first
        self.lens = lens  # also read every layer's residual through the output head
        self.focus = focus  # the position to predict from (default: the last token, or the [MASK])


def position(model, tokens, focus: str | None) -> int:
    if focus is not None:
        return find_focus(tokens.labels, tokens.pieces, focus, model.fold)
    if model.predicts == "next":
        return len(tokens.ids) - 1
    masks = [i for i, piece in enumerate(tokens.pieces) if piece == "[MASK]"]
    if not masks:
        raise InputError(f"{model.name} predicts a masked word: put [MASK] where it should predict one (e.g. 'the cat [MASK] on the mat')")
    return masks[0]


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
    tokens = model.tokenize(text, chat=settings.chat)
    i = position(model, tokens, settings.focus)
    rows = model.n_layers + 1 if settings.lens else 1
    footprint.check(model, len(tokens.ids), lambda n: footprint.estimate(model, n, logits_rows=rows), "predict", settings.max_memory)
    model.weights.prefetch_vocabulary()  # the output head's matrix, read while the layers run (when it is small)
    trace = model.forward(tokens, keep=predict_keep(model, i, settings.lens))
    rows = np.concatenate([trace.get("resid_pre", 0)] + [trace.get("resid_post", l) for l in range(model.n_layers)]) if settings.lens \
        else trace.get("resid_post", model.n_layers - 1)  # [L + 1, d] or [1, d]: position i only
    logits = model.lm_logits(rows).astype(np.float64)  # [m, V]
    with np.errstate(over="ignore", under="ignore"):
        probabilities = softmax_with_temperature(logits, settings.temperature)  # [m, V]
    final = logits[-1]
    best = top_k(probabilities[-1], settings.top)
    label = lambda j: model.labels([int(j)], [model.tokenizer.id_to_token(int(j)) or f"#{j}"])[0]  # noqa: E731
    predictions = [Prediction(int(j), label(j), model.tokenizer.id_to_token(int(j)), float(probabilities[-1, j]), float(final[j])) for j in best]
    lens = None
    if settings.lens:
        winner = int(best[0])
        lens = []
        for l in range(len(rows)):
            top = [Prediction(int(j), label(j), model.tokenizer.id_to_token(int(j)), float(probabilities[l, j]), float(logits[l, j]))
                   for j in top_k(probabilities[l], LENS_TOP)]
            rank = int(np.sum(logits[l] > logits[l, winner])) + 1
            lens.append({"layer": l, "top": top, "final_probability": float(probabilities[l, winner]), "final_rank": rank})
    return PredictResult(model=model.summary(), tokens=list(tokens.labels), position=i, predicts=model.predicts,
                         temperature=settings.temperature, chat=settings.chat, predictions=predictions, lens=lens)
