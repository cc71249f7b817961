"""`attn lesson`."""

from attn_cli.cli.app import app  # noqa: F401
