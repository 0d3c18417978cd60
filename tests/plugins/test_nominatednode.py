"""nominatednode (§4): +NOMINATED_NODE on the pod's status.nominatedNodeName, nothing elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins import scores
from kai_scheduler.plugins.nominatednode import NominatedNode
from tests import builders as b


def _scores(nominated: str) -> list[float] | None:
    pod = b.pod("p", gpus=1)
    if nominated:
        pod["status"] = {"phase": "Pending", "nominatedNodeName": nominated}
    snap = b.snapshot([b.node("n1"), b.node("n2"), b.node("n3"), b.queue("q"), b.podgroup("p"), pod])
    ssn = b.session(snap)
    plugin = NominatedNode.from_args({})
    plugin.on_session_open(ssn)
    out = plugin.node_order(b.task(snap, "p"), np.ones(3, dtype=bool))
    return None if out is None else list(out)


def test_the_nominated_node_outscores_every_lower_preference() -> None:
    assert _scores("n2") == [0.0, scores.NOMINATED_NODE, 0.0]


@pytest.mark.parametrize("nominated", ["", "gone-node"])
def test_no_nomination_or_an_unknown_node_scores_nothing(nominated: str) -> None:
    assert _scores(nominated) is None


def test_the_plugin_takes_no_arguments() -> None:
    with pytest.raises(ConfigError, match="nominatednode: takes no arguments"):
        NominatedNode.from_args({"weight": "2"})
