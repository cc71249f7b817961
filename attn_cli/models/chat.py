"""A model's own chat template (Jinja, as tokenizer_config.json or a GGUF file keeps it) rendered around a prompt.

The template comes from a file, so it is hostile input: it is rendered in Jinja's immutable sandbox
(no attribute access beyond data, no mutation), as transformers renders it, with the same settings
(trim_blocks, lstrip_blocks) and helpers (raise_exception, strftime_now).
"""

from attn_cli.errors import DataError, InputError

MAX_RENDERED = 1 << 20  # characters of a rendered prompt: a template that loops without end is refused


def render(template: str, messages: list[dict], *, bos_token: str = "", eos_token: str = "", add_generation_prompt: bool = True) -> str:
    """The prompt the model was trained to read: `messages` ([{"role", "content"}]) through its template."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise InputError(f"the chat template refuses this prompt: {message}")

    def strftime_now(fmt):
        import datetime

        return datetime.datetime.now().strftime(str(fmt))

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now)
    try:
        text = env.from_string(template).render(messages=messages, bos_token=bos_token, eos_token=eos_token,
                                                 add_generation_prompt=add_generation_prompt)
    except InputError:
        raise
    except (jinja2.TemplateError, TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError) as e:
        raise DataError(f"the model's chat template cannot be rendered ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None
    if len(text) > MAX_RENDERED:
        raise DataError(f"the model's chat template gives a prompt of {len(text):,} characters; refused")
    return text
