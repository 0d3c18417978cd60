"""The binder component: BindRequest → `pods/binding` (KAI `pkg/binder`, §8.1).

BindRequests are watched (LIST once, then WATCH). Each that is neither Succeeded nor being deleted is bound by
`binding` (the pod read and checked, the plugins' pre-bind steps in order: `plugins.config`, the bind annotations,
the binding) and the outcome recorded in the BindRequest status and, with `events` (the component against an API
server), as an event on the pod: `Normal Bound` or `Warning BindingError` with the reason (KAI's binder, §8.1;
`kubectl describe pod` shows them). A request whose pod is gone or already bound is skipped until it changes; one
whose reservation pod waits for its GPU is taken up again at the next pass. Reservation pods of GPU groups with no
pods left are collected on every sync (`reservation`).

The requests to act on are the keys of a `store.workqueue.WorkQueue`: a request is added when its watch brings it
open, and one that failed is requeued after the queue's per-request backoff (1 s, 2 s … 60 s, controller-runtime's
per-item rate limiter as KAI's binder sets it: `--rate-limiter-base-delay` 1, `--rate-limiter-max-delay` 60),
which starts over once the request is bound or settled. Its own status coming back through the watch does not cut
a backoff short.

A failure sets phase Failed with the reason and counts `failedAttempts`; with a `backoffLimit` above the attempts
made, the request is retried after the backoff. A binding that got no answer (the API server killed
mid-request) may have been made: the pod is read, and bound to the request's node it is Succeeded; when the pod
cannot be read either, no status is written (Failed would have the scheduler give the node away) and the request
is tried again after the backoff (`binding.BindUnsure`). A retry reads the request from the server first and acts
on what it holds then, not on the watched copy: the watch may not have brought the Failed status back yet, and
the scheduler, seeing a final failure, deletes the request and gives its node to another pod.
The binder deletes nothing it did not create.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kai_scheduler.api import constants
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import ObjectError, UserError
from kai_scheduler.binder import reservation
from kai_scheduler.binder.binding import Binding, BindUnsure, replaced, uid
from kai_scheduler.binder.plugins import config as plugins
from kai_scheduler.binder.plugins.interface import PreBindFailed, PreBindPending
from kai_scheduler.store import events, metrics
from kai_scheduler.store.changes import Changes
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, ClusterStore, Conflict, NotFound, StoreError
from kai_scheduler.store.workqueue import WorkQueue
from kai_scheduler.store.writers import Writers

log = logging.getLogger(__name__)
_INT32_MAX = 2**31 - 1  # failedAttempts is an int32


CONTROLLER = "bindrequest"  # KAI's binder controller, in the `controller` label of controller-runtime's series


@dataclass(slots=True)
class BindOutcome:
    bound: list[str] = field(default_factory=list)  # pod keys
    failed: list[tuple[str, str]] = field(default_factory=list)


class Binder:
    """`collect_every`: seconds between reservation-pod collections (0: every sync, as the embedded cluster
    wants; against an API server each collection is three LISTs, so the components run it every few seconds).

    `concurrency`: whole-GPU requests bound at once (KAI's `--max-concurrent-reconciles`; against an API server
    each bind is a round trip, so one at a time caps the rate at the server's latency). Shared-GPU requests
    stay one at a time: they create and reuse reservation pods. The outcome lists are in name order either way.
    With `concurrency` > 1 a bound request's Succeeded status is written by as many threads again in the
    background, so a bind costs its binder thread one round trip, not two; until that status is written the
    request is not taken up again, whatever its watch events say.

    `hami_core`: the plugin `hamicore` on (`binder.plugins.hamicore.enabled`): a shared-GPU pod's capabilities
    ConfigMap also gets `CUDA_DEVICE_MEMORY_LIMIT`; each such bind then reads its node once.

    `informers`: the process's shared informers, through which it watches BindRequests and pods (a private set
    when none is given).
    """

    def __init__(
        self,
        store: ClusterStore,
        clock: Clock,
        reservations: reservation.ReservationConfig | None = None,
        *,
        collect_every: float = 0.0,
        concurrency: int = 1,
        events: bool = False,
        work: metrics.Controller | None = None,
        hami_core: bool = False,
        informers: Informers | None = None,
    ) -> None:
        if concurrency < 1:
            raise UserError(f"--max-concurrent-reconciles: must be at least 1, got {concurrency}")
        self.store = store
        self.clock = clock
        informers = informers or Informers(store)
        self.reservations = reservation.Reservations(store, clock, reservations, informers)
        self.collect_every = collect_every
        self.concurrency = concurrency
        self.events = events
        self.binding = Binding(store, plugins.build(store, self.reservations, hami_core=hami_core))
        self._binders = Writers(concurrency, "kai-bind")
        self._statuses = (
            ThreadPoolExecutor(concurrency, thread_name_prefix="kai-bind-status") if concurrency > 1 else None
        )
        self._settling: set[str] = set()  # requests bound whose Succeeded status is still being written
        self._settling_lock = threading.Lock()
        self._requests = Changes(informers.informer("bindrequests"))
        self._open: dict[str, BindRequest] = {}  # BindRequests not yet Succeeded, by namespace/name
        # The requests to bind, by namespace/name; one with requeues counted failed (or was left unsure) here and
        # is acted on only as read anew.
        self.queue = WorkQueue(clock.now)
        self._told: dict[str, str] = {}  # a refused BindRequest's key → the error it was told (once per message)
        self._collected_at: float | None = None
        # controller-runtime's series of KAI's `bindrequest` controller: a reconcile is one BindRequest taken up.
        self.work = work or metrics.Controller(CONTROLLER, concurrency)

    def reconcile(self) -> BindOutcome:
        """Process every open BindRequest once, in name order; the store is watched, not listed each time."""
        outcome = BindOutcome()
        queue = self.queue
        for key, raw in self._requests.poll():
            if self._track(key, raw):
                queue.retry(key)
            elif raw is None:
                queue.forget(key)
            elif key in self._open and not queue.backing_off(key):
                queue.add([key])
        self._collect()
        taken = queue.take()
        try:
            self._bind_taken(taken, outcome)
        finally:  # an error none of the steps expects: what it left unfinished is tried again after the backoff
            queue.retry_unfinished(taken)
        outcome.bound.sort()
        outcome.failed.sort()
        return outcome

    def _bind_taken(self, taken: list[str], outcome: BindOutcome) -> None:
        queue = self.queue
        due = []
        for key in taken:
            br = self._open.get(key)
            if br is None or (br.phase == "Failed" and br.is_failed):
                queue.done(key)  # nothing to do until it changes
                continue
            current = self._current(br)
            if current is not None:
                due.append((current, f"{current.meta.namespace}/{current.pod_name}"))
        self.work.add(f"{br.meta.namespace}/{br.meta.name}" for br, _ in due)
        parallel = [(br, key) for br, key in due if not br.selected_gpu_groups] if self._binders.count > 1 else []
        if len(parallel) > 1:
            self._binders.map(lambda item: self._bind(item[0], item[1], outcome), parallel)
            due = [(br, key) for br, key in due if br.selected_gpu_groups]
        for br, pod_key in due:
            self._bind(br, pod_key, outcome)

    def _current(self, br: BindRequest) -> BindRequest | None:
        """The request to act on: the watched copy on a first attempt; on a retry, the request as the server holds
        it now (one GET), or None when that leaves nothing to do (gone, Succeeded, failed past its limit: its key
        is then done with, or requeued when the read failed).

        The copy may be older than the binder's own Failed status: a watch that falls behind brings it back
        later than the backoff ends. The scheduler may have seen it meanwhile, deleted the request and given the
        node to another pod, or written a new request for another node; only the server's copy says so."""
        request = br.meta.key
        if self.queue.requeues(request) == 0:
            return br
        try:
            raw = self.store.get("bindrequests", br.meta.name, br.meta.namespace)
        except NotFound:
            self._open.pop(request, None)
            self.queue.forget(request)
            return None
        except StoreError as err:
            self.queue.retry(request)
            log.warning(f"BindRequest {request} not read before its retry: {err}", extra={"reason": err.reason})
            return None
        if self._track(request, raw):
            self.queue.retry(request)
            return None
        current = self._open.get(request)
        if current is None or current.is_failed:
            self.queue.done(request)
            return None
        return current

    def _track(self, key: str, raw: JSON | None) -> bool:
        """Take in the request's latest copy; True when it could not be read and was written Failed for that
        (a failed attempt: it is due again after the backoff)."""
        if raw is None:
            self._open.pop(key, None)
            self._told.pop(key, None)
            return False
        try:
            br = BindRequest.from_dict(raw)
        except ObjectError as err:
            self._open.pop(key, None)
            return self._refused(key, raw, err)
        self._told.pop(key, None)
        with self._settling_lock:
            settling = key in self._settling
        if br.phase == "Succeeded" or br.meta.deletion_timestamp is not None or settling:
            self._open.pop(key, None)
        else:
            self._open[key] = br
        return False

    def _collect(self) -> None:
        now = self.clock.now()
        if self._collected_at is None or now - self._collected_at >= self.collect_every:
            self._collected_at = now
            self.reservations.collect(g for br in self._open.values() for g in br.selected_gpu_groups)

    def _bind(self, br: BindRequest, key: str, outcome: BindOutcome) -> None:
        """One reconcile: bind, counted with its result (`work`)."""
        with self.work.reconcile(f"{br.meta.namespace}/{br.meta.name}") as reconcile:
            reconcile.result = self._bind_once(br, key, outcome)

    def _bind_once(self, br: BindRequest, key: str, outcome: BindOutcome) -> str:
        """Bind (`binding`) and record the outcome. The reconcile's result: `success` (bound, or nothing to do),
        `error` (failed, or bound by someone else), `requeue_after` (a pre-bind step waiting: a reservation pod
        still waiting for its GPU)."""
        ns = br.meta.namespace
        try:
            self.binding.bind(br, key)
        except (NotFound, Conflict) as err:
            # Nothing to do until the request changes (the scheduler deletes or replaces it); not asked again.
            self._open.pop(f"{ns}/{br.meta.name}", None)
            self._settled(br)
            now = self._pod_now(br) if isinstance(err, Conflict) else None
            if now is not None and not br.is_for(uid(now)):
                # The binding's uid is not the pod's: the request's pod is gone, this one is new under its name.
                log.info(f"BindRequest {ns}/{br.meta.name} dropped: {replaced(br, key, now)}")
            elif isinstance(err, NotFound):
                log.debug(f"BindRequest {ns}/{br.meta.name} dropped: {err}")
            elif now is not None and now.get("spec", {}).get("nodeName") == br.selected_node:
                # Bound as asked, by this binder before a restart that lost the status write: finish the record.
                self._status(br, "Succeeded", "", br.failed_attempts)
            else:  # bound by someone else meanwhile (a pod gone is no news)
                log.warning(f"BindRequest {ns}/{br.meta.name} not bound: {err}", extra={"reason": err.reason})
                return "error"
            return "success"
        except PreBindPending:
            self.queue.again(br.meta.key)
            return "requeue_after"
        except BindUnsure as err:
            # No Failed status: the scheduler takes a failed request's pod as unbound and gives its GPUs to other
            # pods, while the binding may stand. Tried again after the backoff, the request read anew.
            self.queue.retry(br.meta.key)
            log.warning(f"bind outcome unknown, tried again: {err}", extra={"pod": key})
            return "error"
        except (StoreError, PreBindFailed) as err:
            self._failed(br, key, f"{err.reason}: {err}", outcome)
            return "error"
        request = f"{ns}/{br.meta.name}"
        self._open.pop(request, None)
        self._settled(br)
        outcome.bound.append(key)
        if self._statuses is None:
            self._status(br, "Succeeded", "", br.failed_attempts)
            self._bound_event(br)
            return "success"
        with self._settling_lock:
            self._settling.add(request)
        self._statuses.submit(self._settle, br, request)
        return "success"

    def _settled(self, br: BindRequest) -> None:
        """The pod is bound or gone: the server refuses any other binding of it, so the request's backoff can go."""
        self.queue.done(br.meta.key)

    def _settle(self, br: BindRequest, request: str) -> None:
        try:
            self._status(br, "Succeeded", "", br.failed_attempts)
        finally:
            with self._settling_lock:
                self._settling.discard(request)
        self._bound_event(br)

    def _bound_event(self, br: BindRequest) -> None:
        self._event(br, "Normal", "Bound", f"Pod {br.meta.namespace}/{br.pod_name} bound to node {br.selected_node}")

    def _event(self, br: BindRequest, kind: str, reason: str, message: str) -> None:
        """An event on the BindRequest's pod, named by the pod's uid (the BindRequest's owner reference)."""
        if not self.events:
            return
        uid = next((o.uid for o in br.meta.owner_references if o.kind == "Pod" and o.name == br.pod_name), "")
        ref = events.pod_ref(br.meta.namespace, br.pod_name, uid)
        events.record(self.store, events.event(ref, kind, reason, message, component="binder", now=self.clock.now()))

    def _refused(self, key: str, raw: JSON, err: ObjectError) -> bool:
        """A BindRequest the binder cannot read is told so as a failed bind is (§8.1), once per message: phase
        Failed with the error as its reason (the scheduler then takes the pod as unbound again) and a `Warning
        BindingError` event on its pod; one too broken to name its pod gets the event on itself. One already
        Succeeded, or being deleted, is only logged: its bind is done or undone. True when the Failed status was
        written now (a failed attempt, for the caller to requeue)."""
        message = str(err)
        if self._told.get(key) == message:
            return False
        self._told[key] = message
        log.warning("bad BindRequest skipped", extra={"reason": message})
        meta, spec, status = (_section(raw, s) for s in ("metadata", "spec", "status"))
        if status.get("phase") == "Succeeded" or meta.get("deletionTimestamp") is not None:
            return False
        namespace, _, name = key.rpartition("/")
        attempts = status.get("failedAttempts")
        attempts = attempts if type(attempts) is int and 0 <= attempts < _INT32_MAX else 0
        pod = spec.get("podName")
        # As a failed attempt: a request whose status alone was bad now reads as Failed and, below its backoff
        # limit, is retried after the backoff like any other.
        failed = status.get("phase") != "Failed" or status.get("reason") != message
        if failed:
            self._write_status(
                namespace,
                name,
                {"phase": "Failed", "reason": message, "failedAttempts": attempts + 1},
                str(meta.get("uid") or ""),
                str(meta.get("resourceVersion") or ""),
            )
        if self.events:
            self._refused_event(namespace, name, meta, pod, message)
        return failed

    def _refused_event(self, namespace: str, name: str, meta: JSON, pod: object, message: str) -> None:
        if type(pod) is str and pod:
            refs = meta.get("ownerReferences")
            uid = next(
                (
                    str(o.get("uid") or "")
                    for o in (refs if isinstance(refs, list) else [])
                    if isinstance(o, dict) and o.get("kind") == "Pod" and o.get("name") == pod
                ),
                "",
            )
            ref = events.pod_ref(namespace, pod, uid)
            text = f"Failed to bind pod {namespace}/{pod}: {message}"
        else:
            ref = {"apiVersion": constants.BINDREQUEST_API_VERSION, "kind": "BindRequest", "namespace": namespace}
            ref["name"] = name
            text = f"Failed to bind: {message}"
        body = events.event(ref, "Warning", "BindingError", text, component="binder", now=self.clock.now())
        events.record(self.store, body)

    def _pod_now(self, br: BindRequest) -> JSON | None:
        """The request's pod as the server holds it (read only when a binding conflicts); None if unreadable."""
        try:
            return self.store.get("pods", br.pod_name, br.meta.namespace)
        except StoreError:
            return None

    def _failed(self, br: BindRequest, key: str, reason: str, outcome: BindOutcome) -> None:
        """Failed: written so, and the request requeued after its backoff whatever its limit (a final failure is
        then read anew and let be: the watch may not have brought the Failed status back when it is next due)."""
        attempts = br.failed_attempts + 1
        self.queue.retry(br.meta.key)
        if br.backoff_limit is not None and attempts < br.backoff_limit:
            self.work.retry()  # taken up again after the backoff
        self._status(br, "Failed", reason, attempts)
        self._event(br, "Warning", "BindingError", f"Failed to bind pod {key} to node {br.selected_node}: {reason}")
        outcome.failed.append((key, reason))
        log.warning(f"bind failed: {reason}", extra={"pod": key, "attempts": attempts})

    def _status(self, br: BindRequest, phase: str, reason: str, attempts: int) -> None:
        self._write_status(
            br.meta.namespace,
            br.meta.name,
            {"phase": phase, "reason": reason, "failedAttempts": attempts},
            br.meta.uid,
            br.meta.resource_version,
        )

    def _write_status(self, namespace: str, name: str, status: JSON, uid: str, version: str) -> None:
        """Write the status of the request of `uid`, never of a newer one of the same name (its pod deleted and made
        again, the scheduler's request put in place of this one while this write waited): the version the binder
        read is the write's precondition (the status subresource ignores a uid in the patch), and on a Conflict
        the request is read again and written only if it is still the same object."""
        for _ in range(2):
            body: JSON = {"status": status}
            if version:
                body["metadata"] = {"resourceVersion": version}
            try:
                self.store.patch("bindrequests", name, namespace, body, "status")
                return
            except NotFound:
                return  # deleted meanwhile: nothing left to tell
            except Conflict:
                try:
                    current = self.store.get("bindrequests", name, namespace)
                except NotFound:
                    return
                except StoreError as err:
                    log.warning(f"BindRequest status not written: {err}", extra={"reason": err.reason})
                    return
                meta = current.get("metadata") or {}
                if uid and meta.get("uid") != uid:
                    log.info(
                        "BindRequest replaced by a newer one of the same name; the status of the earlier not written",
                        extra={"bindrequest": f"{namespace}/{name}", "status": status.get("phase")},
                    )
                    return
                version = str(meta.get("resourceVersion") or "")
            except StoreError as err:
                log.warning(f"BindRequest status not written: {err}", extra={"reason": err.reason})
                return
        log.warning(
            "BindRequest status not written: it changed twice while being written",
            extra={"bindrequest": f"{namespace}/{name}"},
        )


def _section(raw: JSON, name: str) -> JSON:
    """`raw[name]` if it is a mapping, else empty (a refused object is read only for what it can still say)."""
    value = raw.get(name)
    return value if isinstance(value, dict) else {}
