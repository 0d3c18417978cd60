"""Read the Prometheus text format as Prometheus does: `# TYPE` lines and series, names taken as written
(the Python client's parser renames counters; these tests check the names a dashboard queries)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SERIES = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass
class Scrape:
    types: dict[str, str] = field(default_factory=dict)  # family name → type, from `# TYPE`
    series: list[tuple[str, dict[str, str], float]] = field(default_factory=list)

    def samples(self, name: str) -> list[tuple[dict[str, str], float]]:
        return [(labels, value) for got, labels, value in self.series if got == name]

    def value(self, name: str, **labels: str) -> float | None:
        """The series `name` with exactly these labels (None if absent)."""
        found = [v for got, lab, v in self.series if got == name and lab == labels]
        return found[0] if found else None


def parse(text: str) -> Scrape:
    scrape = Scrape()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            scrape.types[name] = kind
        elif line and not line.startswith("#"):
            match = _SERIES.match(line)
            assert match is not None, f"not a series line: {line!r}"
            name, labels, value = match.groups()
            pairs = {
                k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                for k, v in _LABEL.findall(labels or "")
            }
            scrape.series.append((name, pairs, float(value)))
    return scrape
