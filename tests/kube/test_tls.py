"""TLS to a real kube-apiserver: verified against the kubeconfig's CA by default; `insecure-skip-tls-verify` works
and says so in one warning line per process, not one InsecureRequestWarning per request."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kai_scheduler.store.kube import KubeOptions, KubeStore, Unavailable
from tests import realkube

REQUESTS = 12
SCRIPT = f"""
import logging, sys
from kai_scheduler.cli import logs
from kai_scheduler.store.kube import KubeOptions, KubeStore
logs.configure(logging.WARNING, "text")
for _ in range(2):                       # two stores, as a process with a CLI store and a component store
    with KubeStore.connect(sys.argv[1], None, KubeOptions(qps=0)) as store:
        for _ in range({REQUESTS // 2}):
            store.list("nodes")
print("done")
"""


def _variant(kube: realkube.Cluster, tmp_path: Path, name: str, *, ca: bool, skip: bool) -> str:
    doc = yaml.safe_load(Path(kube.kubeconfig).read_text())
    cluster = doc["clusters"][0]["cluster"]
    if not ca:
        cluster.pop("certificate-authority", None)
    if skip:
        cluster["insecure-skip-tls-verify"] = True
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_the_servers_certificate_is_checked_against_the_kubeconfigs_ca(kube: realkube.Cluster, tmp_path: Path) -> None:
    with KubeStore.connect(kube.kubeconfig, None, KubeOptions(qps=0)) as store:
        assert store.list("priorityclasses")[0]  # system classes: the server answered over TLS
    unknown_ca = _variant(kube, tmp_path, "no-ca", ca=False, skip=False)
    with (
        KubeStore.connect(unknown_ca, None, KubeOptions(qps=0)) as store,
        pytest.raises(Unavailable, match=r"list Node: cannot reach the API server \S+: TLS failed: .*certificate"),
    ):
        store.list("nodes")


def test_skipping_verification_is_one_warning_line_per_process(kube: realkube.Cluster, tmp_path: Path) -> None:
    insecure = _variant(kube, tmp_path, "insecure", ca=False, skip=True)
    run = subprocess.run([sys.executable, "-c", SCRIPT, insecure], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "done", run.stderr
    lines = run.stderr.splitlines()
    assert not [line for line in lines if "InsecureRequestWarning" in line or "Unverified HTTPS" in line], lines
    warned = [line for line in lines if "TLS verification is off" in line]
    assert len(warned) == 1 and warned[0].partition(" ")[2].startswith("WARNING "), lines  # after the time
    assert "https://127.0.0.1:" in warned[0]
    assert len(lines) == 1, lines
