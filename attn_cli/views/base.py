"""What every view draws with: bars, cut tables, key labels and the colour of a weight."""

from rich.text import Text


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
    left = " " * (width - cells) + ("█" if value < 0 else " ") * cells
    right = "█" * cells if value > 0 else ""
    text = Text(left, style="red")
    text.append("│", style="dim")
    text.append(right.ljust(width), style="green")
    return text


MAX_ROWS = 200  # a table in the terminal shows at most this many rows; --json has them all


def more_rows(shown: int, total: int, what: str) -> Text:
    """The note under a table cut at MAX_ROWS."""
    return Text(f"... {total - shown:,} more {what} not shown ({total:,} in all); --json prints every one", style="yellow")


def human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def key_label(key: str) -> str:
    """A key as listed among others: punctuation quoted, so that "," reads as a key, not a separator."""
    return key if any(c.isalnum() for c in key) else f"“{key}”"


SHADES = " ░▒▓█"  # weight 0 .. 1 where there is no colour
