"""The binder component."""
