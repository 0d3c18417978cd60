"""The binder's plugins: what one is (`interface`), which run and in what order (`config`), and each plugin."""
