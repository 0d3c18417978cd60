"""Run a component as its own ServiceAccount, with exactly the RBAC `kai manifests` installs (least privilege).

    from tests.e2e import serviceaccounts
    serviceaccounts.install_rbac(admin_kubeconfig)                      # once per cluster
    kubeconfig = serviceaccounts.kubeconfig_for(admin_kubeconfig, "scheduler", tmp_dir)
    # then: python -m kai_scheduler.cli scheduler --kubeconfig <kubeconfig> …

`install_rbac` creates (or brings up to date) the namespaces, ServiceAccounts, ClusterRoles, ClusterRoleBindings,
Roles and RoleBindings of the install set, nothing else, plus a `default` ServiceAccount in each of its
namespaces (a bare control plane has no controller to make one, and pods are refused without it).
`kubeconfig_for` asks the TokenRequest API for a token of `kai-<component>` and writes a kubeconfig with the
admin kubeconfig's server and CA and that token. A request the role does not allow is answered 403, and the
component logs it as one line naming the object. Leases are allowed in the install namespace only
(`kai-scheduler`, which is also the components' default `--leader-elect-namespace` outside a pod).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from kai_scheduler import install

RBAC_KINDS = ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
COMPONENTS = ("scheduler", "binder", "podgrouper", "controllers", "admission")
OPTIONAL = ("node-scale-adjuster",)  # installed only when its value says so (nodeScaleAdjuster.enabled)
TOKEN_SECONDS = 3600 * 6


def rbac_objects(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The install set's namespaces and RBAC objects, in apply order."""
    objects = install.manifests(values or install.defaults(), skip_crds=True)
    return [o for o in objects if o["kind"] in RBAC_KINDS]


def install_rbac(admin_kubeconfig: str, values: dict[str, Any] | None = None) -> list[str]:
    """Create or update every RBAC object of the install set; return "Kind name" of each."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=admin_kubeconfig)
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    done = []
    namespaces = []
    for obj in rbac_objects(values):
        kind, meta = obj["kind"], obj["metadata"]
        name, namespace = meta["name"], meta.get("namespace", "")
        if kind == "Namespace":
            _create(lambda obj=obj: core.create_namespace(obj), None)
            namespaces.append(name)
        elif kind == "ServiceAccount":
            _create(lambda obj=obj, ns=namespace: core.create_namespaced_service_account(ns, obj), None)
        elif kind == "ClusterRole":
            _create(
                lambda obj=obj: rbac.create_cluster_role(obj),
                lambda obj=obj, name=name: rbac.replace_cluster_role(name, obj),
            )
        elif kind == "ClusterRoleBinding":
            _create(
                lambda obj=obj: rbac.create_cluster_role_binding(obj),
                lambda obj=obj, name=name: rbac.replace_cluster_role_binding(name, obj),
            )
        elif kind == "Role":
            _create(
                lambda obj=obj, ns=namespace: rbac.create_namespaced_role(ns, obj),
                lambda obj=obj, ns=namespace, name=name: rbac.replace_namespaced_role(name, ns, obj),
            )
        elif kind == "RoleBinding":
            _create(
                lambda obj=obj, ns=namespace: rbac.create_namespaced_role_binding(ns, obj),
                lambda obj=obj, ns=namespace, name=name: rbac.replace_namespaced_role_binding(name, ns, obj),
            )
        done.append(f"{kind} {namespace + '/' if namespace else ''}{name}")
    for namespace in namespaces:
        _create(
            lambda ns=namespace: core.create_namespaced_service_account(ns, {"metadata": {"name": "default"}}), None
        )
    api.close()
    return done


def kubeconfig_for(
    admin_kubeconfig: str,
    component: str,
    directory: str | Path,
    *,
    namespace: str = "kai-scheduler",
    seconds: int = TOKEN_SECONDS,
) -> str:
    """A kubeconfig that authenticates as the ServiceAccount `kai-<component>` (TokenRequest API); its path."""
    if component not in COMPONENTS + OPTIONAL:
        raise ValueError(f"unknown component {component!r}; known: {', '.join(COMPONENTS + OPTIONAL)}")
    path = Path(directory) / f"kubeconfig-{component}"
    return token_kubeconfig(admin_kubeconfig, f"kai-{component}", namespace, path, seconds=seconds)


def token_kubeconfig(
    admin_kubeconfig: str, account: str, namespace: str, path: str | Path, *, seconds: int = TOKEN_SECONDS
) -> str:
    """A kubeconfig at `path` for any ServiceAccount `namespace/account`, with a token from the TokenRequest API
    and the admin kubeconfig's server and CA; its path."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=admin_kubeconfig)
    try:
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        }
        answer = client.CoreV1Api(api).create_namespaced_service_account_token(account, namespace, request)
        token = answer.status.token
        host, ca, verify = api.configuration.host, api.configuration.ssl_ca_cert, api.configuration.verify_ssl
    finally:
        api.close()
    cluster: dict[str, Any] = {"server": host}
    if not verify:
        cluster["insecure-skip-tls-verify"] = True
    elif ca:  # embedded: the client library's copy of a kubeconfig's CA data is a temporary file
        cluster["certificate-authority-data"] = base64.b64encode(Path(ca).read_bytes()).decode("ascii")
    user = f"system:serviceaccount:{namespace}:{account}"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "sa",
        "clusters": [{"name": "sa", "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "sa", "user": user, "namespace": namespace}}],
    }
    out = Path(path)
    out.write_text(yaml.safe_dump(doc), encoding="utf-8")
    out.chmod(0o600)
    return str(out)


def operator_kubeconfig(admin_kubeconfig: str, namespace: str, path: Path) -> str:
    """A kubeconfig of the operator's ServiceAccount in `namespace`, with the operator install's RBAC applied."""
    values = install.defaults()
    values["operator"]["enabled"] = True
    install_rbac(admin_kubeconfig, values)
    return token_kubeconfig(admin_kubeconfig, "kai-operator", namespace, path)


def bind_account(admin_kubeconfig: str, account: str, namespace: str, rules: list[dict[str, Any]]) -> None:
    """A ServiceAccount `namespace/account` allowed exactly `rules` cluster-wide (a ClusterRole and binding of the
    same name), for running a component with less than its install RBAC."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=admin_kubeconfig)
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": account},
        "rules": rules,
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": account},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": account},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
    try:
        _create(lambda: core.create_namespace({"metadata": {"name": namespace}}), None)
        _create(lambda: core.create_namespaced_service_account(namespace, {"metadata": {"name": account}}), None)
        _create(lambda: rbac.create_cluster_role(role), lambda: rbac.replace_cluster_role(account, role))
        _create(
            lambda: rbac.create_cluster_role_binding(binding),
            lambda: rbac.replace_cluster_role_binding(account, binding),
        )
    finally:
        api.close()


def _create(create: Callable[[], object], replace: Callable[[], object] | None) -> None:
    from kubernetes import client

    try:
        create()
    except client.ApiException as err:
        if err.status != 409:
            raise
        if replace is not None:
            replace()
