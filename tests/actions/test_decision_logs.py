"""Decision logs at debug level: why a job was not placed or skipped, and which victims a search tried.

Cluster (as in test_reclaim): team-a deserves 4 of 8 GPUs and runs nothing; team-b runs 8 single-GPU jobs on
n1; team-a's 4-pod gang `train` is pending, so allocate cannot place it and reclaim evicts for it.
"""

from __future__ import annotations

import logging

import pytest

from tests.actions import victim_builders as v
from tests.actions.test_reclaim import two_teams


def _records(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == message]


def test_debug_logs_say_why_a_job_waits_and_which_victims_were_tried(caplog: pytest.LogCaptureFixture) -> None:
    cluster = v.cluster(two_teams(), config={"actions": "allocate, reclaim"})
    with caplog.at_level(logging.DEBUG, logger="kai_scheduler.actions"):
        cluster.cycle()
    [waits] = _records(caplog, "job not placed")
    assert waits.__dict__["job"].endswith("/train") and waits.__dict__["reasons"]
    tried = _records(caplog, "victims tried")
    assert tried and all(r.__dict__["job"].endswith("/train") for r in tried)
    assert [r.__dict__["victim"].rsplit("/", 1)[1] for r in tried][:4] == ["b7", "b6", "b5", "b4"]
    [done] = _records(caplog, "victim search done")
    assert done.__dict__["result"] == "SOLVED"


def test_no_decision_logs_below_debug(caplog: pytest.LogCaptureFixture) -> None:
    cluster = v.cluster(two_teams(), config={"actions": "allocate, reclaim"})
    with caplog.at_level(logging.INFO, logger="kai_scheduler.actions"):
        cluster.cycle()
    assert not [r for r in caplog.records if r.name.startswith("kai_scheduler.actions")]
