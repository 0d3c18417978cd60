"""Float tolerances have one source (cluster/tolerance.py): no module writes its own."""

from __future__ import annotations

import re
from pathlib import Path

import kai_scheduler
from kai_scheduler.cluster import tolerance

SRC = Path(kai_scheduler.__file__).parent
# Unit factors, not tolerances: quantity suffixes (n, u) and duration units (ns, us).
UNITS = {SRC / "api" / "quantity.py", SRC / "api" / "duration.py"}
SMALL_LITERAL = re.compile(r"(?<![\w.])\d+(\.\d+)?e-\d+\b")


def test_no_module_writes_its_own_tolerance() -> None:
    found = [
        f"{path.relative_to(SRC)}:{n}: {line.strip()}"
        for path in sorted(SRC.rglob("*.py"))
        if path not in UNITS | {Path(tolerance.__file__)}
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if SMALL_LITERAL.search(line.split("#")[0]) and "_MATCH = " not in line
    ]
    assert not found, "use kai_scheduler.cluster.tolerance:\n" + "\n".join(found)


def test_a_node_side_fit_allows_more_than_float_noise_and_queue_accounting_no_less() -> None:
    assert 0.1 + 0.2 - 0.3 < tolerance.SHARE <= tolerance.RESOURCE
