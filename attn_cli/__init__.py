"""attn: see how a transformer's attention works, over real word vectors."""

__version__ = "0.1.0"
