"""Where E comes from, and what the layers do to it: real checkpoints (BERT, GPT-2) run in NumPy."""
