"""`explain --page` and `patch --page`: one offline HTML page of a command's maps (layer × head, layer × position).

As the other pages (io/page.py, io/generate_page.py): one file, the numbers as JSON inside it, a hand-written script
and style sheet inside it too, and a Content-Security-Policy that allows only those two, by their SHA-256. Each map is
a grid of cells in diverging colours (orange above 0, blue below); hovering a cell names what it is and its value.
"""

import html

from attn_cli.io.generate_page import digest

STYLE = """
table.grid td{width:2.6em;height:1.5em;text-align:center;font-size:11px;border:1px solid var(--line);color:var(--fg)}
#hover{position:sticky;top:0;background:var(--bg);padding:.4em 0;min-height:1.4em;font-weight:bold;z-index:1}
.tokens{font:14px/2 "DejaVu Sans Mono",Menlo,Consolas,monospace;max-width:60em}
.tokens .name{color:var(--dim);margin-right:.6em}
.tokens span.tok{border:1px solid var(--line);border-radius:3px;padding:0 3px;margin-right:3px;white-space:pre}
.tokens span.tok.on{border-color:#f5c542;color:#f5c542;font-weight:bold}
.tokens span.index{color:var(--dim);font-size:11px;margin-right:1px}.tokens span.pair{white-space:nowrap}
.bar.up{background:rgba(255,150,40,.85)}.bar.down{background:rgba(60,140,255,.85)}
"""

SCRIPT = """
const data = JSON.parse(document.getElementById('data').textContent);
const hover = document.getElementById('hover'), root = document.getElementById('maps');
function colour(x, span) {
  const a = Math.min(Math.abs(x) / (span || 1), 1);
  return x >= 0 ? `rgba(255,150,40,${a.toFixed(3)})` : `rgba(60,140,255,${a.toFixed(3)})`;
}
(data.texts || []).forEach(line => {  // the text each run read, token by token, the position the maps are of marked
  const p = document.createElement('p'); p.className = 'tokens';
  const name = document.createElement('span'); name.className = 'name'; name.textContent = line.name; p.appendChild(name);
  line.tokens.forEach((t, i) => {
    const index = document.createElement('span'); index.className = 'index'; index.textContent = i;
    const s = document.createElement('span'); s.className = 'tok' + (i === line.on ? ' on' : ''); s.textContent = t;
    const pair = document.createElement('span'); pair.className = 'pair'; pair.appendChild(index); pair.appendChild(s);
    p.appendChild(pair); p.appendChild(document.createTextNode(' '));
  });
  document.getElementById('texts').appendChild(p);
});
if (data.ranked) {  // the largest parts, largest first, each with a bar as long as its share
  const box = document.getElementById('ranked');
  const h = document.createElement('h2'); h.textContent = data.ranked.title; box.appendChild(h);
  const table = document.createElement('table'); table.className = 'plain'; box.appendChild(table);
  const top = Math.max(...data.ranked.rows.map(r => Math.abs(r[1])));
  data.ranked.rows.forEach(([name, x]) => {
    const tr = table.insertRow(); tr.insertCell().textContent = name;
    const td = tr.insertCell(); td.className = 'num'; td.textContent = (x >= 0 ? '+' : '') + x.toFixed(3);
    const bar = document.createElement('span'); bar.className = 'bar ' + (x >= 0 ? 'up' : 'down');
    bar.style.width = `${(120 * Math.abs(x) / (top || 1)).toFixed(1)}px`; tr.insertCell().appendChild(bar);
  });
}
data.maps.forEach(map => {
  const h = document.createElement('h2'); h.textContent = map.title; root.appendChild(h);
  const box = document.createElement('div'); box.className = 'scroll'; root.appendChild(box);
  const table = document.createElement('table'); table.className = 'grid'; box.appendChild(table);
  const head = table.insertRow(); head.appendChild(document.createElement('th'));
  map.columns.forEach(c => { const th = document.createElement('th'); th.textContent = c; head.appendChild(th); });
  const span = Math.max(...map.values.flat().filter(Number.isFinite).map(Math.abs));
  map.values.forEach((row, i) => {
    const tr = table.insertRow(); const th = document.createElement('th'); th.textContent = map.rows[i]; tr.appendChild(th);
    row.forEach((x, j) => {
      const td = tr.insertCell(); td.style.background = Number.isFinite(x) ? colour(x, span) : '';
      td.textContent = Number.isFinite(x) ? x.toFixed(1) : '';
      td.dataset.map = map.title; td.dataset.i = i; td.dataset.j = j;
      td.addEventListener('mouseenter', () => { hover.textContent = map.describe[i][j]; });
    });
  });
});
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src '{script_hash}'; style-src '{style_hash}'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{style}</style></head><body>
<h1>{heading}</h1><p class="dim">{caption}</p><div id="texts"></div><div id="ranked"></div>
<div id="hover" class="dim">hover a cell</div><div id="maps"></div>
<script type="application/json" id="data">{data}</script><script>{script}</script></body></html>
"""


