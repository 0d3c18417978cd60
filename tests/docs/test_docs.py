"""README.md and docs/*.md (and the READMEs of bench/, tests/ and tests/e2e/) say only what is true of `kai`: the
commands they show exist and take the flags they name, the files and links they point to are there, and the
offline commands they show on example files run and exit as they say. All in-process (the argparse parsers,
`cli.main`), no subprocess.

What is not run here, and why: `kai simulate` (each example replays minutes to hours of virtual time, 3 to 27 s
apiece on the 2-core box; the trace commands need ../shared/traces and take minutes): their argv is parsed
(flags and values) but not run; tests/sim and tests/cli/test_examples.py run the examples. Commands against a
cluster (`--kubeconfig`, `kai run`, the components) and `kai dashboard` (a server): parsed, not run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kai_scheduler import cli
from tests.docs import commands, flags, links

COMMANDS = commands.every()
# the offline commands that run here: `kai schedule` / `kai explain` / `kai migrate` of a file the repository holds
_RUN = frozenset({"schedule", "explain", "migrate"})
_REPO_FILE = re.compile(r"^(examples|tests)/\S+\.(yaml|yml|zip)$")


def _runnable(command: commands.Command) -> bool:
    argv = command.argv
    return (
        bool(argv)
        and argv[0] in _RUN
        and any(_REPO_FILE.match(arg) and (commands.ROOT / arg).exists() for arg in argv)
        and "--kubeconfig" not in argv
    )


def _expected_exit(command: commands.Command) -> int:
    """0, or what the line's comment says (`# exit 1 …`)."""
    match = re.match(r"(?:or )?exit (\d+)", command.comment)
    return int(match.group(1)) if match else 0


RUNS = [command for command in COMMANDS if _runnable(command)]


def test_the_docs_show_commands() -> None:
    """The reader finds the commands (so a change to the reader that finds none fails here, not silently)."""
    assert len(COMMANDS) > 100
    assert len(RUNS) >= 5
    pages = {command.page.name for command in COMMANDS}
    assert {"README.md", "scenarios.md", "explain.md", "components.md", "simulate.md"} <= pages


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_every_command_and_flag_named_exists(command: commands.Command) -> None:
    assert flags.problems(command.argv) == [], command.where


@pytest.mark.parametrize(
    "command",
    [c for c in COMMANDS if c.in_block and not any(arg.startswith("[") for arg in c.argv)],
    ids=str,
)
def test_every_command_of_a_code_block_parses(command: commands.Command) -> None:
    """What a user copies from a code block parses whole, values included (a usage synopsis with `[…]` is
    not a command)."""
    assert flags.parse_error(command.argv) is None, f"{command}: {flags.parse_error(command.argv)}"


@pytest.mark.parametrize("page", commands.PAGES, ids=lambda page: page.name)
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert links.broken_links(page) == []


@pytest.mark.parametrize("page", commands.PAGES, ids=lambda page: page.name)
def test_every_repository_path_named_exists(page: Path) -> None:
    assert links.missing_paths(page) == []


@pytest.fixture
def at_root() -> Iterator[None]:
    """The docs' commands are written from the repository's root."""
    kept = Path.cwd()
    os.chdir(commands.ROOT)
    try:
        yield
    finally:
        os.chdir(kept)


@pytest.mark.usefixtures("at_root")
@pytest.mark.parametrize("command", RUNS, ids=str)
def test_every_offline_command_on_an_example_runs(
    command: commands.Command, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(list(command.argv))
    out, err = capsys.readouterr()
    assert code == _expected_exit(command), f"{command}: exit {code}\n{err}"
    assert out.strip(), f"{command}: printed nothing"


def _quoted_outputs() -> list[tuple[str, str, str]]:
    """(where, command line, output) of every ```text block that starts with `$ kai …`: the output the docs
    quote."""
    found = []
    for page in commands.PAGES:
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"^```text\n\$ (kai [^\n]+)\n(.*?)^```", text, re.S | re.M):
            line = text[: match.start()].count("\n") + 2
            found.append((f"{page.relative_to(commands.ROOT)}:{line}", match.group(1), match.group(2)))
    return found


@pytest.mark.usefixtures("at_root")
@pytest.mark.parametrize(("where", "line", "quoted"), _quoted_outputs(), ids=lambda value: str(value)[:60])
def test_quoted_output_is_what_the_command_prints(
    where: str, line: str, quoted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = line.split()[1:]
    code = cli.main(argv)
    out, _ = capsys.readouterr()
    assert code == 0, where
    assert out.rstrip() == quoted.rstrip(), f"{where}: `{line}` prints otherwise now:\n{out}"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    """README's Docs list is the index: a page not linked from it is one a new user does not find."""
    readme = (commands.ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)", readme))
    pages = {page.name for page in (commands.ROOT / "docs").glob("*.md")}
    assert pages - linked == set()


@pytest.mark.parametrize("page", commands.PAGES, ids=lambda page: page.name)
def test_every_flag_of_a_flag_table_is_its_commands(page: Path) -> None:
    """docs' flag tables (`| `--flag` | default | meaning |`) name flags their command takes."""
    assert flags.table_problems(page.name, page.read_text(encoding="utf-8")) == []


def test_every_flag_kai_takes_is_documented() -> None:
    """Each flag of each command's --help is named somewhere in README.md or docs/ (a flag table, a command)."""
    text = "".join(page.read_text(encoding="utf-8") for page in commands.PAGES)
    assert flags.undocumented(text) == {}


def test_the_files_help_points_to_exist() -> None:
    """`--help` says "see docs/…": those pages (and example files) are there."""
    missing = [
        f"{where}: {name}"
        for where, text in flags.help_texts()
        for name in re.findall(r"((?:docs|examples|deploy|bench)/[\w./-]*\w)", text)
        if not (commands.ROOT / name).exists()
    ]
    assert len(flags.help_texts()) > 200
    assert missing == []
