"""Shared machinery of the actions."""
