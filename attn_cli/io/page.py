"""`inspect --page FILE`: one self-contained HTML page to explore a sentence's attention, offline.

The page is one file: the result's numbers as JSON inside it, the script (io/page.js, written by
hand, no library) and the style sheet (io/page.css) inside it too. Its Content-Security-Policy
allows only that script and that style sheet, by their SHA-256, and nothing else from anywhere
(default-src 'none'): the page cannot load a font, an image or a script, nor send a request.

The weights, L x H x n x n of them, are most of the page: they are kept as the page shows them, in
thousandths, and only the cells that are not 0.000 (kept_weights: gaps and values, deflated, base64),
so that SmolLM2's 270 heads over 300 tokens take 4.8 MB, not 50 MB of JSON numbers. A longer text
whose weights would pass about 16 KB a token leaves out its smallest weights, and the page says so.
The model view's thumbnails come pooled (thumbnails), so opening the page inflates one layer only.
"""

import base64
import hashlib
import html
from pathlib import Path

HERE = Path(__file__).parent
WEIGHT_SCALE = 1000  # weights are kept in thousandths: the page shows them to 3 decimals, as rounded from the result
PAGE_PER_TOKEN = 16_300  # characters of page a token at most (4.9 MB at 300 tokens; the kept cells grow as n^2 unless left out)
PAGE_LEAST = 4_900_000  # ... and never a smaller budget than this
THRESHOLDS = (1, 2, 3, 5, 10, 20, 50)  # thousandths: the smallest weight kept, 1 when the budget allows (every weight as shown)
CHARS_PER_CELL = 0.96  # characters a kept cell takes at 1 thousandth (SmolLM2, 300 tokens, measured): a first guess only
THUMB_SIDE = 48
HEADING = 200  # characters of the text in the page's heading at most  # the model view's thumbnails: at most this many pixels a side

TEMPLATE = """\
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src '{script_hash}'; style-src '{style_hash}'; \
base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<h1>{heading}</h1>
<p class="dim">{caption}</p>
<div class="controls">
<label id="layer-box">layer <select id="layer"></select></label>
<label>head <select id="head"></select></label>
<span class="dim">hover or tap a token on the left; tap again to let go</span>
</div>
<p id="legend" class="note" hidden></p>
<p id="status" class="dim">reading the weights…</p>
<div class="panels">
<div id="lines"></div>
<div id="side">
<div id="row"></div>
<h2 id="grid-title">weights</h2>
<div class="scroll" id="grid"></div>
<p id="grid-cell" class="dim"></p>
</div>
</div>
<h2>model view: every head, queries ↓ keys →; click one to enlarge it</h2>
<div class="scroll" id="thumbs"></div>
<div id="neighbours-box"><h2>nearest keys to E and to E′ (new ones in green)</h2>
<div class="scroll"><table class="plain"><thead><tr><th>token</th><th>nearest to E</th><th>nearest to E′</th></tr></thead>
<tbody id="neighbours"></tbody></table></div><p id="neighbours-note" class="note" hidden></p></div>
<div id="senses-box"><h2>sense meter: mean cosine with each sense's probe words, of E and E′ (← nearest after)</h2>
<div class="scroll"><table class="plain"><thead><tr><th>token</th><th>sense</th><th>before</th><th>after</th><th>change</th></tr></thead>
<tbody id="senses"></tbody></table></div></div>
<div id="big" hidden><button id="big-close" type="button">close</button><h2 id="big-title"></h2>
<div class="panels"><div id="big-picture"></div><div class="scroll" id="big-grid"></div></div></div>
<script type="application/json" id="data">{data}</script>
<script>{script}</script>
</body>
</html>
"""


def thousandths(matrix):  # [...] -> [...] uint16: each weight in thousandths, as the page shows it (3 decimals)
    import numpy as np

    return np.clip(np.rint(np.asarray(matrix, dtype=np.float64) * WEIGHT_SCALE), 0, WEIGHT_SCALE).astype(np.uint16)


