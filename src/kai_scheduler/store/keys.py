"""The key every cache, feed and queue files an object under: `namespace/name`, or `name` for a cluster-scoped one
(client-go's `MetaNamespaceKeyFunc`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def object_key(obj: Mapping[str, Any]) -> str:
    """The key of an object as the store serves it."""
    return meta_key(obj.get("metadata") or {})


def meta_key(meta: Mapping[str, Any]) -> str:
    """The key of an object's `metadata`."""
    namespace = meta.get("namespace", "")
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a key; the namespace is "" for a cluster-scoped object."""
    namespace, _, name = key.rpartition("/")
    return namespace, name
