"""The flags that the commands reading a scenario, manifests or a snapshot share (`kai schedule`, `kai snapshot-tool`,
`kai simulate`, `kai explain`, `kai dashboard`), each declared once; each command gives its default."""

from __future__ import annotations

from typing import Final

from kai_scheduler.api.flags import INT, SWITCH, TEXT, Flag

CONFIG: Final = Flag(
    "config",
    TEXT,
    "scheduler configuration file (KAI's config.yaml or its ConfigMap), in place of FILE's `config:`",
    "PATH",
)
OUTPUT: Final = Flag(
    "output", TEXT, "print the result as tables or text, for a person, or as json or yaml, for a program", None, ("-o",)
)
CYCLES: Final = Flag(
    "cycles", INT, "scheduling cycles to run (the binder, kubelet and controllers act between two)", "N"
)
NO_PROGRESS: Final = Flag(
    "no-progress",
    SWITCH,
    "print no progress on standard error (the steps that take over a second; a simulation's bar on a terminal, "
    "else a line per tenth of its horizon)",
)
