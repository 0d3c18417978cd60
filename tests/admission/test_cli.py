"""`kai admission`: flags, one-line errors, and a real process against a mock API server stopped by SIGTERM."""

from __future__ import annotations

import base64
import subprocess
import urllib.request
from pathlib import Path

import orjson
import pytest

from kai_scheduler import cli
from kai_scheduler.admission import certs, pod, webhooks
from kai_scheduler.api.clock import SystemClock
from kai_scheduler.cli import admission
from kai_scheduler.install import source, values, workloads
from kai_scheduler.store.memory import MemoryStore
from tests import children
from tests.admission import builders, https
from tests.cli.invoke import exit_code
from tests.loopback import eventually, free_port, write_kubeconfig
from tests.store.mock_apiserver import MockApiServer


def test_help_lists_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["admission", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for flag in (
        "--kubeconfig",
        "--context",
        "--listen-address",
        "--webhook-port",
        "--cert-dir",
        "--namespace",
        "--service-name",
        "--secret-name",
        "--webhook-configuration-name",
        "--scheduler-name",
        "--gpu-sharing-enabled",
        "--hami-core-enabled",
        "--block-nvidia-visible-devices",
        "--runtime-class-name",
        "--qps",
        "--burst",
    ):
        assert flag in out


def test_defaults_are_kais() -> None:
    args = cli.parser().parse_args(["admission", "--namespace", "ns"])
    opts = admission.service_options(args)
    assert (
        opts.webhook_port,
        opts.cert_dir,
        opts.namespace,
        opts.service_name,
        opts.secret_name,
        opts.webhook_configuration_name,
    ) == (9443, "", "ns", "kai-admission", "kai-admission-cert", "kai-admission")
    assert opts.pod == pod.PodSettings("kai-scheduler", False, False, "nvidia")  # GPU sharing off, as KAI's
    process = admission.process_options(args)
    assert (process.listen_address, process.qps, process.burst) == (":8080", 50.0, 300)


def test_flags_reach_the_pod_settings() -> None:
    args = cli.parser().parse_args(
        [
            "admission",
            "--namespace",
            "ns",
            "--gpu-sharing-enabled",
            "false",
            "--block-nvidia-visible-devices",
            "true",
            "--runtime-class-name",
            "",
            "--scheduler-name",
            "s",
        ]
    )
    assert admission.service_options(args).pod == pod.PodSettings("s", False, True, "")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--gpu-sharing-enabled", "maybe"], "kai: --gpu-sharing-enabled: invalid boolean 'maybe': want true or false"),
        (["--block-nvidia-visible-devices=2"], "kai: --block-nvidia-visible-devices: invalid boolean '2'"),
        (["--hami-core-enabled=on"], "kai: --hami-core-enabled: invalid boolean 'on'"),
        (["--webhook-port", "70000"], "kai: --webhook-addr: want 0 to 65535, got 70000"),
        (["--webhook-addr", "https"], "kai: --webhook-addr/--webhook-port: invalid value 'https': want an integer"),
        (["--qps", "lots"], "kai: --qps: invalid value 'lots': want a number"),
    ],
)
def test_a_bad_flag_value_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exit_code(["admission", "--namespace", "ns", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert err.count("\n") == 1


def test_leader_election_flags_of_the_install_are_accepted() -> None:
    args = cli.parser().parse_args(
        [
            "admission",
            "--namespace",
            "ns",
            "--leader-elect=false",
            "--leader-elect-namespace=ns",
            "--leader-elect-lease-duration=15s",
            "--leader-elect-renew-deadline=10s",
            "--leader-elect-retry-period=2s",
        ]
    )
    assert admission.service_options(args).namespace == "ns"


def test_the_install_command_line_parses() -> None:
    argv = workloads.args(source.Concrete(values.defaults()), "admission")
    args = cli.parser().parse_args(argv)
    opts = admission.service_options(args)
    assert (opts.webhook_port, opts.service_name, opts.webhook_configuration_name) == (
        9443,
        "kai-admission",
        "kai-admission",
    )
    assert admission.process_options(args).listen_address == ":8080"


@pytest.mark.parametrize(
    "argv, enabled", [([], False), (["--hami-core-enabled"], True), (["--hami-core-enabled=false"], False)]
)
def test_hami_core_flag_reaches_the_pod_settings(argv: list[str], enabled: bool) -> None:
    args = cli.parser().parse_args(["admission", "--namespace", "ns", "--gpu-sharing-enabled", *argv])
    assert admission.service_options(args).pod.hami_core_enabled is enabled


def test_bare_boolean_flag_means_true() -> None:
    args = cli.parser().parse_args(["admission", "--namespace", "ns", "--block-nvidia-visible-devices"])
    assert admission.service_options(args).pod.block_nvidia_visible_devices


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return int(answer.status) == 200
    except OSError:
        return False


def test_kai_admission_serves_over_a_mock_api_server_and_exits_0_on_sigterm(tmp_path: Path) -> None:
    memory = MemoryStore(SystemClock())
    memory.create(builders.webhook_configuration("ValidatingWebhookConfiguration", "pod.kai"))
    config = tmp_path / "kubeconfig"
    health, webhook = free_port(), free_port()
    with MockApiServer(memory) as server:
        write_kubeconfig(config, server.url)
        proc = children.spawn_kai(
            [
                "admission",
                "--kubeconfig",
                str(config),
                "--namespace",
                "kai-scheduler",
                "--listen-address",
                f"127.0.0.1:{health}",
                "--webhook-port",
                str(webhook),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert eventually(lambda: proc.poll() is not None or ready(health)), "not ready"
            assert proc.poll() is None, "the process ended early"
            bundle = certs.from_secret(memory.get("secrets", "kai-admission-cert", "kai-scheduler"))
            assert bundle is not None
            ca = memory.get("validatingwebhookconfigurations", "kai-admission")["webhooks"][0]["clientConfig"]
            assert base64.b64decode(ca["caBundle"]) == bundle.ca_pem
            status, body, _ = https.post(
                webhook,
                bundle.ca_pem,
                webhooks.PATH_VALIDATE_POD,
                builders.body(builders.pod(annotations={"mps": "true"})),
            )
            assert status == 200
            assert orjson.loads(body)["response"]["allowed"] is False
        finally:
            err = children.stop(proc)
        assert proc.returncode == 0, err
