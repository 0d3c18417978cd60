"""CEL selectors (cel-python): results per kind of device, errors as one line."""

from __future__ import annotations

from typing import Any

import pytest

from kai_scheduler.api.dra import Device
from kai_scheduler.cluster import cel

PRODUCT = 'device.attributes["gpu.nvidia.com"].productName == "H100"'


def _gpu(i: int, product: str = "H100") -> Device:
    return Device(f"gpu-{i}", (("productName", product), ("uuid", f"GPU-{i}")), (("memory", 80.0 * 2**30),))


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    original = cel.Evaluator._evaluate

    def counted(expression: str, driver: str, device: Device) -> Any:
        calls.append(device.name)
        return original(expression, driver, device)

    monkeypatch.setattr(cel.Evaluator, "_evaluate", staticmethod(counted))
    return calls


def test_devices_that_differ_only_in_what_the_expression_does_not_read_are_evaluated_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _counting(monkeypatch)
    evaluator = cel.Evaluator()
    assert all(evaluator.matches(PRODUCT, "gpu.nvidia.com", _gpu(i)) for i in range(8))
    assert not evaluator.matches(PRODUCT, "gpu.nvidia.com", _gpu(8, "A100"))
    assert calls == ["gpu-0", "gpu-8"]


def test_an_iterating_expression_is_evaluated_per_device(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    evaluator = cel.Evaluator()
    expression = 'device.attributes["gpu.nvidia.com"].exists(k, k == "uuid")'
    for i in range(3):
        evaluator.matches(expression, "gpu.nvidia.com", _gpu(i))
    assert calls == ["gpu-0", "gpu-1", "gpu-2"]


def test_quantities_compare_as_in_kubernetes() -> None:
    evaluator = cel.Evaluator()
    bigger = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("64Gi")) >= 0'
    assert evaluator.matches(bigger, "gpu.nvidia.com", _gpu(0))
    assert not evaluator.matches(bigger.replace("64Gi", "96Gi"), "gpu.nvidia.com", _gpu(0))


def test_errors_are_one_line() -> None:
    assert "\n" not in str(cel.check("device.driver =="))
    with pytest.raises(cel.SelectorError) as caught:
        cel.Evaluator().matches('device.attributes["gpu.nvidia.com"].nope', "gpu.nvidia.com", _gpu(0))
    assert "\n" not in str(caught.value) and "failed on device gpu-0" in str(caught.value)
