"""What a binder plugin is (KAI `pkg/binder/plugins/interface.go`, `state/state.go`): its part of a bind, done
before the pod binding, on the pod as the bind read it.

A plugin with no work for a request (`is_relevant` false) is not asked; when none has, the bind reads no pod.
A pre-bind step tells the bind what else it needs through the `BindingState`: labels and annotations for the pod
(written in one patch before the binding), and how to take back what it reserved should the binding then fail
(KAI's `Rollback`, here each step's own undo, run in the plugins' order). A step that fails has the earlier steps'
work taken back too, as KAI rolls back every plugin after a failed bind; a step that waits (`PreBindPending`)
leaves it in place for the next pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.store.interface import JSON


@dataclass(slots=True)
class BindingState:
    """One bind as its plugins see it: the request, its pod (read once, before the first pre-bind step), and what
    the steps leave for the rest of the bind."""

    request: BindRequest
    pod: JSON
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    rollbacks: list[Callable[[], None]] = field(default_factory=list)


class Plugin(Protocol):
    @property
    def name(self) -> str:
        """KAI's name of the plugin (`binder.plugins.<name>`)."""
        ...

    def is_relevant(self, request: BindRequest) -> bool:
        """Whether the plugin has work for this request."""
        ...

    def pre_bind(self, state: BindingState) -> None:
        """Its part of the bind, before the pod binding. Raises `PreBindPending` to be asked again at the next
        pass, `PreBindFailed` or a `StoreError` to fail the bind."""
        ...


class PreBindPending(Exception):
    """A pre-bind step waits for something not there yet: the bind is tried again at the next pass, not failed."""


class PreBindFailed(Exception):
    """A pre-bind step cannot do its part: a failed bind, its `reason` and message written on the BindRequest."""

    reason = "PreBindFailed"
