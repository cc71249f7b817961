"""`inspect --page`: one HTML file that works offline, checked as text and in a real headless Chromium.

The browser tests are skipped only when no Chromium is installed (.ci/run installs Debian's). They
load the page, hover a token, compare the weights the page highlights with `--json`, and check that
no request leaves the file: none while it loads, and none when the page is made to try (the policy
refuses it before it is sent, and a server listening for it hears nothing). Set ATTN_PAGE_SHOTS to a
folder to keep the screenshots taken before and after the hover.
"""

import base64
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from attn_cli.cli import app
from tests import checkpoints
from tests.browser import Browser
from tests.exact import assert_same_ids

runner = CliRunner()
LESSON = "A fluffy blue creature roamed the verdant forest."
TOLERANCE = 0.0005 + 1e-9  # the page writes weights in thousandths
needs_browser = pytest.mark.skipif(Browser.find() is None, reason="no Chromium installed (apt-get install chromium)")


def page(tmp_path: Path, *args: str, name: str = "page.html") -> tuple[Path, dict]:
    """The page of `inspect TEXT ARGS --page`, and the JSON of the same command."""
    path = tmp_path / name
    result = runner.invoke(app, ["inspect", *args, "--page", str(path), "--json"])  # one run writes both
    assert result.exit_code == 0, result.stderr
    return path, json.loads(result.stdout)


def test_the_page_is_one_file_that_names_its_only_script_and_style(tmp_path):
    path, _ = page(tmp_path, LESSON, "--sense-set", "lesson")
    text = path.read_text(encoding="utf-8")
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', text).group(1)
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy and "form-action 'none'" in policy
    scripts = re.findall(r"<script>(.*?)</script>", text, re.S)
    styles = re.findall(r"<style>(.*?)</style>", text, re.S)
    assert len(scripts) == 1 and len(styles) == 1
    for kind, body in (("script-src", scripts[0]), ("style-src", styles[0])):
        digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode()
        assert f"{kind} 'sha256-{digest}'" in policy
    assert not re.search(r"\b(src|href)\s*=|@import|url\(", text)  # nothing to load
    assert set(re.findall(r"https?://[^\s\"'<)]+", text)) == {"http://www.w3.org/2000/svg"}  # the SVG namespace, not a request
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S).group(1))
    assert data["tokens"][3] == "creature" and data["names"] == [["adjective", "context"]] and data["senses"][0]["token"] == "creature"
    assert data["neighbors"] is not None  # the page holds the nearest keys, as JSON does
    assert data["note"].startswith("ΔE outweighs E here") and "fluffy for 5 of 9" in data["note"]  # the terminal's note, beside them


def test_a_page_of_a_checkpoint_holds_every_head_of_every_layer(tmp_path):
    path, _ = page(tmp_path, "the cat sat on the mat", "--model", str(checkpoints.tiny_gpt2_folder()))
    data = json.loads(re.search(r'id="data">(.*?)</script>', path.read_text(encoding="utf-8"), re.S).group(1))
    n = len(data["tokens"])
    assert data["layers"] == 2 and data["heads"] == 4 and data["allowed"] == "causal"  # GPT-2's causal mask
    assert data["w"]["smallest"] == 1 and data["w"]["cells"] == "lower" and data["window"] == [None, None]
    assert data["kept"] == "every weight kept to three decimals"


def test_page_options_are_checked_before_any_work(tmp_path):
    result = runner.invoke(app, ["inspect", LESSON, "--page", str(tmp_path / "page.svg")])
    assert result.exit_code == 2 and "--page" in result.stderr and ".html" in result.stderr
    result = runner.invoke(app, ["inspect", "-", "--page", str(tmp_path / "p.html")], input="the cat\n")
    assert result.exit_code == 2 and "give it as TEXT, not -" in result.stderr
    (tmp_path / "old.html").write_text("mine")
    result = runner.invoke(app, ["inspect", LESSON, "--page", str(tmp_path / "old.html")])
    assert result.exit_code == 2 and (tmp_path / "old.html").read_text() == "mine"


