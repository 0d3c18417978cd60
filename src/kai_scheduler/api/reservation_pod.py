"""What a user may add to the binder's GPU reservation pods, as KAI's binder takes it: CPU and memory requests and
limits (`--resource-reservation-pod-resources`, a ResourceRequirements), and the pod's and the container's
security context (`--resource-reservation-pod-security-context`, `--resource-reservation-container-security-context`),
each a JSON object on the command line and a mapping in the install values and KAI's Config.

A bad setting is a UserError naming where it was written and the field, before the binder starts: a reservation pod
the API server would refuse would otherwise fail every fractional bind."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kai_scheduler.api import constants, quantity
from kai_scheduler.api.errors import UserError

RESOURCE_KEYS = ("limits", "requests")
DROPPED_KEYS = ("claims",)  # a ResourceRequirements field KAI's operator does not pass to its binder either


def from_flag(option: str, text: str) -> dict[str, Any]:
    """The JSON object of a flag ("" or "{}": nothing to add)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"{option}: not JSON: {err}") from None
    return as_object(option, value)


def as_object(where: str, value: Any) -> dict[str, Any]:
    """A security context: any JSON object (the API server checks its fields)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise UserError(f"{where}: expected an object, got {value!r}")
    return dict(value)


def resources(where: str, value: Any) -> dict[str, dict[str, str]]:
    """`{limits: {cpu: 100m, …}, requests: {…}}` with every amount a quantity, as text. The GPU the reservation pod
    holds is the binder's: a `nvidia.com/gpu` entry is left out, as KAI's binder leaves it; so are `claims`, as
    KAI's operator passes only requests and limits."""
    given = as_object(where, value)
    unknown = sorted(set(given) - set(RESOURCE_KEYS) - set(DROPPED_KEYS))
    if unknown:
        raise UserError(f"{where}: unknown field {unknown[0]!r}; want {' or '.join(RESOURCE_KEYS)}")
    out: dict[str, dict[str, str]] = {}
    for key in RESOURCE_KEYS:
        amounts = as_object(f"{where}.{key}", given.get(key))
        for name, amount in amounts.items():
            if isinstance(amount, bool) or not isinstance(amount, (str, int, float)):
                raise UserError(f"{where}.{key}.{name}: expected a quantity, got {amount!r}")
            try:
                quantity.parse_quantity(amount)
            except quantity.QuantityError as err:
                raise UserError(f"{where}.{key}.{name}: {err}") from None
            if name != constants.RESOURCE_GPU:
                out.setdefault(key, {})[str(name)] = str(amount)
    return out
