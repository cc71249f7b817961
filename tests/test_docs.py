"""The documentation stays true: README is a front page, the reference is what --help says, every page is linked."""

import importlib.util
import re

from tests import docs

MAX_README_LINES = 200


def test_readme_is_a_front_page():
    lines = docs.README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES
    text = "\n".join(lines)
    assert "pip install -e '.[test]' && attn inspect" in text and "\npytest\n" in text  # the two commands


def test_every_page_of_docs_is_linked_from_readme_and_every_link_resolves():
    text = docs.README.read_text(encoding="utf-8")
    for page in docs.DOCS.glob("*.md"):
        assert f"(docs/{page.name})" in text, f"README does not link {page.name}"
    for target in re.findall(r"\]\(([^)#]+)\)", docs.text()):
        if not target.startswith(("http:", "https:")):
            assert (docs.README.parent / target).exists() or (docs.DOCS / target).exists(), target


def test_the_reference_is_what_help_prints():
    spec = importlib.util.spec_from_file_location("make_reference", docs.DOCS / "make_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = (docs.DOCS / "reference.md").read_text(encoding="utf-8")
    assert written == module.reference(), "docs/reference.md is stale: run python docs/make_reference.py"