class Listener(http.server.BaseHTTPRequestHandler):
    """A server the page is made to call: it counts what reaches it."""

    heard: list[str] = []

    def do_GET(self):
        Listener.heard.append(self.path)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def centre(browser: Browser, selector: str) -> tuple[float, float]:
    box = browser.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}}); "
                           "const r = e.getBoundingClientRect(); "
                           "return [r.x + r.width / 2, r.y + r.height / 2]; })()")
    return box[0], box[1]


def highlighted(browser: Browser, head: int) -> list:
    return browser.evaluate(f"[...document.querySelectorAll('#row .weights[data-head=\"{head}\"] .cell')].map(c => c.dataset.weight)")


def choose(browser: Browser, select: str, value: str) -> None:
    """Pick `value` in the page's <select id=select>, as a person would."""
    browser.evaluate(f"(() => {{ const s = document.getElementById('{select}'); s.value = '{value}'; s.dispatchEvent(new Event('change')); }})()")
    browser.ready()  # a layer is inflated when it is picked


def keep(shot: Path) -> None:
    if os.environ.get("ATTN_PAGE_SHOTS"):
        shutil.copy(shot, Path(os.environ["ATTN_PAGE_SHOTS"]) / shot.name)


@needs_browser
@pytest.mark.slow
def test_hovering_a_token_shows_its_weights_as_the_json_has_them_and_nothing_leaves_the_file(tmp_path):
    path, data = page(tmp_path, LESSON, "--sense-set", "lesson")
    with Browser() as browser:
        browser.viewport(1280, 900)
        browser.open(path)
        browser.ready()
        assert browser.evaluate("document.querySelectorAll('#lines line').length") > 0  # every query's lines before a hover
        before = tmp_path / "page-before-hover.png"
        browser.screenshot(before)
        browser.hover(*centre(browser, 'rect.hit[data-index="3"]'))  # "creature"
        after = tmp_path / "page-after-hover.png"
        browser.screenshot(after)
        keep(before), keep(after)
        weights = data["heads"][0]["weights"][3]  # the adjective head, query "creature"
        shown = highlighted(browser, 0)
        assert len(shown) == 9 and all(s == "" for s in shown[4:])  # the masked keys: no number
        assert all(abs(float(s) - w) <= TOLERANCE for s, w in zip(shown[:4], weights[:4])), (shown, weights)
        lines = browser.evaluate("[...document.querySelectorAll('#lines line')].map(l => [+l.dataset.query, +l.dataset.key, +l.dataset.weight])")
        assert lines and {q for q, _, _ in lines} == {3}  # only the hovered token's lines
        assert all(abs(w - weights[k]) <= TOLERANCE for _, k, w in lines)
        assert browser.evaluate("document.querySelector('#neighbours tr.on th').textContent") == "creature"
        assert "furry" in browser.evaluate("document.getElementById('senses').textContent")
        assert browser.evaluate("document.getElementById('neighbours-note').textContent").startswith("ΔE outweighs E here")
        assert browser.requests == [path.resolve().as_uri()] and browser.console == []  # the file itself; no error, no policy report

        server = http.server.HTTPServer(("127.0.0.1", 0), Listener)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_port}/probe"
        refused = browser.evaluate(f"""new Promise(done => {{
            const seen = [];
            document.addEventListener("securitypolicyviolation", e => seen.push(e.violatedDirective));
            const img = document.createElement("img"); img.src = "{url}.png"; document.body.appendChild(img);
            fetch("{url}").catch(() => seen.push("fetch refused")).finally(() => setTimeout(() => done(seen), 300));
        }})""")
        server.shutdown()
        assert Listener.heard == [] and "fetch refused" in refused and any(d.startswith(("img-src", "connect-src", "default-src")) for d in refused)


