"""Each flag is declared once: the commands that take a flag of the same spelling all take that one declaration
(`api.flags`, `cli.file_flags`), with one help, kind and metavar; only the homonyms below mean something else."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import pkgutil
from collections import defaultdict
from typing import Any

import pytest

from kai_scheduler import cli
from kai_scheduler.api import flags
from kai_scheduler.api.flags import Flag
from kai_scheduler.cli import arguments
from kai_scheduler.framework.config import Flags
from tests.docs.flags import subcommands

# An option string two different flags take, each in its own commands, and why it is not one flag.
HOMONYMS = {
    "--nodes": "kai simulate: the trace's node list (a CSV file); kai explain: how many closest nodes are shown",
    "--namespace": "kai explain (-n): the job's namespace, as kubectl's; elsewhere the namespace KAI is installed in",
    "--schedule-period": "kai simulate: virtual time, a number of seconds or a duration with days",
    "--runtime-class-name": "the binder's reservation pods'; under kai admission the fractional pods' (its former "
    "name there: KAI's is --gpu-fraction-runtime-class-name)",
}


def _parsers() -> dict[str, argparse.ArgumentParser]:
    top = cli.parser()
    return {"kai": top, **{f"kai {name}": sub for name, sub in subcommands(top).items()}}


def _declarations() -> dict[str, dict[int, list[str]]]:
    """Per option string, the declarations that take it (a `Flag`, else the argparse action itself) and the
    commands of each."""
    found: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for command, parser in _parsers().items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            declaration: Any = arguments.declared(action) or action
            for option in action.option_strings:
                found[option][id(declaration)].append(command)
    return found


def test_no_flag_is_declared_twice() -> None:
    twice = {
        option: sorted(commands for commands in by_declaration.values())
        for option, by_declaration in _declarations().items()
        if len(by_declaration) > (2 if option in HOMONYMS else 1)
    }
    assert twice == {}, "declare the flag once (api.flags, cli.file_flags) and add it with cli.arguments.add"


def test_each_homonym_is_still_two_flags() -> None:
    """A homonym that became one flag leaves the list."""
    declarations = _declarations()
    assert {option: len(declarations[option]) for option in HOMONYMS} == dict.fromkeys(HOMONYMS, 2)


def _declared_flags() -> list[Flag[Any]]:
    names = [
        m.name for m in pkgutil.iter_modules(cli.__path__, "kai_scheduler.cli.") if not m.name.endswith("__main__")
    ]
    modules = [flags, *(importlib.import_module(name) for name in names)]
    return list({id(v): v for m in modules for v in vars(m).values() if isinstance(v, Flag)}.values())


def test_no_two_flags_share_an_option_string_but_the_homonyms() -> None:
    owners: dict[str, list[str]] = defaultdict(list)
    for flag in _declared_flags():
        for option in flag.option_strings:
            owners[option].append(flag.name)
    assert {o: names for o, names in owners.items() if len(names) > 1 and o not in HOMONYMS} == {}


def test_every_declared_flag_is_taken_by_a_command() -> None:
    taken = {id(arguments.declared(a)) for p in _parsers().values() for a in p._actions}
    assert [f.name for f in _declared_flags() if id(f) not in taken] == []


def test_the_scheduling_flags_are_the_configurations_flags_in_its_order_and_kinds() -> None:
    """`kai scheduler`'s flags over its configuration's `flags:`: one per field of `Flags`, of its value's kind."""
    kinds = {bool: flags.BOOL, int: flags.INT, float: flags.DURATION, str: flags.TEXT}
    fields = [(f.name, kinds[type(getattr(Flags(), f.name))]) for f in dataclasses.fields(Flags)]
    assert [(f.dest, f.kind) for f in flags.SCHEDULING] == fields


@pytest.mark.parametrize(
    "argv, dest, value",
    [
        (["node-scale-adjuster", "--scaling-pod-namespace", "ns"], "scale_adjust_namespace", "ns"),
        (["run", "--scaling-pod-namespace", "ns"], "scale_adjust_namespace", "ns"),
        (["admission", "--webhook-port", "9444"], "webhook_addr", 9444),
        (["run", "--webhook-port", "9444"], "webhook_addr", 9444),
        (["admission", "--runtime-class-name", "kata"], "gpu_fraction_runtime_class_name", "kata"),
        (["admission", "--gpu-pod-runtime-class-name", "kata"], "gpu_fraction_runtime_class_name", "kata"),
    ],
)
def test_a_former_spelling_still_sets_the_flag(argv: list[str], dest: str, value: object) -> None:
    assert getattr(cli.parser().parse_args(argv), dest) == value
