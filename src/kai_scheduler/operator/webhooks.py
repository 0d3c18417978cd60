"""The pod webhooks' selectors from the Config, as KAI's operator renders them (`pkg/operator/operands/admission/
resources.go` `buildWebhookSelectors`): `spec.global.namespaceLabelSelector` is the `namespaceSelector` and
`spec.global.podLabelSelector` the `objectSelector` of the webhooks `pods.mutate.kai.scheduler` and
`pods.validate.kai.scheduler`.

The webhook configurations are the install's (`install/webhooks.py`, rendered from the same values); the operator
keeps only these two selectors of its pod webhooks in line with the Config, so that a Config changed after the
install scopes the webhooks as it scopes the pod grouper. The rest of each configuration (the caBundle the
admission component injects, the rules) is left as it is. An absent configuration is passed over (an install
without admission); a write the API server refuses is reported on the Config.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from kai_scheduler.install import values as install_values
from kai_scheduler.install import webhooks
from kai_scheduler.install.objects import WEBHOOK_CONFIGURATION
from kai_scheduler.install.source import lookup
from kai_scheduler.store.interface import JSON, ClusterStore, Conflict, NotFound, StoreError

log = logging.getLogger(__name__)

RESOURCES: Final = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")


def selectors(values: install_values.Values) -> dict[str, dict[str, Any]]:
    """The pod webhooks' `namespaceSelector` and `objectSelector` of these values ({} matches everything, as the
    API server writes an absent selector)."""
    out = {}
    for path, key in webhooks.SELECTORS:
        labels = lookup(values, path)
        out[key] = {"matchLabels": {k: str(v) for k, v in labels.items()}} if labels else {}
    return out


def scope(store: ClusterStore, values: install_values.Values) -> tuple[list[str], str]:
    """Set the selectors of the pod webhooks where they differ; the "resource/name" of each configuration
    updated, and what failed ("" if nothing)."""
    wanted = selectors(values)
    updated: list[str] = []
    for resource in RESOURCES:
        name = f"{resource}/{WEBHOOK_CONFIGURATION}"
        try:
            obj = store.get(resource, WEBHOOK_CONFIGURATION)
        except NotFound:
            continue
        except StoreError as err:
            return updated, f"{name}: {err}"
        hooks = _scoped(obj, wanted)
        if hooks is None:
            continue
        try:
            store.update({**obj, "webhooks": hooks})
        except Conflict:  # changed meanwhile (the caBundle injected): the next pass reads it again
            continue
        except StoreError as err:
            log.warning("operator could not write an object", extra={"object": name, "reason": str(err)})
            return updated, f"{name}: {err}"
        updated.append(name)
    return updated, ""


def _scoped(obj: JSON, wanted: dict[str, dict[str, Any]]) -> list[JSON] | None:
    """The configuration's webhooks with the pod webhooks' selectors as wanted; None when they already are."""
    hooks = [dict(h) for h in obj.get("webhooks") or () if isinstance(h, dict)]
    changed = False
    for hook in hooks:
        if hook.get("name") not in webhooks.POD_WEBHOOKS:
            continue
        for key, selector in wanted.items():
            if (hook.get(key) or {}) != selector:
                hook[key] = selector
                changed = True
    return hooks if changed else None