@needs_browser
@pytest.mark.slow
def test_a_checkpoints_page_picks_a_layer_and_head_shows_all_heads_and_enlarges_a_thumbnail(tmp_path):
    path, data = page(tmp_path, LESSON, "--model", str(checkpoints.minilm_folder()), name="minilm.html")
    by_head = {(h["layer"], h["head"]): h["weights"] for h in data["heads"]}
    with Browser() as browser:
        browser.viewport(1280, 900)
        browser.open(path)
        browser.ready()
        choose(browser, "layer", "2")
        choose(browser, "head", "11")
        browser.hover(*centre(browser, 'rect.hit[data-index="4"]'))  # "creature"
        shown = [float(s) for s in highlighted(browser, 11)]
        assert len(shown) == len(data["tokens"]) and max(abs(s - w) for s, w in zip(shown, by_head[2, 11][4])) <= TOLERANCE
        choose(browser, "head", "all")
        browser.hover(*centre(browser, 'rect.hit[data-index="4"]'))
        heads = browser.evaluate("[...new Set([...document.querySelectorAll('#lines line')].map(l => l.getAttribute('stroke')))].length")
        assert heads == 12 and len(highlighted(browser, 5)) == len(data["tokens"])  # a colour, and a row, per head
        assert browser.evaluate("document.querySelectorAll('canvas.thumb').length") == 72
        browser.evaluate("document.querySelector('canvas.thumb[data-layer=\"0\"][data-head=\"2\"]').click()")
        browser.ready()
        assert browser.evaluate("document.getElementById('big').hidden") is False
        assert browser.evaluate("document.getElementById('big-title').textContent").startswith("layer 0 · head 2")
        assert browser.evaluate("document.querySelectorAll('#big-grid td').length") == len(data["tokens"]) ** 2
        assert browser.requests == [path.resolve().as_uri()] and browser.console == []


@needs_browser
@pytest.mark.slow
def test_the_page_reads_on_a_phone_sized_screen(tmp_path):
    path, _ = page(tmp_path, LESSON)
    with Browser() as browser:
        browser.viewport(390, 844, mobile=True)
        browser.open(path)
        browser.ready()
        browser.tap(*centre(browser, 'rect.hit[data-index="3"]'))  # a tap pins the token
        assert browser.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the screen but the scrolled grids
        assert browser.evaluate("document.querySelector('.token.query.on').textContent") == "creature"
        size = browser.evaluate("parseFloat(getComputedStyle(document.querySelector('#row .number')).fontSize)")
        assert size >= 12
        shot = tmp_path / "page-phone.png"
        browser.screenshot(shot)
        keep(shot)


# --- what the page keeps of the weights, and how it reads them back ------------------------------------

def page_json(path: Path) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', path.read_text(encoding="utf-8"), re.S).group(1))


def leb128(data: bytes, at: int, count: int) -> tuple[list[int], int]:
    """A plain loop, not the page's code: `count` LEB128 integers from `at`."""
    out = []
    for _ in range(count):
        x = shift = 0
        while True:
            b = data[at]
            at += 1
            x |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        out.append(x)
    return out, at


def decoded(data: dict) -> np.ndarray:  # -> [L, H, n, n] thousandths, as the file holds them
    n, w = len(data["tokens"]), data["w"]
    out = np.zeros((data["layers"], data["heads"], n, n), dtype=np.int64)
    cells = [(i, j) for j in range(n) for i in range(j if w["cells"] == "lower" else 0, n)]  # key by key
    for l, text in enumerate(w["layers"]):
        raw = zlib.decompress(base64.b64decode(text))
        gaps, end = leb128(raw, 0, w["entries"][l])
        values, end = leb128(raw, end, w["entries"][l])
        assert end == len(raw)
        p = -1
        for gap, value in zip(gaps, values):
            p += gap + 1
            h, c = divmod(p, len(cells))
            out[(l, h, *cells[c])] = value
    return out


