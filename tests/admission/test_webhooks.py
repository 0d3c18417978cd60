"""Routing, bad requests and the failure stance of the dispatcher."""

from __future__ import annotations

import logging

import orjson
import pytest
from prometheus_client import CollectorRegistry

from kai_scheduler.admission import pod, review, webhooks
from tests.admission import builders
from tests.operator.builders import config, shard


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def dispatcher(registry: CollectorRegistry) -> webhooks.Dispatcher:
    return webhooks.Dispatcher(webhooks.build(pod.PodSettings(), suffix=lambda: "xyz"), registry)


def response(answer: webhooks.Answer) -> builders.JSON:
    assert answer.status == 200
    assert answer.content_type == "application/json"
    out: builders.JSON = orjson.loads(answer.body)["response"]
    return out


@pytest.mark.parametrize(
    "path, obj",
    [
        pytest.param(webhooks.PATH_MUTATE_POD, builders.pod(), id="mutate pod"),
        pytest.param(webhooks.PATH_VALIDATE_POD, builders.pod(), id="validate pod"),
        pytest.param(webhooks.PATH_VALIDATE_QUEUE, builders.queue(), id="queue"),
        pytest.param(webhooks.PATH_VALIDATE_PODGROUP, builders.podgroup(), id="podgroup"),
        pytest.param(webhooks.PATH_VALIDATE_TOPOLOGY, builders.topology(), id="topology"),
        pytest.param(webhooks.PATH_VALIDATE_SCHEDULINGSHARD, shard("s"), id="schedulingshard"),
        pytest.param(webhooks.PATH_VALIDATE_CONFIG, config(), id="config"),
    ],
)
def test_every_path_answers(dispatcher: webhooks.Dispatcher, path: str, obj: builders.JSON) -> None:
    assert response(dispatcher.handle(path, builders.body(obj))) == {"uid": "uid-1", "allowed": True}


def test_denial_end_to_end(dispatcher: webhooks.Dispatcher, registry: CollectorRegistry) -> None:
    out = response(
        dispatcher.handle(webhooks.PATH_VALIDATE_POD, builders.body(builders.pod(annotations={"gpu-fraction": "1"})))
    )
    assert out["allowed"] is False
    assert out["status"]["code"] == 403
    assert "gpu-fraction: want a number in (0, 1)" in out["status"]["message"]
    assert (
        registry.get_sample_value("kai_admission_requests_total", {"webhook": "validate-pod", "allowed": "false"})
        == 1.0
    )


def test_mutation_end_to_end(dispatcher: webhooks.Dispatcher, registry: CollectorRegistry) -> None:
    out = response(
        dispatcher.handle(webhooks.PATH_MUTATE_POD, builders.body(builders.pod(annotations={"gpu-fraction": "0.5"})))
    )
    assert out["allowed"] is True
    assert out["patchType"] == "JSONPatch"
    assert (
        registry.get_sample_value("kai_admission_requests_total", {"webhook": "mutate-pod", "allowed": "true"}) == 1.0
    )


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"{", id="truncated JSON"),
        pytest.param(b'"AdmissionReview"', id="a string"),
        pytest.param(
            orjson.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {}}), id="no uid"
        ),
        pytest.param(orjson.dumps(builders.request(None)), id="no object"),
    ],
)
def test_malformed_bodies_are_400(dispatcher: webhooks.Dispatcher, registry: CollectorRegistry, body: bytes) -> None:
    answer = dispatcher.handle(webhooks.PATH_VALIDATE_POD, body)
    assert answer.status == 400
    assert answer.body.strip()
    assert (
        registry.get_sample_value("kai_admission_requests_total", {"webhook": "validate-pod", "allowed": "true"})
        is None
    )


def test_wrong_kind_is_400(dispatcher: webhooks.Dispatcher) -> None:
    answer = dispatcher.handle(webhooks.PATH_VALIDATE_QUEUE, builders.body(builders.pod()))
    assert answer.status == 400
    assert b"admits Queue objects, got Pod" in answer.body


def test_unknown_path_is_404(dispatcher: webhooks.Dispatcher) -> None:
    assert dispatcher.handle("/validate-nothing", builders.body(builders.pod())).status == 404


def test_a_failing_rule_denies_with_500_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    def boom(_: review.Review) -> review.Verdict:
        raise KeyError("spec")

    dispatcher = webhooks.Dispatcher({"/x": webhooks.Webhook("broken", "Pod", boom)}, CollectorRegistry())
    with caplog.at_level(logging.ERROR):
        out = response(dispatcher.handle("/x", builders.body(builders.pod())))
    assert out["allowed"] is False
    assert out["status"]["code"] == 500
    assert out["status"]["message"] == "internal error in webhook broken for Pod team-a/p: KeyError: 'spec'"
    assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1


def test_apiversion_of_the_request_is_answered(dispatcher: webhooks.Dispatcher) -> None:
    req = {**builders.request(builders.pod()), "apiVersion": "admission.k8s.io/v1beta1"}
    answer = dispatcher.handle(webhooks.PATH_VALIDATE_POD, orjson.dumps(req))
    assert orjson.loads(answer.body)["apiVersion"] == "admission.k8s.io/v1beta1"
