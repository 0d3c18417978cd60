"""Relative Markdown links (with their anchors) and the repository paths that README.md and docs/*.md name."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.commands import PAGES, ROOT

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`]*`")
# a path under one of these folders, as the docs write it in code or prose: examples/quickstart.yaml, bench/run.py
_PATH = re.compile(r"(?<![\w./-])((?:examples|docs|deploy|bench)/[\w./-]*[\w/])")
_FENCE = re.compile(r"^\s*(```|~~~)")


def anchors(page: Path) -> frozenset[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but `-` and `_` dropped, spaces to `-`,
    a repeated heading suffixed -1, -2…"""
    seen: dict[str, int] = {}
    found = set()
    inside = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            inside = not inside
            continue
        match = re.match(r"^#{1,6} +(.*?) *#*$", line)
        if inside or not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(found)


def broken_links(page: Path) -> list[str]:
    found = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for match in _LINK.finditer(_CODE_SPAN.sub("", line)):
            target = match.group(1) or match.group(2)
            if re.match(r"^[a-z]+:", target):  # https:, mailto:: not followed offline
                continue
            path_part, _, anchor = target.partition("#")
            path = (page.parent / path_part).resolve() if path_part else page
            where = f"{page.relative_to(ROOT)}:{number}"
            if not path.exists():
                found.append(f"{where}: link to {target}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                found.append(f"{where}: link to {target}: {path.name} has no heading with anchor #{anchor}")
    return found


def missing_paths(page: Path) -> list[str]:
    """Paths under examples/, docs/, deploy/, bench/ that a page names and the repository does not hold.
    A name with a placeholder in it (FILE, OUT, `<…>`, `*`) is not a path to check, nor kubectl's `deploy/NAME`."""
    found = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for match in _PATH.finditer(line):
            name = match.group(1).rstrip(".")
            if re.search(r"[A-Z]{3,}|\*|<|\.\.\.", name):
                continue
            if re.fullmatch(r"deploy/[\w.-]+", name) and not (ROOT / name).exists():
                continue  # kubectl's `deploy/NAME` (a Deployment), as in `kubectl port-forward deploy/kai-scheduler`
            if not (ROOT / name).exists() and not (page.parent / name).exists():
                found.append(f"{page.relative_to(ROOT)}:{number}: {name}: no such file or folder")
    return found


def every_problem() -> list[str]:
    return [problem for page in PAGES for problem in (*broken_links(page), *missing_paths(page))]
