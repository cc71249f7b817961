"""The sense meter on a real model: how near a word's vector is to each sense of it, layer by layer.

A sense is a list of probe words ("mole" as an animal: mammal burrow rodent ...). Its prototype
is the word itself in contexts that select that sense: the word goes into each template below with
each probe word, the model runs the text, the word's vector at layer l (its pieces' residual stream,
averaged over the pieces) is scaled to unit length, and the mean of these unit vectors is the
sense's prototype at layer l. The word in the user's sentence is read the same way and compared
by cosine, at every layer:

    score_l(sense) = cos(x_l, prototype_l(sense))
    nearest_l      = the sense with the highest score (none when the top scores tie)
    margin_l       = the highest score less the second highest

Every score is high (the word's own identity dominates its vector), so the margin is what moves.
Two controls are read the same way: the word alone (its own pieces as the whole input: its prior)
and the sentence with every other piece replaced by one filler token (the word, its position and
the length are left, the context is gone). A decoder's word sees only what comes before it, so its
prototypes come from the templates whose probe comes before the word.

The method and the templates were chosen on the development set (data/heads/dev) only; see docs/senses.md.
"""

import re
import weakref

import numpy as np

from attn_cli.errors import InputError

SHORT_TEMPLATES = ("{probe} and {word}.", "the {probe} {word}.", "{word}, as in {probe}.")
CARRIER_TEMPLATES = (
    "We talked about the {probe} and the {word}.",
    "She thought of the {probe} when she saw the {word}.",
    "The {word} reminded him of the {probe}.",
    "Next to the {probe} was the {word}.",
)
TEMPLATE_SETS = {"full": SHORT_TEMPLATES + CARRIER_TEMPLATES, "short": SHORT_TEMPLATES}  # full: the method; short: its baseline
TIE = 1e-6  # scores this close are a tie: at layer 0 two senses' prototypes can be the same vector
EPS = 1e-12
HOLD_BYTES = 2 << 30  # a quantized model's layers are kept dequantized for the prototypes' passes when they fit in this
FILLERS = ("[MASK]", "<mask>", "[UNK]", "<unk>", "<|endoftext|>", "</s>", "<pad>")  # the masked control's token: the first the vocabulary has

_PROTOTYPES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> {(word, senses, templates): [L + 1, s, d]}


def templates_for(causal: bool, which: str = "full") -> tuple[str, ...]:
    """The templates a model's prototypes come from: for a decoder, those whose probe comes before the word."""
    chosen = TEMPLATE_SETS[which]
    return tuple(t for t in chosen if t.index("{probe}") < t.index("{word}")) if causal else chosen


def method(templates: tuple[str, ...]) -> str:
    return f"cosine with each sense's prototype: the mean unit vector of the word in {len(templates)} templates x each probe word"


def template_text(template: str, word: str, probe: str) -> tuple[str, tuple[int, int]]:
    """The filled template and the word's characters in it (from the template, not by searching)."""
    head = template.split("{word}")[0].format(probe=probe)
    return template.format(word=word, probe=probe), (len(head), len(head) + len(word))


def span_pieces(tokens, span: tuple[int, int]) -> list[int]:
    """The non-special pieces that cover characters of the span (a byte-level piece may start with the space before it)."""
    a, b = span
    found = [i for i, (s, e) in enumerate(tokens.offsets) if not tokens.special[i] and e > s and s < b and e > a]
    if not found:
        raise InputError(f"no token of {tokens.text!r} covers {tokens.text[a:b]!r}")
    return found


def word_span(text: str, word: str) -> tuple[int, int]:
    """The characters of the word's first whole-word occurrence in the text, in any case."""
    found = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags=re.IGNORECASE)
    if found is None:
        raise InputError(f"{word!r} is not a word of {text!r}")
    return found.span()


def word_vectors(trace, pieces: list[int]) -> np.ndarray:  # -> [L + 1, d]
    """The word's vector at every layer (E first): the mean over its pieces."""
    return trace.streams()[:, pieces].astype(np.float64).mean(axis=1)


def unit(x: np.ndarray) -> np.ndarray:  # [..., d] -> [..., d]
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), EPS)


def prototypes(model, word: str, senses: dict[str, list[str]], templates: tuple[str, ...], progress=None) -> np.ndarray:  # -> [L + 1, s, d]
    """Each sense's prototype at every layer, computed once per model, word, senses and templates (cached for the run).
    `progress(passes)` is told of each forward pass."""
    key = (word, tuple((name, tuple(probes)) for name, probes in senses.items()), templates)
    cache = _PROTOTYPES.setdefault(model, {})
    if key not in cache:
        model.weights.hold(HOLD_BYTES)
        per_sense = []
        for probes in senses.values():
            rows = []
            for probe in probes:
                for template in templates:
                    text, span = template_text(template, word, probe)
                    trace = model.run(text)
                    rows.append(unit(word_vectors(trace, span_pieces(trace.tokens, span))))  # [L + 1, d]
                    if progress is not None:
                        progress(1)
            per_sense.append(np.mean(rows, axis=0))  # [L + 1, d]
        cache[key] = np.stack(per_sense, axis=1)  # [L + 1, s, d]
    return cache[key]


