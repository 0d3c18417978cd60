"""What a user may add to the binder's GPU reservation pods, as KAI's binder takes it: CPU and memory requests and
limits (`--resource-reservation-pod-resources`, a ResourceRequirements), and the pod's and the container's
security context (`--resource-reservation-pod-security-context`, `--resource-reservation-container-security-context`),
each a JSON object on the command line and a mapping in the install values and KAI's Config.

A bad setting is a `SettingError` (a UserError) naming where it was written and the field, before the binder
starts: a reservation pod the API server would refuse would otherwise fail every fractional bind."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kai_scheduler.api import constants, quantity
from kai_scheduler.api.errors import UserError

RESOURCE_KEYS = ("limits", "requests")
DROPPED_KEYS = ("claims",)  # a ResourceRequirements field KAI's operator does not pass to its binder either


class SettingError(UserError):
    """A setting that cannot be taken: `field`, where it was written (a flag, a value path, a Config field) and
    the field under it, and `problem`, what is wrong."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def from_flag(option: str, text: str) -> dict[str, Any]:
    """The JSON object of a flag ("" or "{}": nothing to add)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise SettingError(option, f"not JSON: {err}") from None
    return as_object(option, value)


def as_object(where: str, value: Any) -> dict[str, Any]:
    """A security context: any JSON object (the API server checks its fields)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SettingError(where, f"expected an object, got {value!r}")
    return dict(value)


def resources(where: str, value: Any) -> dict[str, dict[str, str]]:
    """`{limits: {cpu: 100m, …}, requests: {…}}` with every amount a quantity, as text. The GPU the reservation pod
    holds is the binder's: a `nvidia.com/gpu` entry is left out, as KAI's binder leaves it; so are `claims`, as
    KAI's operator passes only requests and limits."""
    given = as_object(where, value)
    unknown = sorted(set(given) - set(RESOURCE_KEYS) - set(DROPPED_KEYS))
    if unknown:
        raise SettingError(where, f"unknown field {unknown[0]!r}; want {' or '.join(RESOURCE_KEYS)}")
    out: dict[str, dict[str, str]] = {}
    for key in RESOURCE_KEYS:
        amounts = as_object(f"{where}.{key}", given.get(key))
        for name, amount in amounts.items():
            if isinstance(amount, bool) or not isinstance(amount, (str, int, float)):
                raise SettingError(f"{where}.{key}.{name}", f"expected a quantity, got {amount!r}")
            try:
                quantity.parse_quantity(amount)
            except quantity.QuantityError as err:
                raise SettingError(f"{where}.{key}.{name}", str(err)) from None
            if name != constants.RESOURCE_GPU:
                out.setdefault(key, {})[str(name)] = str(amount)
    return out
