"""Float tolerances, one per meaning: the only place these numbers are written.

Amounts are float64 sums of parsed quantities, so a decimal amount that should be exact can be off by a hair
(0.1 + 0.2 > 0.3 GPU; 9 x 2/3 / 2 = 2.9999…). Each comparison or rounding of such amounts allows for that
with the tolerance of its meaning; use them as `tolerance.RESOURCE`, never a bare literal.
"""

from __future__ import annotations

from typing import Final

RESOURCE: Final = 1e-6
"""Node-side fit: a request against a node's free, idle, releasing or allocatable amounts, a GPU device's
memory (MiB) or portion, in the resource's own unit (millicores, bytes, devices). An amount within this of a
whole number of units holds that many (`floor(free / request + RESOURCE)` copies fit). The predicates, the
actions' placement checks and the simulator's occupancy estimate all use it, so they agree on what fits."""

SHARE: Final = 1e-9
"""Queue accounting: a queue's held amount (plus a request) against its quota, limit, deserved or fair share,
and a share within this of a whole unit counted as that unit when the division hands out whole GPUs."""

ROUNDING: Final = 1e-9
"""A quotient meant to be whole in decimal, before ceil or floor: a GPU-memory request's portion in hundredths
of a GPU, the simulator's tick times."""
