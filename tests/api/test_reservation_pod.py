"""The reservation pods' additions as a user writes them: a JSON flag, a values mapping, a Config field."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler import cli
from kai_scheduler.api import reservation_pod
from kai_scheduler.api.errors import UserError
from kai_scheduler.cli import components

FLAG = "--resource-reservation-pod-resources"


def test_the_gpu_entry_is_the_binders_and_amounts_are_kept_as_written() -> None:
    given = {"requests": {"cpu": "10m", "nvidia.com/gpu": "2"}, "limits": {"memory": 67108864}}
    assert reservation_pod.resources("x", given) == {"requests": {"cpu": "10m"}, "limits": {"memory": "67108864"}}
    assert reservation_pod.resources("x", None) == {}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1], "x: expected an object, got [1]"),
        ({"request": {}}, "x: unknown field 'request'; want limits or requests"),
        ({"limits": {"cpu": "ten"}}, "x.limits.cpu: invalid quantity 'ten'"),
        ({"limits": {"cpu": True}}, "x.limits.cpu: expected a quantity, got True"),
        ({"limits": ["cpu"]}, "x.limits: expected an object, got ['cpu']"),
    ],
)
def test_a_bad_setting_names_its_field(value: Any, message: str) -> None:
    with pytest.raises(UserError) as err:
        reservation_pod.resources("x", value)
    assert str(err.value) == message


def test_the_binder_flags_take_json_objects() -> None:
    argv = [
        "binder",
        f'{FLAG}={{"requests": {{"cpu": "10m"}}}}',
        '--resource-reservation-pod-security-context={"runAsNonRoot": true}',
        "--resource-reservation-container-security-context={}",
    ]
    options = components._binder_options(cli.parser().parse_args(argv))
    assert options.resource_reservation_pod_resources == {"requests": {"cpu": "10m"}}
    assert options.resource_reservation_pod_security_context == {"runAsNonRoot": True}
    assert options.resource_reservation_container_security_context == {}
    defaults = components._binder_options(cli.parser().parse_args(["binder"]))
    assert defaults.resource_reservation_pod_resources == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", f"{FLAG}: not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ('"cpu"', f"{FLAG}: expected an object, got 'cpu'"),
        ('{"limits": {"cpu": "x"}}', f"{FLAG}.limits.cpu: invalid quantity 'x'"),
    ],
)
def test_a_bad_flag_is_one_line_naming_it(text: str, message: str) -> None:
    with pytest.raises(UserError) as err:
        components._binder_options(cli.parser().parse_args(["binder", f"{FLAG}={text}"]))
    assert str(err.value) == message
