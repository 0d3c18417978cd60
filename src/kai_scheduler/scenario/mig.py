"""MIG fields of a scenario (SCENARIOS.md): a node's `migStrategy` and `mig`, a task's `mig`."""

from __future__ import annotations

from kai_scheduler.api import constants, mig
from kai_scheduler.scenario.entry import Entry

LABEL_GPU_PRODUCT = "nvidia.com/gpu.product"


def instances(e: Entry) -> dict[str, int]:
    """`mig: {<profile>: count}`: each key a MIG profile, each count a whole number (0 or more)."""
    out: dict[str, int] = {}
    for profile, count in e.mapping("mig").items():
        where = f"mig.{profile}"
        if mig.parse_profile(str(profile)) is None:
            raise e.error(where, f"unknown MIG profile {profile!r}; want {mig.PROFILE_FORMAT}")
        if isinstance(count, float) and count.is_integer():
            count = int(count)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise e.error(where, f"expected a whole number of instances, got {count!r}")
        out[str(profile)] = count
    return out


def node_resources(e: Entry, gpus: int) -> tuple[dict[str, str], dict[str, str]]:
    """The node's MIG resources and labels: mixed exposes `nvidia.com/mig-<profile>` per profile; single
    carves every GPU into one profile and exposes the instances as `nvidia.com/gpu` (`mig` may then give that
    profile and its count instead of `gpus`), labelled with the MIG product as the GPU feature discovery does."""
    strategy = e.text("migStrategy")
    found = instances(e)
    if not strategy:
        if found:
            raise e.error("mig", "MIG instances need migStrategy: mixed (or single)")
        return {}, {}
    if strategy not in mig.STRATEGIES:
        raise e.error("migStrategy", f"unknown MIG strategy {strategy!r}; want single or mixed")
    labels = {constants.LABEL_MIG_STRATEGY: strategy}
    if strategy == mig.STRATEGY_MIXED:
        return {mig.RESOURCE_PREFIX + p: str(n) for p, n in found.items() if n}, labels
    if len(found) > 1:
        raise e.error("mig", f"the single strategy carves every GPU alike: one profile, got {', '.join(found)}")
    if found:
        ((profile, count),) = found.items()
        if gpus and gpus != count:
            raise e.error("gpus", f"with migStrategy single, gpus ({gpus}) counts the {count} {profile} instances")
        parsed = mig.parse_profile(profile)
        assert parsed is not None  # checked by `instances`
        labels[LABEL_GPU_PRODUCT] = f"MIG-{profile}"
        labels[constants.LABEL_GPU_MEMORY] = str(parsed.memory_gb * 1024)
        return {constants.RESOURCE_GPU: str(count)}, {**labels, constants.LABEL_GPU_COUNT: str(count)}
    return {}, labels
