"""A watch on the pods of a namespace that records every version it sees: node, nominatedNodeName, phase, whether
terminating, and the managedFields entry that owns `status.nominatedNodeName` (who wrote it, and when).

    with PodWatch(kubeconfig, namespace) as watch:
        ...                                   # the test acts
    for seen in watch.history("b-"):          # every version of the pods named b-*, in order
        ...

Used by test_claims.py and repro_nomlost.py: a poll would miss a nomination cleared and written again between two
polls; the watch sees each write (each resourceVersion) of the pods.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Seen:
    at: float  # time.time() when the event arrived
    kind: str  # ADDED / MODIFIED / DELETED
    name: str
    rv: str
    node: str
    nominated: str
    phase: str
    deleting: bool
    finalizers: int
    owner: str  # manager/operation/subresource@time of the managedFields entry owning status.nominatedNodeName
    last: str  # the newest managedFields entry


@dataclass
class PodWatch:
    kubeconfig: str
    namespace: str
    seen: list[Seen] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _ready: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> PodWatch:
        self._thread = threading.Thread(target=self._run, name="pod-watch", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise AssertionError(f"the pod watch did not start: {self.errors[-3:]}")
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)

    def history(self, prefix: str) -> dict[str, list[Seen]]:
        """Every version seen of each pod whose name starts with `prefix`, in order."""
        out: dict[str, list[Seen]] = {}
        for s in list(self.seen):
            if s.name.startswith(prefix):
                out.setdefault(s.name, []).append(s)
        return out

    def _run(self) -> None:
        from kubernetes import client, config, watch

        api = client.CoreV1Api(config.new_client_from_config(config_file=self.kubeconfig))
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    listed = api.list_namespaced_pod(self.namespace)
                    rv = str(listed.metadata.resource_version) if listed.metadata is not None else ""
                    self._ready.set()
                for event in watch.Watch().stream(
                    api.list_namespaced_pod, self.namespace, resource_version=rv, timeout_seconds=2
                ):
                    pod = event["raw_object"]
                    if event["type"] == "ERROR":  # 410 Gone: list again
                        rv = ""
                        break
                    rv = pod["metadata"]["resourceVersion"]
                    self.seen.append(_seen(event["type"], pod))
                    if self._stop.is_set():
                        return
            except Exception as err:  # a broken stream is opened again from the last version
                self.errors.append(f"{type(err).__name__}: {err}")
                time.sleep(0.2)


def _seen(kind: str, pod: dict[str, Any]) -> Seen:
    meta, status, spec = pod["metadata"], pod.get("status") or {}, pod.get("spec") or {}
    owner, last, newest = "", "", ""
    for entry in meta.get("managedFields") or []:
        what = f"{entry.get('manager')}/{entry.get('operation')}/{entry.get('subresource', '')}@{entry.get('time')}"
        if "f:nominatedNodeName" in ((entry.get("fieldsV1") or {}).get("f:status") or {}):
            owner = what
        if (entry.get("time") or "") >= newest:
            newest, last = entry.get("time") or "", what
    return Seen(
        time.time(),
        kind,
        meta["name"],
        meta.get("resourceVersion", ""),
        spec.get("nodeName") or "",
        status.get("nominatedNodeName") or "",
        status.get("phase") or "",
        bool(meta.get("deletionTimestamp")),
        len(meta.get("finalizers") or []),
        owner,
        last,
    )


def lost_nominations(history: list[Seen]) -> list[tuple[Seen, Seen]]:
    """(before, after) for each version of a pending, unbound pod that no longer names the node the one before
    named (cleared, or another node)."""
    out = []
    for before, after in itertools.pairwise(history):
        if after.kind == "DELETED" or after.node:
            break
        if before.nominated and after.nominated != before.nominated:
            out.append((before, after))
    return out
