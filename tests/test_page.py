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
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attn_cli.cli import app
from tests import checkpoints
from tests.browser import Browser

runner = CliRunner()
LESSON = "A fluffy blue creature roamed the verdant forest."
TOLERANCE = 0.0005 + 1e-9  # the page writes weights in thousandths
needs_browser = pytest.mark.skipif(Browser.find() is None, reason="no Chromium installed (apt-get install chromium)")


def page(tmp_path: Path, *args: str, name: str = "page.html") -> tuple[Path, dict]:
    """The page of `inspect TEXT ARGS --page`, and the JSON of the same command."""
    path = tmp_path / name
    result = runner.invoke(app, ["inspect", *args, "--page", str(path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    data = runner.invoke(app, ["inspect", *args, "--json"])
    assert data.exit_code == 0, data.stderr
    return path, json.loads(data.stdout)


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
    box = browser.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect(); "
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
