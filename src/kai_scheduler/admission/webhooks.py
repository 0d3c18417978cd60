"""The webhooks by path, and the one way a request body becomes an answer (transport-free, tested directly).

Failure stance: fail closed. A rule that raises is logged once with its traceback and the request is denied
with code 500 and "internal error in webhook …": a half-checked object is never admitted (a configuration's
`failurePolicy` only covers a webhook that cannot be reached). A body that is not an AdmissionReview is HTTP
400, an unknown path 404; neither reaches a rule.

Metric: `kai_admission_requests_total{webhook, allowed}` counts answered reviews.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, Counter

from kai_scheduler.admission import gpusharing, operator, pod, podgroup, podmutate, queue, review, topology
from kai_scheduler.store.interface import ClusterStore

log = logging.getLogger(__name__)

Rule = Callable[[review.Review], review.Verdict]

PATH_MUTATE_POD: Final = "/mutate--v1-pod"
PATH_VALIDATE_POD: Final = "/validate--v1-pod"
PATH_VALIDATE_QUEUE: Final = "/validate-scheduling-run-ai-v2-queue"
PATH_VALIDATE_PODGROUP: Final = "/validate-scheduling-run-ai-v2alpha2-podgroup"
PATH_VALIDATE_TOPOLOGY: Final = "/validate-kai-scheduler-v1alpha1-topology"
PATH_VALIDATE_SCHEDULINGSHARD: Final = "/validate-kai-scheduler-v1-schedulingshard"
PATH_VALIDATE_CONFIG: Final = "/validate-kai-scheduler-v1-config"


@dataclass(frozen=True, slots=True)
class Webhook:
    name: str  # the metric label
    kind: str  # the Kind it admits; a review of another kind is a bad request
    rule: Rule


@dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer: status, content type and body."""

    status: int
    content_type: str
    body: bytes


def build(
    settings: pod.PodSettings, store: ClusterStore | None = None, suffix: Callable[[], str] | None = None
) -> dict[str, Webhook]:
    """The webhooks. `store` enables the checks that look at other objects (parent queue, Topology)."""
    mutate_suffix = suffix or gpusharing.random_suffix
    return {
        PATH_MUTATE_POD: Webhook("mutate-pod", "Pod", lambda r: podmutate.mutate(r, settings, mutate_suffix)),
        PATH_VALIDATE_POD: Webhook("validate-pod", "Pod", lambda r: pod.validate(r, settings, store)),
        PATH_VALIDATE_QUEUE: Webhook("validate-queue", "Queue", lambda r: queue.validate(r, store)),
        PATH_VALIDATE_PODGROUP: Webhook(
            "validate-podgroup",
            "PodGroup",
            lambda r: podgroup.validate(r, store, access_control=settings.queue_access_control),
        ),
        PATH_VALIDATE_TOPOLOGY: Webhook("validate-topology", "Topology", topology.validate),
        PATH_VALIDATE_SCHEDULINGSHARD: Webhook("validate-schedulingshard", "SchedulingShard", operator.validate_shard),
        PATH_VALIDATE_CONFIG: Webhook("validate-config", "Config", operator.validate_config),
    }


class Dispatcher:
    """Answers request bodies by path; thread-safe (rules hold no state)."""

    def __init__(self, webhooks: Mapping[str, Webhook], registry: CollectorRegistry | None = None) -> None:
        self.webhooks = dict(webhooks)
        self.requests = Counter(
            "kai_admission_requests_total",
            "Admission reviews answered, by webhook and verdict.",
            ["webhook", "allowed"],
            registry=registry,
        )

    def handle(self, path: str, body: bytes) -> Answer:
        webhook = self.webhooks.get(path.split("?", 1)[0])
        if webhook is None:
            return _text(404, f"no webhook at {path}; serving {', '.join(sorted(self.webhooks))}")
        try:
            req = review.decode(body)
        except review.BadReview as err:
            log.info("bad admission request", extra={"webhook": webhook.name, "reason": str(err)})
            return _text(400, str(err))
        if req.kind and req.kind != webhook.kind:
            return _text(400, f"webhook {webhook.name} admits {webhook.kind} objects, got {req.kind}")
        try:
            verdict = webhook.rule(req)
        except Exception as err:  # one failing rule must not take the server down
            log.exception("admission rule failed", extra={"webhook": webhook.name, "object": req.display_name})
            verdict = review.deny(
                f"internal error in webhook {webhook.name} for {req.kind} {req.display_name}: "
                f"{type(err).__name__}: {err}",
                code=review.CODE_INTERNAL,
            )
        self.requests.labels(webhook=webhook.name, allowed=str(verdict.allowed).lower()).inc()
        if not verdict.allowed:
            log.info(
                "admission denied",
                extra={"webhook": webhook.name, "object": req.display_name, "reason": verdict.message},
            )
        return Answer(200, "application/json", review.encode(req, verdict))


def _text(status: int, message: str) -> Answer:
    return Answer(status, "text/plain; charset=utf-8", (message + "\n").encode())
