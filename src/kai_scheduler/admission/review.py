"""AdmissionReview (`admission.k8s.io/v1`) in and out: decode a request body, encode a verdict.

A body that is not an AdmissionReview a webhook can answer raises `BadReview` (the server answers HTTP 400
with its message); everything else gets an AdmissionReview response with the request's uid. A denial carries
`status.code` 403 and a one-line message naming the object and field; a mutation carries a base64 JSONPatch.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import orjson

from kai_scheduler.api.errors import ObjectError

JSON = dict[str, Any]

API_VERSIONS: Final = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
OPERATIONS: Final = ("CREATE", "UPDATE", "DELETE", "CONNECT")
CODE_DENIED: Final = 403
CODE_INTERNAL: Final = 500


class BadReview(ValueError):
    """The body is not an AdmissionReview request this webhook can answer (HTTP 400)."""


@dataclass(frozen=True, slots=True)
class Review:
    """One admission request. `object` is the object being admitted: the new one on CREATE and UPDATE, the
    stored one (`oldObject`) on DELETE; `old_object` is the stored one on UPDATE and DELETE, else None."""

    uid: str
    api_version: str
    kind: str
    operation: str
    object: JSON
    old_object: JSON | None = None
    namespace: str = ""
    name: str = ""
    dry_run: bool = False

    @property
    def display_name(self) -> str:
        """`namespace/name` of the object, its generateName when it has no name yet."""
        meta = self.object.get("metadata") or {}
        name = self.name or meta.get("name") or meta.get("generateName") or "?"
        namespace = self.namespace or meta.get("namespace") or ""
        return f"{namespace}/{name}" if namespace else str(name)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A webhook's answer. `patch` is a JSONPatch (list of operations), only for allowed mutations."""

    allowed: bool
    message: str = ""
    code: int = 200
    patch: list[JSON] = field(default_factory=list)
    warnings: tuple[str, ...] = ()


def allow(*, patch: list[JSON] | None = None, warnings: tuple[str, ...] | list[str] = ()) -> Verdict:
    return Verdict(True, patch=list(patch or ()), warnings=tuple(warnings))


def deny(message: str, *, code: int = CODE_DENIED, warnings: tuple[str, ...] | list[str] = ()) -> Verdict:
    return Verdict(False, message=message, code=code, warnings=tuple(warnings))


T = TypeVar("T")


def written(review: Review, parse: Callable[[JSON], T]) -> T | Verdict:
    """What a validating webhook checks: the object CREATE or UPDATE writes, parsed by `parse`. Otherwise the
    verdict to answer: allowed for any other operation, denied with the parse error (the object and the field)
    for an object that does not parse."""
    if review.operation not in ("CREATE", "UPDATE"):
        return allow()
    try:
        return parse(review.object)
    except ObjectError as err:
        return deny(str(err))


def decode(body: bytes) -> Review:
    """Parse an AdmissionReview request body; BadReview names what is missing or wrong."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as err:
        raise BadReview(f"body is not JSON: {err}") from None
    if not isinstance(data, dict):
        raise BadReview(f"body is not an AdmissionReview: expected a JSON object, got {type(data).__name__}")
    if data.get("kind") != "AdmissionReview":
        raise BadReview(f"body is not an AdmissionReview: kind is {data.get('kind')!r}")
    api_version = data.get("apiVersion")
    if api_version not in API_VERSIONS:
        raise BadReview(f"AdmissionReview apiVersion {api_version!r} is not served; want {API_VERSIONS[0]}")
    request = data.get("request")
    if not isinstance(request, dict):
        raise BadReview("AdmissionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("AdmissionReview request.uid is missing")
    operation = request.get("operation", "CREATE")
    if operation not in OPERATIONS:
        raise BadReview(
            f"AdmissionReview request.operation {operation!r} is unknown; want one of {', '.join(OPERATIONS)}"
        )
    new, old = request.get("object"), request.get("oldObject")
    if old is not None and not isinstance(old, dict):
        raise BadReview("AdmissionReview request.oldObject is not an object")
    obj = old if operation == "DELETE" else new
    if not isinstance(obj, dict):
        which = "oldObject" if operation == "DELETE" else "object"
        raise BadReview(f"AdmissionReview request.{which} is missing")
    kind = request.get("kind")
    kind_name = kind.get("kind", "") if isinstance(kind, dict) else ""
    return Review(
        uid=uid,
        api_version=str(api_version),
        kind=str(kind_name or obj.get("kind") or ""),
        operation=str(operation),
        object=obj,
        old_object=old,
        namespace=str(request.get("namespace") or ""),
        name=str(request.get("name") or ""),
        dry_run=bool(request.get("dryRun", False)),
    )


def encode(review: Review, verdict: Verdict) -> bytes:
    """The AdmissionReview response body for `verdict`, in the request's apiVersion."""
    response: JSON = {"uid": review.uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = {
            "code": verdict.code,
            "message": verdict.message,
            "reason": "Forbidden" if verdict.code == CODE_DENIED else "InternalError",
        }
    if verdict.allowed and verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(verdict.patch)).decode("ascii")
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    return orjson.dumps({"apiVersion": review.api_version, "kind": "AdmissionReview", "response": response})
