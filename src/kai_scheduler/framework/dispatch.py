"""One dispatcher per combination rule: how the answers of the callables on an extension point combine.

`compile(point, hooks)` turns the (plugin name, callable) pairs registered on a point, in tier order, into one
callable taking the point's arguments. The rule is the point's `combine`; nothing else is per point. A
rejection always names the plugin that registered the callable that rejected (as kube-scheduler stamps it).

| rule | answer |
|---|---|
| FIRST_NONZERO | the first non-zero answer, else 0 (the session adds its tie-break) |
| FIRST_REJECT | the first Reject, stamped with its plugin's name, else None |
| FIRST_ANSWER | the first answer that is not None, else None |
| ALL_TRUE | whether every answer is true (True when nothing is registered) |
| ALL | every callable runs, in order; None |
| SUM | the element-wise sum of the answers that are not None, else None |
| CHAIN | the last argument is a list of items; each callable splits every item (None keeps it) |
| AND_MASKS | (task, candidates) -> (mask, fitted): the AND of every NodeFilter's mask over a copy of the |
|  | candidates, stopping once empty; fitted: some filter applied the resource fit itself |
| TUPLE | the answers of every callable, in order, as a tuple |
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kai_scheduler.framework import points
from kai_scheduler.framework.points import Combine

Hooks = Sequence[tuple[str, Callable[..., Any]]]


def compile(point: points.ExtensionPoint[Any], hooks: Hooks) -> Callable[..., Any]:
    if len(hooks) == 1 and point.combine in _ONE_IS_ITSELF:
        return hooks[0][1]  # one callable answers as the rule would: no wrapper on the hot path
    return _RULES[point.combine](tuple(hooks))


def _first_nonzero(hooks: Hooks) -> Callable[..., Any]:
    fns = tuple(fn for _, fn in hooks)

    def run(*args: Any) -> Any:
        for fn in fns:
            if result := fn(*args):
                return result
        return 0

    return run


def _stamped(reject: points.Reject, plugin: str) -> points.Reject:
    return reject if reject.plugin == plugin else dataclasses.replace(reject, plugin=plugin)


def _first_reject(hooks: Hooks) -> Callable[..., points.Reject | None]:
    def run(*args: Any) -> points.Reject | None:
        for name, fn in hooks:
            if reject := fn(*args):
                return _stamped(reject, name)
        return None

    return run


def _first_answer(hooks: Hooks) -> Callable[..., Any]:
    fns = tuple(fn for _, fn in hooks)

    def run(*args: Any) -> Any:
        for fn in fns:
            if (answer := fn(*args)) is not None:
                return answer
        return None

    return run


def _all_true(hooks: Hooks) -> Callable[..., bool]:
    fns = tuple(fn for _, fn in hooks)

    def run(*args: Any) -> bool:
        # a loop, not all() over a generator: victim filters run once per job of a victim pool
        for fn in fns:  # noqa: SIM110
            if not fn(*args):
                return False
        return True

    return run


def _all(hooks: Hooks) -> Callable[..., None]:
    fns = tuple(fn for _, fn in hooks)

    def run(*args: Any) -> None:
        for fn in fns:
            fn(*args)

    return run


def _sum(hooks: Hooks) -> Callable[..., Any]:
    fns = tuple(fn for _, fn in hooks)

    def run(*args: Any) -> Any:
        total: Any = None
        owned = False  # the first answer is a plugin's own array: add into a copy, never into it
        for fn in fns:
            answer = fn(*args)
            if answer is None:
                continue
            if total is None:
                total = answer
            elif not isinstance(total, np.ndarray):
                total = [a + b for a, b in zip(total, answer, strict=True)]
            elif owned:
                total += answer
            else:
                total, owned = total + answer, True
        return total

    return run


def _chain(hooks: Hooks) -> Callable[..., list[Any]]:
    fns = tuple(fn for _, fn in hooks)

    def run(*args: Any) -> list[Any]:
        *head, items = args
        for fn in fns:
            split: list[Any] = []
            for item in items:
                result = fn(*head, item)
                split.extend([item] if result is None else result)
            items = split
        return list(items)

    return run


def _and_masks(hooks: Hooks) -> Callable[..., tuple[points.Mask, bool]]:
    fns = tuple(fn for _, fn in hooks)

    def run(task: Any, candidates: points.Mask) -> tuple[points.Mask, bool]:
        mask = candidates.copy()
        fitted = False
        for fn in fns:
            result = fn(task, mask)
            if result is not None:
                mask &= result.mask
                fitted = fitted or result.fits_resources
                if not mask.any():
                    break
        return mask, fitted

    return run


def _tuple(hooks: Hooks) -> Callable[..., tuple[Any, ...]]:
    fns = tuple(fn for _, fn in hooks)

    def run(*args: Any) -> tuple[Any, ...]:
        return tuple([fn(*args) for fn in fns])

    return run


_RULES: dict[Combine, Callable[[Hooks], Callable[..., Any]]] = {
    Combine.FIRST_NONZERO: _first_nonzero,
    Combine.FIRST_REJECT: _first_reject,
    Combine.FIRST_ANSWER: _first_answer,
    Combine.ALL_TRUE: _all_true,
    Combine.ALL: _all,
    Combine.SUM: _sum,
    Combine.CHAIN: _chain,
    Combine.AND_MASKS: _and_masks,
    Combine.TUPLE: _tuple,
}

# Rules under which a single callable's answer is already the combined answer.
_ONE_IS_ITSELF = frozenset({Combine.FIRST_NONZERO, Combine.FIRST_ANSWER, Combine.ALL, Combine.SUM})