def page_html(heading: str, caption: str, maps: list[dict], texts: list[dict] | None = None, ranked: dict | None = None) -> str:
    """maps: [{"title", "rows": [str], "columns": [str], "values": [[float]], "describe": [[str]]}]; a value of None is blank.
    texts: [{"name", "tokens": [str], "on": int or None}], the tokens each run read, above the maps; ranked: {"title",
    "rows": [[name, value]]}, the largest parts as a table of bars, first."""
    from attn_cli.io.files import printable
    from attn_cli.io.html_json import json_for_html
    from attn_cli.io.page import theme

    heading = printable(heading)
    text = json_for_html({"maps": maps, **({"texts": texts} if texts else {}), **({"ranked": ranked} if ranked else {})})
    style = theme(STYLE)
    return TEMPLATE.format(script_hash=digest(SCRIPT), style_hash=digest(style), title=html.escape(heading), style=style,
                           heading=html.escape(heading), caption=html.escape(printable(caption)), data=text, script=SCRIPT)


def write_page(path, body_html: str, *, force: bool) -> str:
    """Written whole or not at all (io.atomic): where it went and its size, for the command to say."""
    from attn_cli.io.generate_page import write_html

    return write_html(path, body_html, force=force)


RANKED = 12  # the largest parts the explain page lists, as its terminal view does


def finite(x: float):
    return None if x != x or x in (float("inf"), float("-inf")) else round(float(x), 6)


def explain_page(result) -> str:
    from attn_cli.views.explain import what_is_split

    heads, mlps = result.heads(), result.mlps()
    values = [[finite(x) for x in row] + [finite(mlps[l])] for l, row in enumerate(heads)]
    describe = [[f"head {l}.{h}: {heads[l, h]:+.4f} of {what_is_split(result)}" for h in range(result.n_heads)]
                + [f"MLP {l}: {mlps[l]:+.4f}"] for l in range(result.n_layers)]
    maps = [{"title": "each head (and the MLP) of each layer: its share", "rows": [str(l) for l in range(result.n_layers)],
             "columns": [str(h) for h in range(result.n_heads)] + ["MLP"], "values": values, "describe": describe}]
    caption = (f"The parts sum to {result.total:.4f}; the model's own is {result.logit:.4f}. Orange pushes the target up, blue down; "
               "the final norm's scale frozen at the position, as TransformerLens's logit attribution does.")
    texts = [{"name": "the text read", "tokens": result.tokens, "on": result.position}]
    ranked = {"title": f"the {min(len(result.components), RANKED)} largest parts of {what_is_split(result)}",
              "rows": [[p.name, finite(p.logit)] for p in result.largest(RANKED)]}
    return page_html(f"{result.model['name']}: {what_is_split(result)} at {result.tokens[result.position]!r} (#{result.position})", caption, maps,
                     texts, ranked)


