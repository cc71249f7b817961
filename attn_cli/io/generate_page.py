"""`generate --page FILE`: one offline HTML page of a whole generation, every new token's attention over what came before.

As the inspect page (io/page.py): one file, the numbers as JSON inside it, a hand-written script and style sheet
inside it too, and a Content-Security-Policy that allows only those two, by their SHA-256. Each step's attention
([L, H, t]) is stored as 16-bit integers (weight x 65535, base64), so the two decimals the page shows are the
result's own; the page says so.
"""

import base64
import hashlib
import html

import numpy as np

SCALE = 65535  # weights as uint16: as close as the float16 rows kept (3 significant digits), below the 2 decimals shown

STYLE = """
#text{max-width:60em;margin:.6em 0;white-space:pre-wrap;overflow-wrap:break-word;line-height:1.9;font-size:16px}
#text span{border-radius:2px;cursor:default}
#text span.gen{color:#7fd4ff;cursor:pointer}#text span.special{color:#d48cf0}
#text span.current{outline:2px solid #f5c542}
#text span.nl::before{content:"\\21b5";color:var(--dim);font-size:.8em}
#info{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:13px}
input[type=range]{vertical-align:middle}table.plain tr.on td{color:#f5c542}
"""

SCRIPT = """
const data = JSON.parse(document.getElementById('data').textContent);
const box = document.getElementById('text'), layer = document.getElementById('layer'), head = document.getElementById('head');
const step = document.getElementById('step'), info = document.getElementById('info'), alts = document.getElementById('alts');
const raw = Uint8Array.from(atob(data.attention), c => c.charCodeAt(0));
const weights = new Uint16Array(raw.buffer);
const L = data.layers, H = data.heads, P = data.prompt.length;
function option(select, value, label) { const o = document.createElement('option'); o.value = value; o.textContent = label; select.appendChild(o); }
option(layer, -1, 'all, mean'); for (let l = 0; l < L; l++) option(layer, l, String(l));
option(head, -1, 'all, mean'); for (let h = 0; h < H; h++) option(head, h, String(h));
step.max = data.steps.length - 1;
const spans = [];
const texts = data.texts || data.prompt.concat(data.steps.map(s => s.token));  // each position's text as the model wrote it
texts.forEach((t, i) => {
  const s = document.createElement('span'); s.textContent = t;
  if (t.includes('\\n') && !t.trim()) s.classList.add('nl');  // a line break alone: a mark to shade, then the break
  if (i >= P) { s.classList.add('gen'); s.dataset.step = i - P; }
  if ((i < P && data.prompt_special[i]) || (i >= P && data.steps[i - P].special)) s.classList.add('special');
  box.appendChild(s); spans.push(s);
});
function row(k) {  // the weights step k's query gave every earlier position, at the chosen layer and head (or their mean)
  const t = P + k, out = new Float64Array(t), base = data.offsets[k];
  if (base === null) return null;  // a step whose row the page left out (data.left)
  const ls = +layer.value < 0 ? [...Array(L).keys()] : [+layer.value], hs = +head.value < 0 ? [...Array(H).keys()] : [+head.value];
  for (const l of ls) for (const h of hs) { const at = base + (l * H + h) * t; for (let j = 0; j < t; j++) out[j] += weights[at + j] / 65535; }
  const count = ls.length * hs.length; for (let j = 0; j < t; j++) out[j] /= count;
  return out;
}
function show(k) {
  const w = row(k) || new Float64Array(0), top = Math.max(...w);
  spans.forEach((s, j) => { s.style.background = j < w.length ? `rgba(255,170,60,${(w[j] / top).toFixed(3)})` : ''; s.classList.toggle('current', j === P + k); s.title = j < w.length ? w[j].toFixed(2) : ''; });
  const s = data.steps[k];
  info.textContent = `step ${k}: ${JSON.stringify(s.token)}, p = ${s.probability.toFixed(2)}; ` + (w.length ? `weights of the token it was read from, over positions 0 to ${w.length - 1}` : data.left_note);
  alts.innerHTML = '';
  s.top.forEach(a => { const tr = document.createElement('tr'); if (a.token === s.token) tr.className = 'on'; [a.token, a.probability.toFixed(3)].forEach((x, i) => { const td = document.createElement('td'); td.textContent = x; if (i) td.className = 'num'; tr.appendChild(td); }); alts.appendChild(tr); });
  step.value = k;
}
box.addEventListener('mouseover', e => { if (e.target.dataset.step !== undefined) show(+e.target.dataset.step); });
step.addEventListener('input', () => show(+step.value));
layer.addEventListener('change', () => show(+step.value)); head.addEventListener('change', () => show(+step.value));
if (data.steps.length) show(0);
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src '{script_hash}'; style-src '{style_hash}'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{style}</style></head><body>
<h1>{heading}</h1><p class="dim">{caption}</p>
<div class="controls"><label>step <input type="range" id="step" min="0" value="0"></label>
<label>layer <select id="layer"></select></label><label>head <select id="head"></select></label>
<span class="dim">hover a new token (blue) or move the slider</span></div>
<p id="info"></p><div id="text"></div>
<h2>the step's most probable tokens</h2>
<table class="plain"><thead><tr><th>token</th><th>p</th></tr></thead><tbody id="alts"></tbody></table>
<script type="application/json" id="data">{data}</script><script>{script}</script></body></html>
"""


def digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def page_html(result) -> str:
    from attn_cli.io.files import printable
    from attn_cli.io.html_json import json_for_html
    from attn_cli.io.page import theme
    from attn_cli.results.generate import STOPS

    m = result.model
    flat = [np.rint(np.clip(s.attention.astype(np.float64), 0, 1) * SCALE).astype("<u2").ravel() for s in result.steps if s.attention is not None]
    starts = iter(np.cumsum([0] + [a.size for a in flat])[:-1].tolist())
    offsets = [None if s.attention is None else next(starts) for s in result.steps]  # None: a step whose row was left out
    note = left_note(result)
    data = {
        "layers": m["layers"], "heads": m["heads"], "prompt": result.prompt_tokens, "prompt_special": result.prompt_special,
        "steps": [{"token": s.token, "probability": s.probability, "special": s.special,
                   "top": [{"token": t, "probability": p} for _, t, p in s.top]} for s in result.steps],
        "offsets": offsets, **({} if result.texts is None else {"texts": result.texts}), "left": len(result.steps) - len(flat), "left_note": note,
        "attention": base64.b64encode(np.concatenate(flat).tobytes() if flat else b"").decode(),
    }
    text = json_for_html(data)
    heading = printable(f"{m['name']}: {len(result.steps)} new tokens; stopped: {STOPS[result.stop]}")
    caption = ("Each new token was read from the token before it: the shading is that query's attention over every earlier "
               "position, at the layer and head chosen. Weights kept to 3 significant digits (float16)." + (f" {note}." if note else ""))
    style = theme(STYLE)
    return TEMPLATE.format(script_hash=digest(SCRIPT), style_hash=digest(style), title=html.escape(heading), style=style,
                           heading=html.escape(heading), caption=html.escape(caption), data=text, script=SCRIPT)


def left_note(result) -> str:
    """What the page left out of the steps' attention, in words ("" when it kept every step's)."""
    from attn_cli.analysis.generate import PAGE_CELLS

    left = sum(s.attention is None for s in result.steps)
    if not left:
        return ""
    kept = len(result.steps) - left
    return (f"the attention of the first {left:,} steps left out to keep the page small: it keeps the last {kept:,} steps' "
            f"(at most {PAGE_CELLS:,} weights)")


def write_page(path, result, *, force: bool) -> str:
    """The page, written whole under a temporary name and renamed (an interruption leaves no half page): where it went,
    its size and what it left out, for the command to say."""
    note = left_note(result)
    return write_html(path, page_html(result), force=force) + (f"; {note}" if note else "")


def write_html(path, text: str, *, force: bool) -> str:
    from attn_cli.io.atomic import write_atomic, wrote

    body = text.encode("utf-8")
    return wrote(write_atomic(path, lambda f: f.write(body), force=force), len(body))
