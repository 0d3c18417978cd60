"""`kai dashboard --kubeconfig`: the dashboard watching the cluster shows what is created there, as the
scheduler sees it: a new queue, a job in it placed by the scheduler, and the scheduler's bind decision."""

from __future__ import annotations

import urllib.request
from typing import Any

import orjson

from kai_scheduler.dashboard import serve
from tests.e2e.harness import NAMESPACE, Cluster, pod, queue


def test_the_dashboard_shows_a_queue_and_a_job_created_in_the_cluster(clean: Cluster, kubeconfig: str) -> None:
    with serve.live(kubeconfig, None, 20.0, 50) as target:
        server = serve.listen(target, "127.0.0.1", 0)
        try:

            def state() -> dict[str, Any]:
                url = f"http://127.0.0.1:{server.port}/api/state"
                with urllib.request.urlopen(url, timeout=5) as reply:
                    doc: dict[str, Any] = orjson.loads(reply.read())
                return doc

            assert "e2e-dash" not in [q["name"] for q in state()["queues"]]
            clean.create(queue("e2e-dash", gpu_quota=8))
            clean.create(pod("dash-0", gpus=2, queue="e2e-dash", labels={"app": "dash"}))

            def shown() -> bool:
                doc = state()
                names = [q["name"] for q in doc["queues"]]
                if "e2e-dash" not in names:
                    return False
                mine = [j for j in doc["jobs"] if j[0] == names.index("e2e-dash") and j[1] == NAMESPACE]
                return len(mine) == 1 and mine[0][3] == "running"

            clean.wait("the queue and its running job on the dashboard", shown, timeout=60)
            doc = state()
            dash = next(q for q in doc["queues"] if q["name"] == "e2e-dash")
            assert dash["deserved"][0] == 8 and dash["allocated"][0] == 2

            # The scheduler writes its events in the background: the Scheduled event may come after the bind.
            def decided() -> bool:
                return any(d[1] == "Scheduled" and d[2] == f"{NAMESPACE}/dash-0" for d in state()["decisions"])

            clean.wait("the Scheduled decision on the dashboard", decided, timeout=30)
        finally:
            server.stop()