def prototype_passes(senses: dict[str, list[str]], templates: tuple[str, ...]) -> int:
    return len(templates) * sum(len(p) for p in senses.values())


def cosine_scores(x: np.ndarray, protos: np.ndarray) -> np.ndarray:  # [L + 1, d], [L + 1, s, d] -> [L + 1, s]
    """cos(x_l, prototype_l) for every layer and sense."""
    return np.einsum("ld,lsd->ls", unit(x), unit(protos))


def readings(scores: np.ndarray, names: list[str], labels: list[str]) -> list:  # [L + 1, s] -> [MeterReading]
    """Each layer's scores, nearest sense (None on a tie: `tied` names the senses within TIE of the best) and margin."""
    from attn_cli.results.meter import MeterReading

    out = []
    for layer, row in enumerate(scores):
        order = np.argsort(-row, kind="stable")
        best = row[order[0]]
        margin = float(best - row[order[1]]) if len(names) > 1 else 0.0
        tied = [names[i] for i in order if best - row[i] <= TIE]
        out.append(MeterReading(layer, labels[layer], [float(s) for s in row], tied[0] if len(tied) == 1 else None, tied, margin))
    return out


def layer_labels(n_layers: int) -> list[str]:
    """E, then each layer's output by its 0-based index, as the --focus table shows them."""
    return ["E", *map(str, range(n_layers))]


def alone_text(tokens, pieces: list[int]) -> str:
    """The word's own characters, as the control "alone" runs them (the space before it too, where its first piece holds one)."""
    return tokens.text[tokens.offsets[pieces[0]][0] : tokens.offsets[pieces[-1]][1]]


def own_pieces(tokens) -> list[int]:
    return [i for i, special in enumerate(tokens.special) if not special]


def filler(model) -> tuple[int, str]:
    """The token that replaces the context in the masked control: the model's mask token, else another it keeps for no word."""
    for name in FILLERS:
        found = model.tokenizer.token_to_id(name)
        if found is not None:
            return found, name
    raise InputError(f"{model.name}'s vocabulary has none of {', '.join(FILLERS)} to mask the context with")


def masked_trace(model, tokens, pieces: list[int], fill: int):
    """The sentence with every non-special piece but the word's replaced by the filler token."""
    from attn_cli.models.base import Tokens

    keep = set(pieces)
    ids = [t if tokens.special[i] or i in keep else fill for i, t in enumerate(tokens.ids)]
    return model.forward(Tokens(ids, tokens.pieces, tokens.special, tokens.words, tokens.offsets, tokens.text))


def context_meter(model, trace, pieces: list[int], word: str, senses: dict[str, list[str]], which: str = "full"):
    """The meter for the word at `pieces` of the traced sentence, and for the word alone (results.meter.SenseMeter)."""
    from attn_cli.results.meter import SenseMeter

    templates = templates_for(model.causal, which)
    protos = prototypes(model, word, senses, templates)
    names, labels = list(senses), layer_labels(model.n_layers)
    alone = model.run(alone_text(trace.tokens, pieces))
    return SenseMeter(
        word, names, method(templates), readings(cosine_scores(word_vectors(trace, pieces), protos), names, labels),
        readings(cosine_scores(word_vectors(alone, own_pieces(alone.tokens)), protos), names, labels),
        pieces=pieces, causal=model.causal, templates=list(templates),
    )


def inspect_meter(model, trace, focus_piece: int | None, senses) -> tuple[object, str | None]:
    """`inspect --model --sense/--sense-set`: (the meter of the --focus word, or of the first word the set has senses
    for, or None; a note saying why no word was measured, or None)."""
    from attn_cli.analysis.units import groups

    adhoc, table, table_name = senses
    members, labels, special = groups(trace.tokens, words=True)
    units = [u for u in range(len(members)) if not special[u]]
    if focus_piece is not None:
        units = [u for u in units if focus_piece in members[u]]
        if not units:
            raise InputError("--focus names a special token; the sense meter reads a word")
    where = f"sense set {table_name}" if table_name else "the sense set"
    for u in units:
        word = labels[u].lower()
        chosen = adhoc if adhoc is not None else table.get(word)
        if chosen:
            return context_meter(model, trace, members[u], word, chosen), None
    if focus_piece is not None:
        return None, f"{labels[units[0]]!r} has no senses in {where}"
    return None, f"none of the words has senses in {where}: nothing to measure"