def synthetic(n: int, layers: int, heads: int, *, window: dict | None = None, seed: int = 0, name: str = "synthetic"):
    """An InspectResult of a causal checkpoint with random scores: softmax over the keys a query sees, where a
    layer in `window` ({layer: W}) sees only the W tokens up to itself (its other weights exactly 0)."""
    from attn_cli.core.softmax import softmax
    from attn_cli.results.inspect import InspectResult

    rng = np.random.default_rng(seed)
    distance = np.subtract.outer(np.arange(n), np.arange(n))  # [n, n]: query - key
    weights = np.empty((layers, heads, n, n), dtype=np.float32)
    for l in range(layers):
        seen = (distance >= 0) & (distance < (window or {}).get(l, n))
        scores = np.where(seen, rng.normal(0, 2, (heads, n, n)), -np.inf)
        weights[l] = softmax(scores)
    return InspectResult([f"t{i}" for i in range(n)], "causal", [], weights=weights, allowed=distance >= 0,
                         model={"name": name, "type": "decoder", "layers": layers, "heads": heads},
                         special=[False] * n, words=False, hide_special=False)


def test_the_file_holds_every_weight_to_the_thousandth_a_plain_decoder_reads_back(tmp_path):
    path, _ = page(tmp_path, "the cat sat on the mat", "--model", str(checkpoints.tiny_gpt2_folder()))
    from attn_cli.analysis.inspect import InspectSettings, inspect
    from attn_cli.models.loading import load

    result = inspect(load(str(checkpoints.tiny_gpt2_folder())), "the cat sat on the mat", InspectSettings())
    kept = decoded(page_json(path))  # [L, H, n, n] thousandths: ints
    lower = np.tri(kept.shape[-1], dtype=bool)
    assert np.abs(kept / 1000 - result.weights)[..., lower].max() <= 0.0005 + 1e-6  # thousandths, rounded
    assert not kept[..., ~lower].any()  # nothing stored where the mask hides the key


