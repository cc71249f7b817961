"""Rich views of the result objects. Imported only when output is for a person."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli import results


def bar(fraction: float, width: int = 24, style: str = "cyan") -> Text:
    """A horizontal bar for a value in [0, 1], with eighth-block resolution."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    return Text("█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part else ""), style=style)


def signed_bar(value: float, scale: float, width: int = 12) -> Text:
    """A bar that grows left (red) for negative values and right (green) for positive ones."""
    fraction = 0.0 if scale <= 0 else min(abs(value) / scale, 1.0)
    cells = round(fraction * width)
    left = " " * (width - cells) + ("█" * cells if value < 0 else "")
    right = "█" * cells if value > 0 else ""
    text = Text(left, style="red")
    text.append("│", style="dim")
    text.append(right.ljust(width), style="green")
    return text


def human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


# --- vectors -------------------------------------------------------------------------------


def vectors_info(info: results.VectorsInfo) -> Table:
    table = Table(box=box.SIMPLE, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("path", info.path)
    table.add_row("format", info.format)
    table.add_row("keys", f"{info.keys:,}")
    table.add_row("dimension", str(info.dimension))
    table.add_row("dtype", info.dtype)
    table.add_row("file size", human_bytes(info.file_bytes))
    table.add_row("load time", f"{info.load_seconds * 1000:.1f} ms")
    return table


# --- softmax / analogy / similarity --------------------------------------------------------


# --- inspect -------------------------------------------------------------------------------


# --- heads ---------------------------------------------------------------------------------
