"""The benchmarks' common entry: each case runs in a child process of its own, so its peak memory is its own.

`run_cases(script, doc, names, run_case)` parses `--only NAME` and the hidden child entry `--case NAME`. In a
child it prints `run_case(NAME)` as one JSON line and returns None; otherwise it runs the chosen cases, each
as `python SCRIPT --case NAME`, and returns their results by name, in order.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Iterable
from typing import Any

Result = dict[str, Any]


def run_cases(script: str, doc: str | None, names: Iterable[str],
              run_case: Callable[[str], Result]) -> dict[str, Result] | None:
    names = list(names)
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0] if doc else None)
    parser.add_argument("--only", choices=sorted(names))
    parser.add_argument("--case", help=argparse.SUPPRESS)     # child process entry
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case)))
        return None
    results = {}
    for name in [args.only] if args.only else names:
        out = subprocess.run([sys.executable, script, "--case", name], capture_output=True, text=True, check=True)
        results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    return results