def test_a_page_past_its_budget_leaves_out_the_smallest_weights_and_says_so(tmp_path):
    from attn_cli.io import page as page_module

    result = synthetic(80, 2, 3)
    roomy = page_module.page_data(result, "x")
    assert roomy["w"]["smallest"] == 1 and roomy["w"]["dropped"] == 0
    small = page_module.Stack(result)
    tight = page_module.kept_weights(small, budget=sum(map(len, roomy["w"]["layers"])) // 3)
    assert tight["smallest"] > 1
    data = {**roomy, "w": tight}
    kept, full = decoded(data), page_module.thousandths(result.weights)
    lower = np.tri(80, dtype=bool)[None, None] & np.ones(full.shape, dtype=bool)
    big = full >= tight["smallest"]
    assert_same_ids(kept[big], full[big])  # counts of thousandths, no arithmetic on floats
    assert not kept[lower & ~big].any()
    assert tight["dropped"] == int((lower & ~big & (full > 0)).sum())
    note = page_module.kept_note(data)
    assert note.startswith(f"weights under {tight['smallest'] / 1000:.3f} left out") and f"{tight['dropped']:,} cells" in note


def test_a_window_read_from_the_weights_or_stated_by_the_model_and_a_name_with_esc_escaped(tmp_path):
    from attn_cli.io import page as page_module

    result = synthetic(40, 3, 2, window={1: 7}, name="evil\x1b[2Jname")
    data = page_module.page_data(result, "x")
    assert data["window"] == [None, 7, None] and data["windowSource"] == "the trace"
    assert data["from"][0] is None and data["from"][1][:9] == [0] * 7 + [1, 2]
    result.model["windows"] = [5, None, None]  # what a model that knows its windows states
    data = page_module.page_data(result, "x")
    assert data["window"] == [5, None, None] and data["windowSource"] == "the model"
    text, _ = page_module.render(result, title="attn inspect: x\x07", sentence="x")
    assert "\x1b" not in text and "\x07" not in text
    assert re.search(r"<h1>evil\\x1b\[2Jname · ", text) and "<title>attn inspect: x\\x07</title>" in text


def test_page_says_on_stderr_where_it_went_and_how_big_it_is(tmp_path):
    path = tmp_path / "p.html"
    result = runner.invoke(app, ["inspect", LESSON, "--page", str(path)])
    assert result.exit_code == 0 and result.stdout.strip()
    size = path.stat().st_size
    assert result.stderr == f"attn: wrote {path} ({size / 1e3:.0f} kB; 9 tokens; every weight kept to three decimals)\n"
    run = subprocess.run([sys.executable, "-m", "attn_cli", "inspect", LESSON, "--page", str(tmp_path / "q.html"), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and json.loads(run.stdout)["tokens"][3] == "creature"
    assert run.stderr.startswith(f"attn: wrote {tmp_path / 'q.html'} (") and run.stderr.count("\n") == 1


def written(tmp_path: Path, result, name: str = "synthetic.html") -> Path:
    from attn_cli.io.page import write_page

    path = tmp_path / name
    write_page(result, path, title="attn inspect", sentence="a synthetic text", force=False)
    return path


@needs_browser
def test_the_browser_reads_back_every_weight_masks_a_window_and_the_heatmap_stays_in_its_panel_at_1400px(tmp_path, monkeypatch):
    result = synthetic(60, 3, 2, window={1: 7})
    path = written(tmp_path, result)
    from attn_cli.io import page as page_module

    monkeypatch.setattr(page_module, "PAGE_LEAST", 0)
    monkeypatch.setattr(page_module, "PAGE_PER_TOKEN", 400)  # a page that must leave out its smallest weights
    tight = written(tmp_path, result, "tight.html")
    smallest = page_json(tight)["w"]["smallest"]
    assert smallest > 1
    with Browser() as browser:
        browser.viewport(1400, 900)
        browser.open(tight)
        browser.ready()
        got = packed_layers(browser, [0])[0].reshape(2, 60, 60)
        full = np.rint(result.weights[0].astype(np.float64) * 1000)
        assert ((got == 0) | (got >= smallest)).all() and np.abs(got - full)[got > 0].max() <= 0.5 + 1e-3  # thousandths
        assert np.all(full[(got == 0) & np.tri(60, dtype=bool)] < smallest)  # what is left out is under the smallest kept
        browser.hover(*centre(browser, 'rect.hit[data-index="59"]'))
        more = browser.evaluate("document.querySelector('#row .weights[data-head=\"0\"] .more').textContent")
        thirteenth = np.sort(full[0, 59])[::-1][12]  # the strongest key after the 12 shown
        assert more == f"and 48 more keys, each " + (f"<{smallest / 1000:.3f}" if thirteenth < smallest else f"≤ {thirteenth / 1000:.3f}")
        assert f"weights under {smallest / 1000:.3f} left out" in browser.evaluate("document.querySelector('p.dim').textContent")

        browser.open(path)
        browser.ready()
        kept = np.array(browser.evaluate("Promise.all([0, 1, 2].map(load)).then(ls => ls.map(l => Array.from(l)))"), dtype=np.float64)
        kept = kept.reshape(result.weights.shape) / 1000
        lower = np.tri(60, dtype=bool)
        assert np.abs(kept - result.weights)[..., lower].max() <= TOLERANCE  # every cell, to the thousandth shown
        assert browser.evaluate("document.getElementById('legend').hidden") is True  # layer 0 has no window
        choose(browser, "layer", "1")
        legend = browser.evaluate("document.getElementById('legend').textContent")
        assert legend.startswith("layer 1 is a local layer: a token sees only itself and the 6 tokens before it") and "exactly 0" in legend
        browser.hover(*centre(browser, 'rect.hit[data-index="30"]'))
        cells = browser.evaluate("[...document.querySelectorAll('#row .weights[data-head=\"0\"] .cell')].map(c => [+c.dataset.key, c.dataset.weight])")
        assert sorted(k for k, _ in cells) == list(range(24, 31))  # the window's 7 keys, no more (fewer than the row's top 12)
        assert all(abs(float(w) - result.weights[1, 0, 30, k]) <= TOLERANCE for k, w in cells)
        assert browser.console == []  # (the test's own pixel reads below make Chromium advise willReadFrequently)
        pixel = "(i, j) => Array.from(document.querySelector('#grid canvas').getContext('2d').getImageData(j, i, 1, 1).data.slice(0, 3))"
        assert browser.evaluate(f"({pixel})(30, 10)") == [17, 17, 17]  # outside the window: masked, as the causal mask
        assert browser.evaluate(f"({pixel})(30, 40)") == [17, 17, 17]
        assert browser.evaluate(f"({pixel})(30, 28)") != [17, 17, 17]
        assert browser.evaluate("document.documentElement.scrollWidth") <= 1400
        frame, side = (browser.evaluate(f"(() => {{ const r = document.querySelector('{s}').getBoundingClientRect(); return [r.left, r.right]; }})()")
                       for s in ("#grid .frame", "#side"))
        assert side[0] <= frame[0] and frame[1] <= side[1]
        shot = tmp_path / "page-1400.png"
        browser.screenshot(shot, full=False)
        keep(shot)


def packed_layers(browser: Browser, layers: list[int]) -> list[np.ndarray]:
    """The layers as the page's script holds them, each [H, n, n] thousandths, carried as base64 (a plain array would be megabytes of JSON)."""
    texts = browser.evaluate(f"Promise.all({json.dumps(layers)}.map(load)).then(ls => ls.map(l => {{ const b = new Uint8Array(l.buffer); "
                             "let s = ''; for (let i = 0; i < b.length; i += 32768) s += String.fromCharCode.apply(null, b.subarray(i, i + 32768)); "
                             "return btoa(s); }))")
    return [np.frombuffer(base64.b64decode(t), dtype="<u2") for t in texts]


@pytest.mark.slow
@needs_browser
def test_a_page_of_1024_tokens_loads_in_seconds_and_hovering_a_token_shows_its_strongest_keys(tmp_path):
    result = synthetic(1024, 2, 4, window={1: 256}, seed=3)
    path = written(tmp_path, result, "long.html")
    assert path.stat().st_size <= 17_000_000
    with Browser() as browser:
        browser.viewport(1400, 900)
        start = time.monotonic()
        browser.open(path)
        browser.ready()
        assert time.monotonic() - start < 6  # seconds from opening the file to drawn (about 1 s measured, on 2 busy cores)
        assert browser.evaluate("document.querySelectorAll('#lines line').length") == 0  # no line before a hover: 1,024 rows of them would be 100,000
        choose(browser, "layer", "1")
        browser.hover(*centre(browser, 'rect.hit[data-index="700"]'))
        cells = browser.evaluate("[...document.querySelectorAll('#row .weights[data-head=\"0\"] .cell')].map(c => [+c.dataset.key, c.dataset.weight])")
        row = result.weights[1, 0, 700]
        thousandths = np.rint(row.astype(np.float64) * 1000)  # as the page keeps them
        shown_keys = [k for k, _ in cells]
        assert len(cells) == 12 and all(445 <= k <= 700 for k in shown_keys)  # inside the window of 256
        assert list(thousandths[shown_keys]) == sorted(thousandths[shown_keys], reverse=True)  # strongest first
        assert thousandths[shown_keys].min() >= np.delete(thousandths[445:701], [k - 445 for k in shown_keys]).max()  # the 12 strongest
        assert all(abs(float(w) - row[k]) <= TOLERANCE for k, w in cells)
        more = browser.evaluate("document.querySelector('#row .weights[data-head=\"0\"] .more').textContent")
        assert more.startswith(f"and {256 - 12} more keys, each ")
        lines = browser.evaluate("[...document.querySelectorAll('#lines line')].map(l => +l.dataset.key)")
        assert lines and all(445 <= k <= 700 for k in lines)
        got = packed_layers(browser, [1])[0].reshape(4, 1024, 1024) / 1000
        assert np.abs(got - result.weights[1])[:, np.tri(1024, dtype=bool)].max() <= TOLERANCE
        assert browser.console == [] and browser.evaluate("document.documentElement.scrollWidth") <= 1400  # the heatmap scrolls in its panel
        shot = tmp_path / "page-1024.png"
        browser.screenshot(shot, full=False)
        keep(shot)


HARBOR = ("The harbor was quiet in the early morning, and the fishing boats rocked gently against the pier while gulls circled "
          "overhead looking for scraps. An old sailor sat on a crate, mending a net with slow, careful hands, and told anyone who "
          "would listen about the storm of his youth. ")


def text_of(model, tokens: int) -> str:
    """The longest run of HARBOR's words (repeated) that is at most `tokens` tokens for `model`."""
    words = (HARBOR * (tokens // 20 + 1)).split()
    low, high = 1, len(words)
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if len(model.tokenize(" ".join(words[:mid])).ids) <= tokens else (low, mid - 1)
    return " ".join(words[:low])


@pytest.mark.slow
@needs_browser
def test_smollm2s_page_of_300_tokens_is_under_5_mb_and_every_weight_read_back_is_the_traces_to_the_thousandth(tmp_path):
    from attn_cli.analysis.inspect import InspectSettings, inspect
    from attn_cli.io.page import write_page
    from attn_cli.models.loading import load

    model = load(str(checkpoints.smollm2_gguf()))
    text = text_of(model, 300)
    result = inspect(model, text, InspectSettings())
    n = len(result.tokens)
    assert 295 <= n <= 300
    path = tmp_path / "smollm2.html"
    said = write_page(result, path, title="attn inspect", sentence=text, force=False)
    assert path.stat().st_size <= 5_000_000 and said.startswith(f"wrote {path} (")
    data = page_json(path)
    with Browser() as browser:
        browser.viewport(1400, 900)
        browser.open(path)
        assert browser.ready() < 5
        lower = np.tri(n, dtype=bool)
        for l, got in zip((0, 15, 29), packed_layers(browser, [0, 15, 29])):
            got = got.reshape(9, n, n).astype(np.float64)
            small = data["w"]["smallest"]  # every weight under it shows as "<" it: so its cells must be under it
            error = np.where(got == 0, np.maximum(result.weights[l] * 1000 - (small - 0.5), 0), np.abs(got - result.weights[l] * 1000))
            assert error[:, lower].max() <= 0.5 + 1e-3, l  # thousandths, rounded
        assert browser.evaluate("document.documentElement.scrollWidth") <= 1400
        browser.hover(*centre(browser, 'rect.hit[data-index="200"]'))
        shown = {k: float(w) for k, w in browser.evaluate(
            "[...document.querySelectorAll('#row .weights[data-head=\"0\"] .cell')].map(c => [+c.dataset.key, c.dataset.weight])")}
        assert len(shown) == 12 and all(abs(w - result.weights[0, 0, 200, k]) <= TOLERANCE for k, w in shown.items())
        assert browser.console == []
        shot = tmp_path / "page-smollm2-300.png"
        browser.screenshot(shot, full=False)
        keep(shot)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 12), heads=st.integers(1, 3), causal=st.booleans(), budget=st.sampled_from([10**9, 200, 0]), seed=st.integers(0, 2**16))
def test_the_kept_cells_decode_to_the_thousandths_for_any_shape_mask_and_budget(n, heads, causal, budget, seed):
    from attn_cli.io import page as page_module

    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.full(n, 0.3), size=(2, heads, n)).astype(np.float32)  # [2, H, n, n]: rows of 1
    if causal:
        weights = np.where(np.tri(n, dtype=bool), weights, 0)
    result = synthetic(n, 2, heads)
    result.weights, result.allowed = weights, (np.tri(n, dtype=bool) if causal else None)
    stack = page_module.Stack(result)
    w = page_module.kept_weights(stack, budget)
    kept = decoded({"tokens": [""] * n, "layers": 2, "heads": heads, "w": w})  # ints
    full = page_module.thousandths(weights).astype(np.int64)
    seen = np.tri(n, dtype=bool) if causal else np.ones((n, n), dtype=bool)
    expected = np.where(full >= w["smallest"], full, 0)
    assert_same_ids(kept[..., seen], expected[..., seen])  # thousandths: ints
    assert not kept[..., ~seen].any()
    assert w["dropped"] == int(((full > 0) & (full < w["smallest"]))[..., seen].sum())
