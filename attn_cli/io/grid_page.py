"""`explain --page` and `patch --page`: one offline HTML page of a command's maps (layer × head, layer × position).

As the other pages (io/page.py, io/generate_page.py): one file, the numbers as JSON inside it, a hand-written script
and style sheet inside it too, and a Content-Security-Policy that allows only those two, by their SHA-256. Each map is
a grid of cells in diverging colours (orange above 0, blue below); hovering a cell names what it is and its value.
"""

import html

from attn_cli.io.generate_page import digest

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.2em;background:#111;color:#ddd}
h1{font-size:1.2em;margin:0 0 .3em}h2{font-size:1em;margin:1.2em 0 .3em}.dim{color:#999}
.scroll{overflow:auto;max-width:100%}table.grid{border-collapse:collapse}
table.grid td{width:2.6em;height:1.4em;text-align:center;font-size:11px;border:1px solid #222;color:#eee}
table.grid th{font-weight:normal;font-size:11px;color:#aaa;padding:0 4px;white-space:nowrap}
#hover{position:sticky;top:0;background:#111;padding:.4em 0;min-height:1.4em;font-weight:bold}
"""

SCRIPT = """
const data = JSON.parse(document.getElementById('data').textContent);
const hover = document.getElementById('hover'), root = document.getElementById('maps');
function colour(x, span) {
  const a = Math.min(Math.abs(x) / (span || 1), 1);
  return x >= 0 ? `rgba(255,150,40,${a.toFixed(3)})` : `rgba(60,140,255,${a.toFixed(3)})`;
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
<title>{title}</title><style>{style}</style></head><body>
<h1>{heading}</h1><p class="dim">{caption}</p><div id="hover" class="dim">hover a cell</div><div id="maps"></div>
<script type="application/json" id="data">{data}</script><script>{script}</script></body></html>
"""


def page_html(heading: str, caption: str, maps: list[dict]) -> str:
    """maps: [{"title", "rows": [str], "columns": [str], "values": [[float]], "describe": [[str]]}]; a value of None is blank."""
    from attn_cli.io.files import printable
    from attn_cli.io.html_json import json_for_html

    heading = printable(heading)
    text = json_for_html({"maps": maps})
    return TEMPLATE.format(script_hash=digest(SCRIPT), style_hash=digest(STYLE), title=html.escape(heading), style=STYLE,
                           heading=html.escape(heading), caption=html.escape(printable(caption)), data=text, script=SCRIPT)


def write_page(path, body_html: str, *, force: bool) -> str:
    """Written whole or not at all (io.atomic): where it went and its size, for the command to say."""
    from attn_cli.io.generate_page import write_html

    return write_html(path, body_html, force=force)


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
    return page_html(f"{result.model['name']}: {what_is_split(result)} at {result.tokens[result.position]!r} (#{result.position})", caption, maps)


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
    return page_html(f"{result.model['name']}: activation patching", caption, maps)
