"""Pod anti-affinity across namespaces chosen by label: the scheduler reads the Namespaces' labels from the API
server (as its ServiceAccount, with the RBAC of kai manifests) and matches a term's namespaceSelector against
them, as kube-scheduler does."""

from __future__ import annotations

from kai_scheduler.api import constants
from kai_scheduler.store.interface import NotFound
from tests.e2e.harness import NAMESPACE, Cluster, pod

LABEL = "e2e.kai.scheduler/affinity"


def test_anti_affinity_reaches_the_namespaces_its_namespace_selector_matches(clean: Cluster) -> None:
    """The second pod's term lists another namespace and chooses ours by its label: it keeps off the first pod's
    node, which binpack would pick (the term would cover `elsewhere` alone without the selector)."""
    made = _label_namespace(clean, "yes")
    try:
        clean.create(pod("e2e-web", labels={"app": "e2e-web"}))
        clean.wait("the first pod bound", lambda: len(clean.bound("app=e2e-web")) == 1)
        api = pod("e2e-api", labels={"app": "e2e-api"})
        api["spec"]["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "e2e-web"}},
                        "namespaces": ["elsewhere"],
                        "namespaceSelector": {"matchLabels": {LABEL: "yes"}},
                        "topologyKey": constants.LABEL_HOSTNAME,
                    }
                ]
            }
        }
        clean.create(api)
        clean.wait("the second pod bound", lambda: len(clean.bound("app=e2e-api")) == 1)
        web_node = clean.bound("app=e2e-web")[0]["spec"]["nodeName"]
        assert clean.bound("app=e2e-api")[0]["spec"]["nodeName"] != web_node
    finally:
        if made:
            clean.store.delete("namespaces", NAMESPACE, "")
        else:
            _label_namespace(clean, None)


def _label_namespace(clean: Cluster, value: str | None) -> bool:
    """Set (or, None, remove) the label on the test namespace; True when the Namespace had to be made (the mock
    API server holds namespaced objects without their Namespace)."""
    try:
        clean.store.patch("namespaces", NAMESPACE, "", {"metadata": {"labels": {LABEL: value}}})
    except NotFound:
        clean.create(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": {LABEL: value}}}
        )
        return True
    return False
