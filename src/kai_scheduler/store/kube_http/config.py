"""The API client a store talks through, configured as client-go's `BuildConfigFromFlags` would be.

Configuration, authentication and TLS come from the official `kubernetes` client (its `Configuration`, the
kubeconfig and in-cluster loaders, its TLS settings and bearer-token refresh hook); the transport only builds its
requests from them.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings

import urllib3
import yaml
from kubernetes import config as kube_config
from kubernetes.client import ApiClient, Configuration

from kai_scheduler.store.kube_http.errors import ConfigurationError

log = logging.getLogger(__name__)


def load_client(kubeconfig: str | None = None, context: str | None = None) -> ApiClient:
    """An API client configured as client-go's `BuildConfigFromFlags` would be.

    An explicit kubeconfig (or context) wins; otherwise the in-cluster service account when running in a
    pod; otherwise $KUBECONFIG (read now, a colon-separated list as kubectl takes) or ~/.kube/config.
    All loading, TLS and token refresh is the official client's; its errors become ConfigurationError."""
    configuration = Configuration()
    in_cluster = kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST")
    try:
        if in_cluster:
            kube_config.load_incluster_config(client_configuration=configuration)
        else:
            path = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
            _check_exists(path)
            kube_config.load_kube_config(config_file=path, context=context, client_configuration=configuration)
    except (kube_config.ConfigException, OSError, yaml.YAMLError) as err:  # a kubeconfig that is not YAML too
        default = "the default kubeconfig"
        where = "the in-cluster service account" if in_cluster else repr(kubeconfig) if kubeconfig else default
        why = " ".join(str(err).split())  # a YAML error spans several lines
        raise ConfigurationError(f"cannot load the Kubernetes configuration from {where}: {why}") from err
    # The environment's proxy for the host, resolved once now, as client-go's `http.ProxyFromEnvironment` reads
    # the environment once per process: the token refresh hook assigns the host again before every request, and
    # with the proxy still "from the environment" each assignment scanned os.environ again (`getproxies`), all but
    # 3.5 of the 42 µs a request's target and headers took (bench/README.md, "A second pass"). Same proxy, same hook.
    configuration.proxy = configuration.proxy
    # Each open watch holds a pooled connection; keep room for them beside the ordinary calls.
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 32)
    if not configuration.verify_ssl:
        unverified_tls(configuration.host)
    return ApiClient(configuration)


def _check_exists(path: str) -> None:
    """A kubeconfig path (or $KUBECONFIG's list) of which no file exists: say so, with the path tried, rather
    than the client's "Invalid kube-config file. No configuration found."."""
    files = [os.path.expanduser(p) for p in path.split(os.pathsep) if p]
    if files and not any(os.path.exists(f) for f in files):
        raise FileNotFoundError(f"no such file: {', '.join(files)}")


_unverified_warned = threading.Event()


def unverified_tls(host: str) -> None:
    """The kubeconfig says `insecure-skip-tls-verify`: one warning line per process, instead of urllib3's
    InsecureRequestWarning on every request (which this silences, for this process only)."""
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    if not _unverified_warned.is_set():
        _unverified_warned.set()
        log.warning(
            "TLS verification is off (insecure-skip-tls-verify in the kubeconfig): the certificate of %s "
            "is not checked",
            host,
        )
