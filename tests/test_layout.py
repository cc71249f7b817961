"""Facts about the package's shape, read from its source with `ast`: the layers import downwards only, without
circles; modules and functions stay short; each formula is written once."""

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "attn_cli"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60  # from its first statement: a command's option list (its signature) does not count
LAYERS = ["core", "models", "vectors", "heads", "analysis", "lesson", "results", "views", "io", "cli"]


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = modules()


@cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a module's syntax tree, parsed once for all the tests that walk it."""
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def imports(path: Path) -> set[str]:
    """Every attn_cli module `path` imports, at the top or inside a function (a lazy import is a dependency too)."""
    found = set()
    for node in nodes(path):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("attn_cli"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("attn_cli"))
    return {name for name in found if name in MODULES}


GRAPH = {name: imports(path) - {name} for name, path in MODULES.items()}


def cycles() -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    assert cycles() == []


def test_nothing_below_the_cli_imports_it():
    reaching = sorted(f"{a} -> {b}" for a, deps in GRAPH.items() for b in deps
                      if b.startswith("attn_cli.cli") and not a.startswith(("attn_cli.cli", "attn_cli.__main__")))
    assert reaching == []


def test_the_math_imports_nothing_above_it():
    """core/ is pure NumPy: it reads no files, draws nothing, and knows no model."""
    above = sorted(f"{a} -> {b}" for a, deps in GRAPH.items() if a.startswith("attn_cli.core") for b in deps
                   if not b.startswith(("attn_cli.core", "attn_cli.records", "attn_cli.errors")))
    assert above == []


def test_modules_and_functions_are_short():
    long_modules = {name: n for name, path in MODULES.items() if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long_modules == {}
    long_functions = []
    for name, path in MODULES.items():
        for node in nodes(path):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.body[0].lineno + 1 > MAX_FUNCTION_LINES:
                long_functions.append(f"{name}.{node.name}: {node.end_lineno - node.body[0].lineno + 1} lines")
    assert long_functions == []


def definitions(name: str) -> list[str]:
    return sorted(f"{module}:{node.lineno}" for module, path in MODULES.items() for node in nodes(path)
                  if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name)


@pytest.mark.parametrize("name, where", [
    ("softmax", "attn_cli.core.softmax"),  # with log_softmax, temperature and the sink, in the same module
    ("attend", "attn_cli.core.attention"),  # Q K^T, scale, mask, distance, sink, grouped-query: every model's attention
    ("nearest_rows", "attn_cli.core.neighbors"),  # the one cosine top-k: E' neighbours, a token's path, vocabulary lists
    ("top_k", "attn_cli.core.neighbors"),
    ("link_scores", "attn_cli.analysis.links"),  # heads eval and heads find
    ("find_focus", "attn_cli.analysis.units"),
])
def test_each_formula_is_defined_once(name, where):
    found = definitions(name)
    assert len(found) == 1 and found[0].startswith(where + ":"), found


def test_exponentials_are_taken_in_the_math_only():
    """No softmax written again somewhere: np.exp appears in core/ (softmax, activations) and where a number is shown as
    such (the softmax lesson's exp column), nowhere else."""
    allowed = {"attn_cli.lesson.softmax"}
    found = sorted(name for name, path in MODULES.items() if "np.exp(" in path.read_text(encoding="utf-8")
                   and not name.startswith("attn_cli.core") and name not in allowed)
    assert found == [] or found == ["attn_cli.heads.training"], found  # training: exp(log softmax), the weights of its gradient


FAMILY_NAMES = ("bert", "gpt2", "llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3_text", "gemma3")


def test_no_family_is_named_outside_the_family_registry():
    """A family is data: only attn_cli/models/families/ compares a model's type with a family's name. (The
    sources read a file's own vocabulary into config.json terms: a GGUF file's architecture and tokenizer names.)"""
    found = []
    for name, path in MODULES.items():
        if name.startswith(("attn_cli.models.families", "attn_cli.models.sources")):
            continue
        for node in nodes(path):
            if isinstance(node, ast.Compare):
                for value in [node.left, *node.comparators]:
                    if isinstance(value, ast.Constant) and value.value in FAMILY_NAMES:
                        found.append(f"{name}:{node.lineno}")
    assert found == []
