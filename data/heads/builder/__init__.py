"""The pieces of data/heads/build_heads.py, one module per step, as attn_cli/heads is split."""
