"""Which run of a split e2e suite a test belongs to.

`make test` runs each e2e test once: `tests.e2e.run_real` with `KAI_E2E_SPLIT=1` gives each of its runs its name
in `KAI_E2E_RUN`, and a run keeps only its own tests. A test belongs to the run its `run_in(name)` marker names,
else to the controllers run if it `needs_controllers`, else to the bare run. Tests that do more with
kube-controller-manager (a garbage collector, a Job controller) are marked for the controllers run, and some
others to even the two runs' times (tests/e2e/README.md). Unsplit (`make e2e-real`, or a cluster of yours), every
test runs in every mode it can.
"""

from __future__ import annotations

import pytest

MOCK, BARE, CONTROLLERS = "mock", "bare", "controllers"
RUNS = (MOCK, BARE, CONTROLLERS)


def run_of(item: pytest.Item) -> str:
    """The run `item` belongs to; a test that needs the controllers and is marked for another run is an error."""
    marker = item.get_closest_marker("run_in")
    named = str(marker.args[0]) if marker is not None and marker.args else None
    if named is not None and named not in RUNS:
        raise pytest.UsageError(f"{item.nodeid}: run_in({named!r}): expected one of {', '.join(RUNS)}")
    if item.get_closest_marker("needs_controllers") is not None:
        if named not in (None, CONTROLLERS):
            raise pytest.UsageError(f"{item.nodeid}: needs the controllers but is marked run_in({named!r})")
        return CONTROLLERS
    return named or BARE
