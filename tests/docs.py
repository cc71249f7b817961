"""README.md and the pages of docs/: where the tests read what the documentation says."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """README first, then every page of docs/, in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def text() -> str:
    """All of it, one page after another."""
    return "\n".join(page.read_text(encoding="utf-8") for page in pages())


def name(page: Path) -> str:
    return str(page.relative_to(ROOT))
