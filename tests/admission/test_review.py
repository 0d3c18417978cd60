"""AdmissionReview decoding and encoding."""

from __future__ import annotations

import base64

import orjson
import pytest

from kai_scheduler.admission import review
from tests.admission import builders


@pytest.mark.parametrize(
    "raw, want",
    [
        pytest.param(b"not json", "not JSON", id="not JSON"),
        pytest.param(b"[1, 2]", "expected a JSON object", id="a list"),
        pytest.param(b'{"kind": "Pod"}', "kind is 'Pod'", id="not an AdmissionReview"),
        pytest.param(b'{"kind": "AdmissionReview", "apiVersion": "v1"}', "apiVersion 'v1'", id="wrong apiVersion"),
        pytest.param(
            b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}', "no request", id="no request"
        ),
        pytest.param(
            orjson.dumps({**builders.request({"kind": "Pod"}), "request": {"object": {}}}),
            "request.uid is missing",
            id="no uid",
        ),
        pytest.param(orjson.dumps(builders.request(None)), "request.object is missing", id="no object"),
        pytest.param(
            orjson.dumps(builders.request(None, operation="DELETE")),
            "request.oldObject is missing",
            id="delete without oldObject",
        ),
        pytest.param(orjson.dumps(builders.request({}, operation="PATCH")), "operation 'PATCH'", id="bad operation"),
    ],
)
def test_malformed_bodies_raise_bad_review(raw: bytes, want: str) -> None:
    with pytest.raises(review.BadReview, match=want):
        review.decode(raw)


def test_delete_admits_the_old_object() -> None:
    old = builders.queue("a")
    got = review.decode(builders.body(None, operation="DELETE", old=old))
    assert got.object == old
    assert got.operation == "DELETE"
    assert got.kind == "Queue"


def test_denial_carries_uid_code_and_message() -> None:
    req = builders.rev(builders.pod())
    out = orjson.loads(review.encode(req, review.deny("Pod team-a/p: no")))
    assert out["apiVersion"] == "admission.k8s.io/v1"
    assert out["kind"] == "AdmissionReview"
    assert out["response"] == {
        "uid": "uid-1",
        "allowed": False,
        "status": {"code": 403, "message": "Pod team-a/p: no", "reason": "Forbidden"},
    }


def test_patch_is_base64_jsonpatch() -> None:
    req = builders.rev(builders.pod())
    patch = [{"op": "add", "path": "/spec/runtimeClassName", "value": "nvidia"}]
    out = orjson.loads(review.encode(req, review.allow(patch=patch, warnings=["w"])))["response"]
    assert out["allowed"] is True
    assert out["patchType"] == "JSONPatch"
    assert orjson.loads(base64.b64decode(out["patch"])) == patch
    assert out["warnings"] == ["w"]


def test_plain_allow_has_no_patch() -> None:
    out = orjson.loads(review.encode(builders.rev(builders.pod()), review.allow()))["response"]
    assert out == {"uid": "uid-1", "allowed": True}


def test_display_name_uses_generate_name() -> None:
    obj = builders.pod()
    obj["metadata"] = {"generateName": "job-", "namespace": "ns"}
    assert builders.rev(obj).display_name == "ns/job-"
