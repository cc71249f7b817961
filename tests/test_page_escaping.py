"""Every page's data goes through io/html_json.json_for_html: a token that reads as HTML (`<!--<script>`, `</script>`,
`]]>`) or as a line end (U+2028) neither ends the data nor hides the page's script, and reads back exactly.

The pages are written by their own writers from real results of the committed tiny models (tests/fixtures/models), their
tokens replaced by hostile ones, and opened in a real headless Chromium (tests/browser.py): each page's script ran, the
console holds no error, and the labels read from the DOM are the tokens as the page was given them.
"""

import json
from functools import cache
from html.parser import HTMLParser

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests import checkpoints
from tests.browser import Browser

# no "-->" in the pages: after "<!--<script>" it would end what hides the rest, and a page escaped as before would pass
HOSTILE = ["<!--<script>", "</script>", "]]>", "a\u2028b", "c\u2029d", "&amp;", "<\\/x>", "</script><script>alert(1)</script>"]
needs_browser = pytest.mark.skipif(Browser.find() is None, reason="no Chromium installed (apt-get install chromium)")


class ScriptData(HTMLParser):
    """The text of the first <script> element, as an HTML parser reads it."""

    def __init__(self):
        super().__init__()
        self.inside, self.text = False, None

    def handle_starttag(self, tag, attrs):
        self.inside = tag == "script" and self.text is None

    def handle_data(self, data):
        if self.inside:
            self.text = (self.text or "") + data

    def handle_endtag(self, tag):
        self.inside = False


def in_script(text: str) -> str:
    parser = ScriptData()
    parser.feed(f'<script type="application/json" id="data">{text}</script><script>run()</script>')
    parser.close()
    return parser.text