def varints(x) -> bytes:  # [m] non-negative ints -> LEB128 bytes: 7 bits a byte, the high bit set on all but the last
    import numpy as np

    x = np.asarray(x, dtype=np.uint64)
    sizes = np.ones(len(x), dtype=np.int64)
    rest = x >> np.uint64(7)
    while rest.any():
        sizes += rest > 0
        rest >>= np.uint64(7)
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    start = np.cumsum(sizes) - sizes
    for k in range(int(sizes.max(initial=0))):
        on = sizes > k
        more = np.where(sizes[on] > k + 1, 0x80, 0).astype(np.uint8)
        out[start[on] + k] = ((x[on] >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8) | more
    return out.tobytes()


def packed(data: bytes) -> str:
    """Deflated (zlib), then base64: what the page's script inflates with the browser's DecompressionStream."""
    import zlib

    return base64.b64encode(zlib.compress(data, 6)).decode("ascii")


class Stack:
    """Every head's weights as the page holds them: [L, H, g, g] (a checkpoint's), or the lesson's one layer."""

    def __init__(self, result):
        import numpy as np

        if result.weights is not None:
            self.layers = result.weights  # [L, H, g, g]
            self.names = [[str(h) for h in range(self.layers.shape[1])] for _ in range(self.layers.shape[0])]
            self.allowed = result.allowed
        else:
            self.layers = np.stack([head.weights for head in result.heads])[None]  # [1, H, n, n]
            self.names = [[head.name for head in result.heads]]
            self.allowed = result.heads[0].allowed if result.heads else None
        self.n_layers, self.n_heads, self.g = self.layers.shape[:3]
        g = self.g
        self.causal = self.allowed is not None and np.array_equal(self.allowed, np.tri(g, dtype=bool))  # bools, not floats
        # stored key by key (a column's weights: a sink's, a previous-token head's, are alike, and deflate better);
        # under a causal mask only the queries at or after the key: the rest is masked, never stored
        self.cells = np.triu_indices(g) if self.causal else None  # (key, query >= key)

    def cells_of(self, l: int):  # -> [H, c] uint16: layer l's weights in thousandths, the cells a query may see, key by key
        q = thousandths(self.layers[l]).transpose(0, 2, 1)  # [H, key, query]
        return q[:, self.cells[0], self.cells[1]] if self.cells is not None else q.reshape(self.n_heads, -1)


def layer_windows(result, stack: Stack) -> tuple[list, str | None]:
    """Each layer's sliding window (int: a query sees itself and the window - 1 tokens before it; None: every
    earlier token), and where that came from: the model, when the result states it (`windows`, one per
    layer, as Spec.window(l) gives them; or its model summary's "windows"), else the trace itself: a causal
    layer whose every head puts weight exactly 0 on every key at least W tokens back (and on none nearer)
    hides those keys, as a window of W does."""
    import numpy as np

    stated = getattr(result, "windows", None)
    if stated is None:
        stated = (result.model or {}).get("windows")
    if isinstance(stated, list) and len(stated) == stack.n_layers:
        return [None if w is None else int(w) for w in stated], "the model"
    if not stack.causal or result.words or result.hide_special or result.weights is None or stack.g < 3:
        return [None] * stack.n_layers, None  # windows count tokens: merged or hidden units are not tokens
    g = stack.g
    distance = np.subtract.outer(np.arange(g), np.arange(g))  # [g, g]: query - key
    windows = []
    for l in range(stack.n_layers):
        seen = (np.asarray(stack.layers[l]) != 0).any(axis=0) & (distance >= 0)  # [g, g]: some head's weight is not 0
        farthest = int(distance[seen].max(initial=0))
        windows.append(farthest + 1 if farthest < g - 1 else None)
    return windows, ("the trace" if any(w is not None for w in windows) else None)


def model_windows(result, stack: Stack) -> tuple[list, list] | None:
    """Each layer's window and the first key each query sees, from the masks the model gave the result
    (`layer_allowed` [L, g, g], set when some layer has a sliding window; None: no window cuts this text).
    The window is the one the result's heads name (HeadView.window), else the widest span the mask leaves."""
    import numpy as np

    masks = getattr(result, "layer_allowed", None)
    if masks is None or result.weights is None:
        return None
    g, windows, starts = stack.g, [], []
    base = np.ones((g, g), dtype=bool) if stack.allowed is None else np.asarray(stack.allowed, dtype=bool)
    for l in range(stack.n_layers):
        mask = np.asarray(masks[l], dtype=bool)
        if np.array_equal(mask, base):
            windows.append(None)
            starts.append(None)
            continue
        first = mask.argmax(axis=1)  # [g]: a window's keys are one run ending at the query
        named = next((h.window for h in result.heads if h.layer == l and getattr(h, "window", None)), None)
        windows.append(int(named) if named else int((np.arange(g) - first).max()) + 1)
        starts.append(first.tolist())
    return windows, starts


def first_keys(result, stack: Stack, windows: list) -> list:
    """Per layer, the first key each query sees (None: no window in that layer): the window's start for
    token units; for merged or hidden units, the first unit any head gives weight to."""
    import numpy as np

    g, out = stack.g, []
    for l, window in enumerate(windows):
        if window is None:
            out.append(None)
        elif not (result.words or result.hide_special):
            out.append(np.maximum(0, np.arange(g) - window + 1).tolist())
        else:
            seen = (np.asarray(stack.layers[l]) != 0).any(axis=0)  # [g, g]
            out.append(np.where(seen.any(axis=1), seen.argmax(axis=1), 0).tolist())
    return out


def visible(stack: Stack, starts: list, l: int):  # -> [g, g] bool: where layer l's queries see the key
    import numpy as np

    g = stack.g
    shown = np.ones((g, g), dtype=bool) if stack.allowed is None else np.asarray(stack.allowed, dtype=bool)
    if starts[l] is not None:
        shown = shown & (np.arange(g)[None, :] >= np.asarray(starts[l])[:, None])
    return shown


def kept_weights(stack: Stack, budget: int) -> dict:
    """Every head's weights in thousandths, as few bytes as keep them exact: per layer, the cells holding at
    least `smallest` thousandths (head by head, key by key, query by query), each as its gap from the last
    one and its value (LEB128: all the gaps, then all the values), deflated.
    `smallest` is 1 (every weight the page shows as other than 0.000) unless that would pass `budget`
    characters; then the smallest of THRESHOLDS that fits, and the page shows the rest as "<" it."""
    import numpy as np

    counts = np.zeros(WEIGHT_SCALE + 1, dtype=np.int64)  # how many cells hold each value
    for l in range(stack.n_layers):
        counts += np.bincount(stack.cells_of(l).ravel(), minlength=WEIGHT_SCALE + 1)
    at_least = np.cumsum(counts[::-1])[::-1]  # [1001]: cells holding >= k thousandths
    choices = [t for t in THRESHOLDS if at_least[t] * CHARS_PER_CELL <= 1.1 * budget] or [THRESHOLDS[-1]]  # a guess to start from
    for smallest in [t for t in THRESHOLDS if t >= choices[0]]:
        layers, entries = [], []
        for l in range(stack.n_layers):
            cells = stack.cells_of(l).ravel()  # [H * c]
            where = np.flatnonzero(cells >= smallest)
            layers.append(packed(varints(np.diff(where, prepend=-1) - 1) + varints(cells[where])))
            entries.append(len(where))
        if sum(map(len, layers)) <= budget or smallest == THRESHOLDS[-1]:
            break
    return {"scale": WEIGHT_SCALE, "smallest": int(smallest), "cells": "lower" if stack.causal else "square",
            "entries": entries, "layers": layers, "dropped": int(at_least[1] - at_least[smallest])}


def thumbnails(stack: Stack, starts: list, side: int = THUMB_SIDE) -> dict:
    """Every head as a small picture for the model view: each pixel the largest weight in its block of
    `block` x `block` cells (so one strong key stays visible), 0-254 of the colour scale; 255: all masked."""
    import numpy as np

    g = stack.g
    block = -(-g // min(g, side))  # ceil
    size = -(-g // block)
    pad = size * block - g
    out = np.empty((stack.n_layers, stack.n_heads, size, size), dtype=np.uint8)
    for l in range(stack.n_layers):
        w = np.where(visible(stack, starts, l), np.asarray(stack.layers[l], dtype=np.float32), -1.0)  # [H, g, g]
        w = np.pad(w, ((0, 0), (0, pad), (0, pad)), constant_values=-1.0)
        top = w.reshape(stack.n_heads, size, block, size, block).max(axis=(2, 4))  # [H, size, size]
        out[l] = np.where(top < 0, 255, np.rint(np.clip(top, 0, 1) * 254)).astype(np.uint8)
    return {"side": size, "block": block, "pixels": packed(out.tobytes())}


def page_data(result, sentence: str) -> dict:
    """What the page shows, from the one result: every head's weights (a checkpoint's every layer, kept as
    kept_weights says), the model view's thumbnails, each layer's window, and the E' neighbours and sense
    meter where the result has them."""
    import numpy as np

    from attn_cli.io.files import printable
    from attn_cli.results import SINK_TOKEN

    stack = Stack(result)
    given = model_windows(result, stack)
    if given is not None:
        (windows, starts), source = given, "the model"
    else:
        windows, source = layer_windows(result, stack)
        starts = first_keys(result, stack, windows)
    sinks = {} if result.weights is not None else {
        f"0.{h}": thousandths(head.sink_weights).tolist() for h, head in enumerate(result.heads) if head.sink is not None}
    allowed = stack.allowed
    model = None if result.model is None else {**result.model, "name": printable(str(result.model.get("name", "")))}
    thumbs = thumbnails(stack, starts)
    budget = max(PAGE_LEAST, PAGE_PER_TOKEN * stack.g) - len(thumbs["pixels"]) - 4 * len(sentence) - 200 * stack.g  # the rest: tokens, script
    data = {
        "sentence": printable(sentence), "tokens": [printable(t) for t in result.tokens], "model": model, "mask": result.mask,
        "layers": stack.n_layers, "heads": stack.n_heads, "names": stack.names, "w": kept_weights(stack, budget),
        "thumbs": thumbs, "window": windows, "windowSource": source, "from": starts,
        "sink": sinks or None, "sinkLabel": SINK_TOKEN,
        "allowed": None if allowed is None else "causal" if stack.causal else "".join("1" if a else "0" for a in np.asarray(allowed).ravel().tolist()),
        "special": None if result.special is None else list(result.special),
        "neighbors": None if result.near_input is None else {"input": result.near_input, "output": result.near_output},
        "senses": None if result.senses is None else [sense_row(row.to_dict()) for row in result.senses],
        "note": shift_note(result),
    }
    assert len(data["tokens"]) == stack.g
    return data


def shift_note(result) -> str | None:
    """The terminal's note when ΔE outweighs E (views.shift.dominance_note), so the page's E′ neighbours say it too."""
    if result.e is None:
        return None
    from attn_cli.views.shift import dominance_note

    note = dominance_note(result)
    return None if note is None else note.plain


def sense_row(row: dict) -> dict:
    """A sense meter row of the JSON, its senses as columns (names, before, after, change) for the page's table."""
    senses = row.pop("senses")
    return row | {key: [s[field] for s in senses] for key, field in
                  (("names", "name"), ("before", "before"), ("after", "after"), ("change", "change"))}


def theme(extra: str = "") -> str:
    """The style sheet of every page (inspect's, generate's, explain's and patch's): io/page.css, then a page's own rules."""
    return (HERE / "page.css").read_text(encoding="utf-8") + extra


def sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def kept_note(data: dict) -> str:
    """What the page kept of the weights, in words: on the page and in the line `--page` prints."""
    w = data["w"]
    if w["smallest"] == 1:
        return "every weight kept to three decimals"
    return (f"weights under {w['smallest'] / WEIGHT_SCALE:.3f} left out to keep the page small "
            f"({w['dropped']:,} cells, shown as <{w['smallest'] / WEIGHT_SCALE:.3f}); the others to three decimals")


def render(result, *, title: str, sentence: str) -> tuple[str, dict]:
    """The page's HTML (data, script and style inline, the policy naming the script and style by hash), and its data."""
    from attn_cli.io.files import printable
    from attn_cli.io.html_json import json_for_html

    script = (HERE / "page.js").read_text(encoding="utf-8")
    style = theme()
    content = page_data(result, sentence)
    content["kept"] = kept_note(content)
    data = json_for_html(content)
    model = content["model"]
    heading = f"{model['name']} · {model['layers']} layers × {model['heads']} heads" if model else "attention heads over word vectors"
    caption = ("each line from a token on the left to one on the right is a weight of the softmax of that token's row, "
               "as thick as it is large; " + ("causal mask: a token sees itself and the tokens before it" if result.mask == "causal"
                                               else "no mask: every token sees every token") + "; " + content["kept"])
    page = TEMPLATE.format(script_hash=sha256(script), style_hash=sha256(style), title=html.escape(cut(printable(title), 100)), style=style,
                           heading=html.escape(f"{heading}: “{cut(printable(sentence), HEADING)}”"), caption=html.escape(caption), data=data,
                           script=script)
    return page, content


def write_page(result, path: Path, *, title: str, sentence: str, force: bool) -> str:
    """The page, written whole under a temporary name and renamed into place; returns the line saying where
    it went, how big it is and what it kept (for stderr)."""
    from attn_cli.io.atomic import write_atomic, wrote

    page, content = render(result, title=title, sentence=sentence)
    page = page.encode("utf-8")
    write_atomic(path, lambda f: f.write(page), force=force)
    n = len(content["tokens"])
    return wrote(path, len(page), f"{n:,} token{'s' if n != 1 else ''}", content["kept"])


def cut(text: str, most: int) -> str:
    """A long text's start and end around "…", so that a document's page opens on its controls, not on its text."""
    return text if len(text) <= most else text[:most * 2 // 3] + " … " + text[-(most // 3 - 3):]

