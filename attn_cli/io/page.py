"""`inspect --page FILE`: one self-contained HTML page to explore a sentence's attention, offline.

The page is one file: the result's numbers as JSON inside it, the script (io/page.js, written by
hand, no library) and the style sheet (io/page.css) inside it too. Its Content-Security-Policy
allows only that script and that style sheet, by their SHA-256, and nothing else from anywhere
(default-src 'none'): the page cannot load a font, an image or a script, nor send a request.
"""

import base64
import hashlib
import html
import json
from pathlib import Path

HERE = Path(__file__).parent
WEIGHT_SCALE = 1000  # weights are written in thousandths: the page shows them to 3 decimals, as rounded from the result

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
<div class="panels">
<div id="lines"></div>
<div id="side">
<div id="row"></div>
<h2 id="grid-title">weights</h2>
<div class="scroll" id="grid"></div>
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


def thousandths(matrix) -> list[int]:  # [n, n] -> n * n ints
    import numpy as np

    return np.rint(np.asarray(matrix, dtype=np.float64) * WEIGHT_SCALE).astype(np.int64).ravel().tolist()


def page_data(result, sentence: str) -> dict:
    """What the page shows, from the one result: every head's weights (a checkpoint's every layer), and the
    E' neighbours and sense meter where the result has them."""
    import numpy as np

    from attn_cli.results import SINK_TOKEN

    n = len(result.tokens)
    if result.weights is not None:  # a checkpoint: every head of every layer
        weights = np.asarray(result.weights)  # [L, H, g, g]
        layers = [[thousandths(weights[l, h]) for h in range(weights.shape[1])] for l in range(weights.shape[0])]
        names = [[str(h) for h in range(weights.shape[1])] for _ in range(weights.shape[0])]
        allowed, sinks = result.allowed, {}
    else:
        layers = [[thousandths(head.weights) for head in result.heads]]
        names = [[head.name for head in result.heads]]
        allowed = result.heads[0].allowed if result.heads else None
        sinks = {f"0.{h}": thousandths(head.sink_weights) for h, head in enumerate(result.heads) if head.sink is not None}
    data = {
        "sentence": sentence, "tokens": list(result.tokens), "model": result.model, "mask": result.mask,
        "layers": len(layers), "heads": len(layers[0]), "names": names, "w": layers, "sink": sinks or None, "sinkLabel": SINK_TOKEN,
        "allowed": None if allowed is None else "".join("1" if a else "0" for a in np.asarray(allowed).ravel().tolist()),
        "special": None if result.special is None else list(result.special),
        "neighbors": None if result.near_input is None else {"input": result.near_input, "output": result.near_output},
        "senses": None if result.senses is None else [sense_row(row.to_dict()) for row in result.senses],
        "note": shift_note(result),
    }
    assert len(data["tokens"]) == n
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


def sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def render(result, *, title: str, sentence: str) -> str:
    """The page's HTML: data, script and style inline, the policy naming the script and style by hash."""
    script = (HERE / "page.js").read_text(encoding="utf-8")
    style = (HERE / "page.css").read_text(encoding="utf-8")
    data = json.dumps(page_data(result, sentence), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")  # never "</script>" inside the data
    model = result.model
    heading = f"{model['name']} · {model['layers']} layers × {model['heads']} heads" if model else "attention heads over word vectors"
    caption = ("each line from a token on the left to one on the right is a weight of the softmax of that token's row, "
               "as thick as it is large; " + ("causal mask: a token sees itself and the tokens before it" if result.mask == "causal"
                                               else "no mask: every token sees every token"))
    return TEMPLATE.format(script_hash=sha256(script), style_hash=sha256(style), title=html.escape(title), style=style,
                           heading=html.escape(f"{heading}: “{sentence}”"), caption=html.escape(caption), data=data, script=script)


def write_page(result, path: Path, *, title: str, sentence: str, force: bool) -> None:
    """The page, written whole under a temporary name and renamed into place."""
    from attn_cli.io.atomic import write_atomic

    page = render(result, title=title, sentence=sentence).encode("utf-8")
    write_atomic(path, lambda f: f.write(page), force=force)