def patch_page(result) -> str:
    norm_resid, norm_heads = result.normalised(result.resid_pre), result.normalised(result.heads)
    L, n = result.resid_pre.shape
    H = result.heads.shape[1]
    tokens = result.clean_tokens
    maps = [
        {"title": "(a) the stream entering layer l at position p put back", "rows": [str(l) for l in range(L)],
         "columns": [f"{p}:{t}" for p, t in enumerate(tokens)], "values": [[finite(x) for x in row] for row in norm_resid],
         "describe": [[f"layer {l}, position {p} ({tokens[p]!r} / {result.corrupt_tokens[p]!r}): {norm_resid[l, p]:.3f} of the clean "
                       f"difference (raw {result.resid_pre[l, p]:.3f})" for p in range(n)] for l in range(L)]},
        {"title": "(b) one head's output at every position put back", "rows": [str(l) for l in range(L)], "columns": [str(h) for h in range(H)],
         "values": [[finite(x) for x in row] for row in norm_heads],
         "describe": [[f"head {l}.{h}: {norm_heads[l, h]:.3f} of the clean difference (raw {result.heads[l, h]:.3f})" for h in range(H)]
                      for l in range(L)]},
    ]
    caption = (f"The corrupt run with one activation put back from the clean run; metric {result.target['token']!r} − "
               f"{result.versus['token']!r}: {result.clean_logit_diff:.3f} clean, {result.corrupt_logit_diff:.3f} corrupt; "
               "1 gives back the clean difference, 0 changes nothing.")
    texts = [{"name": "clean", "tokens": tokens, "on": None}, {"name": "corrupt", "tokens": result.corrupt_tokens, "on": None}]
    return page_html(f"{result.model['name']}: activation patching", caption, maps, texts)


def compare_page(result) -> str:
    """`compare --page`: the two texts (and continuations), the tokens that moved most, the cosines layer by layer, a head's maps."""
    L, m = result.cosine.shape
    labels = [f"{p}:{a}" if a == b else f"{p}:{a}/{b}" for p, (a, b) in enumerate(zip(*result.labels))]
    mean, base = result.mean(), result.baseline
    summary = [[finite(result.last()[l]), None if mean is None else finite(mean[l]), None if base is None else finite(base[l])] for l in range(L)]
    maps = [
        {"title": "1 − cosine of A's and B's streams leaving layer l at each aligned position (0: the same direction)",
         "rows": [str(l) for l in range(L)], "columns": labels, "values": [[finite(1 - x) for x in row] for row in result.cosine],
         "describe": [[f"layer {l}, {labels[p]}: cosine {result.cosine[l, p]:.4f}" for p in range(m)] for l in range(L)]},
        {"title": "per layer: the cosine at the last position, the mean over the positions that differ, A's neighbouring positions (nb)",
         "rows": [str(l) for l in range(L)], "columns": ["last", "mean", "nb"], "values": summary,
         "describe": [[f"layer {l}, {name}: {'' if x is None else f'{x:.4f}'}" for name, x in zip(("last", "mean", "nb"), row)]
                      for l, row in enumerate(summary)]},
    ]
    if result.maps is not None:
        maps += head_page_maps(result, labels)
    texts = [{"name": "A", "tokens": result.tokens[0], "on": None}, {"name": "B", "tokens": result.tokens[1], "on": None}]
    if result.continuations is not None:
        c = result.continuations
        texts += [{"name": f"{name} continued", "tokens": c[side]["tokens"], "on": c["part"]} for name, side in (("A", "a"), ("B", "b"))]
    moved = sorted(result.rose + result.fell, key=lambda r: -(r["b"] - r["a"]))
    ranked = {"title": "the next token: the probabilities that rose and fell most, B − A",
              "rows": [[f"{r['token']} {r['a']:.4f} → {r['b']:.4f}", finite(r["b"] - r["a"])] for r in moved]}
    caption = (f"KL(A‖B) {result.kl[0]:.4g} nats, KL(B‖A) {result.kl[1]:.4g}"
               + ("" if result.kl_scale is None else f"; A's prediction one token earlier is KL {result.kl_scale:.4g} from its last")
               + f". Positions aligned by {result.aligned}. nb: the mean cosine of A's stream with A's at the next position, how alike"
               " two different tokens are.")
    return page_html(f"{result.model['name']}: A and B compared", caption, maps, texts, ranked)


def head_page_maps(result, labels: list[str]) -> list[dict]:
    l, h = result.head
    a, b = result.maps
    m = len(labels)
    out = []
    for title, values in ((f"head {l}.{h} in A", a), (f"head {l}.{h} in B", b), (f"head {l}.{h}: B − A", b - a)):
        out.append({"title": title, "rows": labels, "columns": labels, "values": [[finite(x) for x in row] for row in values],
                    "describe": [[f"{title}: {labels[i]} reads {labels[j]}: " + ("hidden (a later position)" if values[i, j] != values[i, j] else f"{values[i, j]:+.4f}")
                                 for j in range(m)] for i in range(m)]})
    return out
