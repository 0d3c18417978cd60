"""The `kai …` commands that README.md and docs/*.md show, as argv lists with where they were read.

Two places hold commands: lines of fenced code blocks (a shell prompt `$ `, a `#` comment such as README's
`#   kai manifests …`, and a pipe `… | kai …` are looked through; `\\` continues a line) and inline code spans that
start with `kai `. A command ends at a shell operator (`|`, `&&`, `;`, `>`); `#` starts a comment in a block.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the user's pages, and the developers' READMEs (bench figures, the test suite, the e2e suite) they link to
PAGES = (
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "bench" / "README.md",
    ROOT / "tests" / "README.md",
    ROOT / "tests" / "e2e" / "README.md",
)
_OPERATORS = frozenset({"|", "||", "&&", ";", ">", ">>", "<", "2>", "2>&1", "&"})
_FENCE = re.compile(r"^\s*(```|~~~)")
_MENTION = re.compile(r"(^|[|&;]\s*)kai\s")
_SPAN = re.compile(r"(?<!`)`(kai [^`]+)`(?!`)")


@dataclass(frozen=True)
class Command:
    page: Path
    line: int  # 1-based, of the line the command starts on
    argv: tuple[str, ...]  # after `kai`
    in_block: bool  # a fenced code block (copied whole by users), not an inline span
    comment: str  # a block line's `# …` comment, "" for a span

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def __str__(self) -> str:
        return f"{self.where}: kai {shlex.join(self.argv)}"


def _split(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars="|&;<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _commands_in(tokens: list[str]) -> list[list[str]]:
    """Each `kai …` in a token list, cut at the next shell operator."""
    found = []
    for i, tok in enumerate(tokens):
        if tok == "kai" and (i == 0 or tokens[i - 1] in _OPERATORS or tokens[i - 1] == "$"):
            argv = []
            for t in tokens[i + 1 :]:
                if t in _OPERATORS:
                    break
                argv.append(t)
            found.append(argv)
    return found


def _block_lines(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, logical line) of every fenced code line, continuations joined."""
    out: list[tuple[int, str]] = []
    inside = False
    pending: tuple[int, str] | None = None
    for number, line in enumerate(lines, 1):
        if _FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            continue
        if pending is not None:
            start, text = pending
            text += " " + line.strip()
        else:
            start, text = number, line.strip()
        if text.endswith("\\"):
            pending = (start, text[:-1])
            continue
        pending = None
        out.append((start, text))
    return out


def _comment(line: str) -> str:
    index = line.find(" #")
    return line[index + 2 :].strip() if index >= 0 else ""


def read(page: Path) -> list[Command]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Command] = []
    for number, text in _block_lines(lines):
        body = text.removeprefix("$ ")
        # README's `#   kai manifests …` is an alternative written as a comment: read it as a command
        uncommented = re.sub(r"^#\s*", "", body) if re.match(r"^#\s*kai ", body) else body
        if not _MENTION.search(uncommented):  # YAML, JSON, output: only lines that run `kai` are read as shell
            continue
        cut = uncommented.find(" #")
        command = uncommented if cut < 0 else uncommented[:cut]
        try:
            tokens = _split(command)
        except ValueError as err:
            raise ValueError(f"{page.relative_to(ROOT)}:{number}: {err}: {command}") from err
        for argv in _commands_in(tokens):
            found.append(Command(page, number, tuple(argv), True, _comment(uncommented)))
    inside = False
    for number, line in enumerate(lines, 1):
        if _FENCE.match(line):
            inside = not inside
            continue
        if inside:
            continue
        for span in _SPAN.findall(line):
            try:
                tokens = _split(span)
            except ValueError:  # an unbalanced quote in prose: not a command to copy
                continue
            for argv in _commands_in(tokens):
                found.append(Command(page, number, tuple(argv), False, ""))
    return found


def every() -> list[Command]:
    return [command for page in PAGES for command in read(page)]
