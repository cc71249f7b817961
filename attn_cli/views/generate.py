"""The view of `attn generate`: the text as it is written, then each new token's probability, runner-up and sources."""

from rich import box
from rich.text import Text

from attn_cli.results.generate import STOPS
from attn_cli.views.base import FitTable, key_label, steered_line

SHOWN_STEPS = 16  # steps listed in full when there are more: the first and last halves of this, and a count between
PROMPT, GENERATED, SPECIAL = "", "cyan", "magenta"  # how a source token is told apart: the prompt's, a new one, a special one


def source_text(result, position: int, w: float) -> Text:
    n_prompt = len(result.prompt_tokens)
    if position < n_prompt:
        token, style = result.prompt_tokens[position], SPECIAL if result.prompt_special[position] else PROMPT
    else:
        step = result.steps[position - n_prompt]
        token, style = step.token, SPECIAL if step.special else GENERATED
    out = Text()
    out.append(clip(key_label(token)), style=style)
    out.append(f" {w:.2f}".replace("0.", ".", 1), style="dim")
    return out


def clip(text: str, width: int = 10) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def steps_table(result) -> FitTable:
    where = "every head, mean" if result.head is None else f"head {result.head[0]}.{result.head[1]}"
    table = FitTable(box=box.SIMPLE, title=f"each new token: its probability, the runner-up, and where it looked ({where})",
                     title_justify="left", caption=caption(result), caption_justify="left")
    for name, justify in (("#", "right"), ("token", "left"), ("p", "right"), ("runner-up", "left"), ("looked at", "left")):
        table.add_column(name, justify=justify)
    steps = result.steps
    cut = len(steps) > SHOWN_STEPS
    shown = steps[: SHOWN_STEPS // 2] + steps[-SHOWN_STEPS // 2 :] if cut else steps
    for k, step in enumerate(shown):
        if cut and k == SHOWN_STEPS // 2:
            table.add_row("…", "", "", "", Text(f"{len(steps) - SHOWN_STEPS:,} more (--jsonl or --page: all)", style="dim"))
        runner = step.top[1] if step.top[0][0] == step.id and len(step.top) > 1 else step.top[0]
        looked = Text(" · ").join(source_text(result, p, w) for p, w in step.sources)
        table.add_row(str(step.index), Text(clip(key_label(step.token)), style=SPECIAL if step.special else GENERATED), f"{step.probability:.2f}",
                      Text(f"{clip(key_label(runner[1]))} {runner[2]:.2f}"), looked)
    return table


def caption(result) -> str:
    """How the sources are told apart, and what the first position does when it is the top source of most steps."""
    told = f"the prompt's tokens plain, new ones in {GENERATED}, special ones in {SPECIAL}"
    first = sum(1 for s in result.steps if s.sources and s.sources[0][0] == 0)
    if result.steps and first * 2 > len(result.steps):
        token = key_label(result.prompt_tokens[0]) if result.prompt_tokens else ""
        return (f"{told}. Position 0 ({token}) is the top source of {first} of {len(result.steps)} steps: a sink, where a head puts "
                "the weight it has no other use for")
    return told


def generate_view(result, streamed: bool = False) -> list:
    """The parts after the text: when the text was not streamed to the terminal as it was written, it comes first."""
    parts = []
    if not streamed:
        m = result.model
        parts.append(Text(f"{m['name']} · {m['type']} · {m['layers']} layers × {m['heads']} heads", style="bold"))
        text = Text(result.prompt_text, style="dim")
        text.append(result.text, style=GENERATED)
        parts.append(text)
    if (line := steered_line(result.steered)) is not None:
        parts.append(line)
    parts.append(Text(f"{len(result.steps)} new tokens; stopped: {STOPS[result.stop]}", style="bold"))
    if result.steps:
        parts.append(steps_table(result))
    return parts
