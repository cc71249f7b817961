"""What tab completion offers: the shipped heads, sense sets and link sets by name, and files that fit.

Read only when the shell asks (attn_cli.cli.options.completer), never on a command's start.
"""


def files(incomplete: str, suffixes: tuple[str, ...]) -> list[str]:
    """Paths that start as typed: folders (to go on into) and files ending in one of `suffixes`."""
    from pathlib import Path

    folder, _, start = incomplete.rpartition("/")
    where = Path(folder or ".").expanduser()
    try:
        found = sorted(where.iterdir())[:1000]  # a huge folder: the first thousand names
    except OSError:
        return []
    prefix = f"{folder}/" if folder else ""
    return [prefix + p.name + ("/" if p.is_dir() else "") for p in found
            if p.name.startswith(start) and not p.name.startswith(".") and (p.is_dir() or p.suffix in suffixes)]


def heads(incomplete: str) -> list[str]:
    """--head: the built-in heads, the shipped ones, and .npz files (read only when the shell asks)."""
    from attn_cli.heads.registry import shipped_heads

    names = ["identity", "random", *(p.stem for p in shipped_heads())]
    return [n for n in names if n.startswith(incomplete)] + files(incomplete, (".npz",))


def sense_sets(incomplete: str) -> list[str]:
    from attn_cli.analysis.senses import shipped_sense_sets

    return [n for n in shipped_sense_sets() if n.startswith(incomplete)] + files(incomplete, (".tsv",))


def link_sets(incomplete: str) -> list[str]:
    from attn_cli.heads.links import shipped_link_sets

    return [n for n in shipped_link_sets() if n.startswith(incomplete)] + files(incomplete, (".tsv",))
