"""The `attn heads` group, apart from its commands: cli/heads.py and cli/compose.py both add to it."""

import typer

from attn_cli.cli.app import app

heads_app = typer.Typer(help="List the attention heads, train your own from labelled links, score heads on a file, find a real model's head that does X, or how heads compose.", no_args_is_help=True)
app.add_typer(heads_app, name="heads")
