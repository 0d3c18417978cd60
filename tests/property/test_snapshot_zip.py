"""Invariants of snapshot.zip: whatever the flags and the configuration, what a scheduler writes into a snapshot
is what the replay runs with (the flags through schedulerParams, the configuration through `config`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler import scenario as scenarios
from kai_scheduler.framework.config import FIXED_FLAGS, Flags
from kai_scheduler.scenario import snapshot_zip
from kai_scheduler.scheduler import capture
from kai_scheduler.scheduler.scheduler import load_config

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
NAMES = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789-./"), max_size=20)
DURATIONS = st.integers(1, 10**7).map(lambda ms: ms / 1000)  # Go durations to the millisecond


def _field(field: dataclasses.Field[Any]) -> st.SearchStrategy[Any]:
    default = getattr(Flags(), field.name)
    if field.name in FIXED_FLAGS:
        return st.just(default)
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, int):
        return st.integers(0, 10_000)
    if isinstance(default, float):
        return DURATIONS
    return NAMES


FLAGS = st.builds(Flags, **{f.name: _field(f) for f in dataclasses.fields(Flags)})
PLUGINS = ["predicates", "proportion", "priority", "gpupack", "gpuspread", "taskorder", "snapshot", "podaffinity"]
CONFIGS = st.fixed_dictionaries(
    {
        "actions": st.lists(st.sampled_from(["allocate", "reclaim", "preempt", "consolidation"]), unique=True).map(
            ", ".join
        ),
        "tiers": st.lists(
            st.lists(st.sampled_from(PLUGINS), unique=True).map(lambda ns: {"plugins": [{"name": n} for n in ns]}),
            max_size=3,
        ),
        "queueDepthPerAction": st.dictionaries(st.sampled_from(["allocate", "reclaim"]), st.integers(1, 50)),
    }
)


@SETTINGS
@given(flags=FLAGS)
def test_the_flags_written_are_the_flags_read(tmp_path_factory: Any, flags: Flags) -> None:
    path = Path(tmp_path_factory.mktemp("zip")) / "snapshot.zip"
    path.write_bytes(snapshot_zip.encode({}, snapshot_zip.params_json(flags), {}))
    loaded = scenarios.load(path)
    assert load_config(loaded.config).flags == flags


@SETTINGS
@given(raw=CONFIGS)
def test_the_configuration_written_loads_back_equal(raw: dict[str, Any]) -> None:
    config = load_config(raw)
    assert load_config(capture.config_json(config)) == config
