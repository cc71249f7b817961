"""Data as JSON inside an HTML page's <script type="application/json">: the one way every page (inspect's io/page.py,
generate's io/generate_page.py, explain's and patch's io/grid_page.py) writes its data.

Inside a <script> element the HTML parser does not read JSON: it looks for the text that ends the element, and on
the way it also acts on "<!--" and "<script" (the script data escaped states), after which a later "</script>" no
longer ends the element. So a token such as `</script>` ends the data early, and one such as `<!--<script>`
swallows the page's own script: the page is blank. JSON lets any character of a string be written as a \\u escape,
which the HTML parser passes over and JSON.parse reads back as the very character; so every "<" is written as
\\u003c, and ">" and "&" too (no "-->" nor "]]>" nor character reference either, whatever the page is read as).
U+2028 and U+2029 are escaped as well (they end a line in JavaScript before ES2019, and in some editors), and a
lone surrogate (undecodable bytes kept as \\udcXX) as JSON's escape of it, since UTF-8 has no form for it.
"""

import json
import re

UNSAFE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")


def json_for_html(value) -> str:
    """`value` as compact JSON that can stand between <script type="application/json"> and </script> as it is:
    no "<", ">" or "&", and nothing UTF-8 cannot encode; json.loads (JSON.parse) of it gives `value` back exactly.
    NaN and infinities are refused (ValueError): JSON has no form for them."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
