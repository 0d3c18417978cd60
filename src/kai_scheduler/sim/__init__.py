"""Embedded and simulated runs: the real components over an in-memory cluster (`kai schedule`, `kai simulate`).

`embedded` wires the podgrouper, scheduler, binder, status controllers and an emulated kubelet over one
in-memory store; `replay` drives it with a virtual clock (`engine`) through a workload from `sources`
(a scenario file, `generators`, or the Alibaba `trace`), with workload owners (`owners`, `workload`) and
the kubelet (`kubelet`) acting between cycles. `outcome` and `check` are what `kai schedule` reports and
checks; `metrics`, `occupancy`, `report` and `plots` are what `kai simulate` measures and writes.

How to read it: `embedded.py`, then `replay.py`; `outcome.py` for `kai schedule`.
"""