characters = st.characters(exclude_categories=())  # surrogates too: undecodable bytes kept as \udcXX
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(characters),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(characters, max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_escaped_json_reads_back_exactly_and_holds_nothing_html_acts_on(value):
    from attn_cli.io.html_json import json_for_html

    text = json_for_html(value)
    assert json.loads(text) == value
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    text.encode("utf-8")  # no lone surrogate left: the page is written as UTF-8
    assert in_script(text) == text  # the whole of it is the script element's text


@pytest.mark.parametrize("label", HOSTILE + ["-->", "<!--", "<script>"])
def test_a_hostile_label_stays_inside_the_data(label):
    from attn_cli.io.html_json import json_for_html

    text = json_for_html({"tokens": [label, label + "\udc80"]})
    assert in_script(text) == text and json.loads(text) == {"tokens": [label, label + "\udc80"]}


def test_nan_is_refused_not_written_as_what_json_parse_cannot_read():
    from attn_cli.io.html_json import json_for_html

    with pytest.raises(ValueError):
        json_for_html({"p": float("nan")})


# --- the four pages, in a browser -------------------------------------------------------------------


def hostile(n: int, shift: int = 0) -> list[str]:
    return [HOSTILE[(i + shift) % len(HOSTILE)] for i in range(n)]


@cache
def llama():
    from attn_cli import api

    return api.load_model(str(checkpoints.tiny_llama_folder()))


def why():
    o = dict(np.load(checkpoints.FIXTURES / "why-tiny-llama.npz", allow_pickle=False))
    return str(o["clean_text"]), str(o["corrupt_text"]), f"id:{int(o['target'])}", f"id:{int(o['versus'])}"


def opened(browser: Browser, path) -> None:
    browser.open(path)
    assert browser.evaluate("document.querySelectorAll('script').length") == 2


@needs_browser
def test_inspect_page_reads_back_hostile_tokens(tmp_path):
    from attn_cli.analysis.inspect import InspectSettings, inspect
    from attn_cli.io.files import printable
    from attn_cli.io.page import write_page
    from attn_cli.models.loading import load

    result = inspect(load(str(checkpoints.tiny_gpt2_folder())), "the cat sat on the mat", InspectSettings())
    result.tokens = hostile(len(result.tokens))
    path = tmp_path / "inspect.html"
    write_page(result, path, title="attn inspect </script>", sentence="<!--<script> </script> ]]>", force=False)
    with Browser() as browser:
        opened(browser, path)
        browser.ready()  # the page's script ran to the end
        shown = browser.evaluate("[...document.querySelectorAll('text.token.query')].map(t => t.textContent)")
        held = browser.evaluate("D.tokens")
        assert browser.console == []
    assert shown == held == [printable(t) for t in result.tokens]  # inspect's page shows tokens printable, as the terminal does
    assert "<!--<script>" in shown and "</script>" in shown and "a\\u2028b" in shown


@needs_browser
def test_generate_page_reads_back_hostile_tokens(tmp_path):
    from attn_cli.analysis.generate import GenerateSettings, Generation
    from attn_cli.io.generate_page import write_page

    run = Generation(llama(), "The cat sat", GenerateSettings(steps=3))
    list(run)
    result = run.result()
    result.prompt_tokens = hostile(len(result.prompt_tokens))
    for k, step in enumerate(result.steps):
        step.token = HOSTILE[-1 - k]
        step.top = [(i, t, p) for (i, _, p), t in zip(step.top, hostile(len(step.top), shift=k + 2))]
    result.texts = result.prompt_tokens + [s.token for s in result.steps]  # the text the page shows: each position's, hostile too
    path = tmp_path / "generate.html"
    write_page(path, result, force=False)
    with Browser() as browser:
        opened(browser, path)
        shown = browser.evaluate("[...document.querySelectorAll('#text span')].map(s => s.textContent)")
        alternatives = browser.evaluate("[...document.querySelectorAll('#alts tr')].map(r => r.cells[0].textContent)")
        info = browser.evaluate("document.getElementById('info').textContent")
        assert browser.console == []
    assert shown == result.texts  # exactly: U+2028 and all
    assert alternatives == [t for _, t, _ in result.steps[0].top]  # step 0 shown: the script ran to its end
    assert info.startswith(f"step 0: {json.dumps(result.steps[0].token)}")


def grid(browser: Browser, table: int) -> tuple[list, list]:
    """A map's column heads and row heads as the page shows them."""
    return (browser.evaluate(f"[...document.querySelectorAll('table.grid')[{table}].rows[0].cells].slice(1).map(c => c.textContent)"),
            browser.evaluate(f"[...document.querySelectorAll('table.grid')[{table}].rows].slice(1).map(r => r.cells[0].textContent)"))


def hover(browser: Browser, table: int, row: int, column: int) -> str:
    browser.evaluate(f"document.querySelectorAll('table.grid')[{table}].rows[{row + 1}].cells[{column + 1}].dispatchEvent(new Event('mouseenter'))")
    return browser.evaluate("document.getElementById('hover').textContent")


@needs_browser
def test_explain_page_reads_back_hostile_tokens(tmp_path):
    from attn_cli import api
    from attn_cli.io.grid_page import explain_page, write_page
    from attn_cli.views.explain import what_is_split

    clean, _, target, versus = why()
    result = api.explain(llama(), clean, target=target, versus=versus)
    result.target = {**result.target, "token": "</script> a\u2028b"}
    result.versus = {**result.versus, "token": "<!--<script> ]]>"}
    result.tokens = hostile(len(result.tokens))
    path = tmp_path / "explain.html"
    write_page(path, explain_page(result), force=False)
    with Browser() as browser:
        opened(browser, path)
        columns, rows = grid(browser, 0)
        said = hover(browser, 0, 1, 2)
        assert browser.console == []
    assert columns == [str(h) for h in range(result.n_heads)] + ["MLP"] and rows == [str(l) for l in range(result.n_layers)]
    split = what_is_split(result)
    assert "</script>" in split and "<!--<script> ]]>" in split
    assert said.startswith("head 1.2: ") and said.endswith(f" of {split}")


@needs_browser
def test_patch_page_reads_back_hostile_tokens(tmp_path):
    from attn_cli import api
    from attn_cli.io.grid_page import patch_page, write_page

    clean, corrupt, target, versus = why()
    result = api.patch(llama(), clean, corrupt, target=target, versus=versus)
    result.clean_tokens = hostile(len(result.clean_tokens))
    result.corrupt_tokens = hostile(len(result.corrupt_tokens), shift=1)
    path = tmp_path / "patch.html"
    write_page(path, patch_page(result), force=False)
    with Browser() as browser:
        opened(browser, path)
        columns, _ = grid(browser, 0)
        said = hover(browser, 0, 1, 1)
        assert browser.console == []
    assert columns == [f"{p}:{t}" for p, t in enumerate(result.clean_tokens)]  # no stray backslash before "/script>"
    assert said.startswith(f"layer 1, position 1 ({result.clean_tokens[1]!r} / {result.corrupt_tokens[1]!r}): ")


@needs_browser
def test_compare_page_reads_back_hostile_tokens(tmp_path):
    from attn_cli import api
    from attn_cli.io.grid_page import compare_page, write_page
    from attn_cli.models.points import Add

    steer = [Add("resid_post", 1, np.full(llama().d_model, 0.5, np.float32))]
    result = api.compare(llama(), "the cat sat on the river", steer=steer, head=(1, 2), generate=2)
    n = len(result.tokens[0])
    result.tokens = (hostile(n), hostile(n, shift=1))
    result.labels = result.tokens
    for k, row in enumerate(result.rose + result.fell):
        row["token"] = hostile(1, shift=k)[0]
    for side, shift in (("a", 2), ("b", 3)):
        result.continuations[side]["tokens"] = hostile(len(result.continuations[side]["tokens"]), shift=shift)
    path = tmp_path / "compare.html"
    write_page(path, compare_page(result), force=False)
    labels = [f"{p}:{a}/{b}" for p, (a, b) in enumerate(zip(*result.labels))]
    with Browser() as browser:
        opened(browser, path)
        columns, rows = grid(browser, 0)
        head_columns, _ = grid(browser, 2)
        said = hover(browser, 0, 1, 2)
        texts = browser.evaluate("[...document.querySelectorAll('p.tokens')].map(p => [...p.querySelectorAll('span.tok')].map(s => s.textContent))")
        ranked = browser.evaluate("[...document.querySelectorAll('#ranked td:first-child')].map(c => c.textContent)")
        assert browser.console == []
    assert columns == labels and head_columns == labels and rows == [str(l) for l in range(llama().n_layers)]
    assert said == f"layer 1, {labels[2]}: cosine {result.cosine[1, 2]:.4f}"
    assert texts == [result.tokens[0], result.tokens[1], result.continuations["a"]["tokens"], result.continuations["b"]["tokens"]]
    moved = sorted(result.rose + result.fell, key=lambda r: -(r["b"] - r["a"]))
    assert ranked == [f"{r['token']} {r['a']:.4f} → {r['b']:.4f}" for r in moved]
