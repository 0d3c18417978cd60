"""A SchedulingShard's `args` as `kai` flags (framework.shard_args): KAI's flag names passed, mapped or ignored."""

from __future__ import annotations

import pytest

from kai_scheduler.cli import parser
from kai_scheduler.framework import shard_args
from kai_scheduler.framework.shard_args import ArgError, ShardArgs, resolve

SAMPLES = {"bool": "true", "int": "7", "float": "7.5", "duration": "90s", "str": "x"}


@pytest.mark.parametrize(
    "args, want",
    [
        pytest.param({"qps": "80"}, ShardArgs(scheduler=("--qps=80",)), id="a flag of the same name is passed"),
        pytest.param({"--burst": "400"}, ShardArgs(scheduler=("--burst=400",)), id="a name written with its dashes"),
        pytest.param(
            {"leader-elect": "1"}, ShardArgs(scheduler=("--leader-elect=true",)), id="a boolean as Go spells it"
        ),
        pytest.param(
            {"namespace": "ops"},
            ShardArgs(scheduler=("--leader-elect-namespace=ops",)),
            id="KAI's namespace is the namespace of the Lease",
        ),
        pytest.param({"v": "3"}, ShardArgs(), id="KAI's default verbosity is kai's default level"),
        pytest.param({"v": "4"}, ShardArgs(command=("-v",)), id="verbosity 4 is info"),
        pytest.param({"v": "6"}, ShardArgs(command=("-vv",)), id="verbosity 5 and over is debug"),
        pytest.param({"log-json": "true"}, ShardArgs(command=("--log-format=json",)), id="log-json"),
        pytest.param({"log-json": "false"}, ShardArgs(command=("--log-format=text",)), id="log-json off"),
        pytest.param(
            {"enable-profiler": "true", "version": "false", "no-such-flag": "1"},
            ShardArgs(ignored=("enable-profiler", "no-such-flag", "version")),
            id="a flag not implemented here, or KAI's scheduler does not have either, is ignored and named",
        ),
        pytest.param(
            {"detailed-fit-errors": "true", "full-hierarchy-fairness": "true"},
            ShardArgs(scheduler=("--full-hierarchy-fairness=true",), ignored=("detailed-fit-errors",)),
            id="a flag taken only at its default is ignored when set otherwise",
        ),
    ],
)
def test_each_arg_becomes_a_kai_flag_or_is_ignored(args: dict[str, str], want: ShardArgs) -> None:
    assert resolve(args) == want


@pytest.mark.parametrize(
    "args, name, message",
    [
        ({"plugin-server-prt": "9"}, "plugin-server-prt", "unknown scheduler flag (did you mean plugin-server-port?)"),
        ({"leader-elec": "true"}, "leader-elec", "unknown scheduler flag (did you mean leader-elect?)"),
        ({"burst": "many"}, "burst", "expected an integer, got 'many'"),
        ({"use-scheduling-signatures": "yes"}, "use-scheduling-signatures", "expected true or false, got 'yes'"),
        ({"stuck-in-releasing-threshold": "2 min"}, "stuck-in-releasing-threshold", "invalid duration '2 min'"),
        ({"log-json": "on"}, "log-json", "expected true or false, got 'on'"),
    ],
)
def test_a_typo_or_a_bad_value_is_refused_naming_the_arg(args: dict[str, str], name: str, message: str) -> None:
    with pytest.raises(ArgError) as caught:
        resolve(args)
    assert caught.value.name == name
    assert str(caught.value).startswith(message)


def test_every_flag_a_shard_may_pass_is_one_kai_scheduler_takes() -> None:
    """The rendered command line parses: every name of SCHEDULER_FLAGS, with a value of its kind."""
    args = resolve(
        {
            **{name: SAMPLES[kind] for name, kind in shard_args.SCHEDULER_FLAGS.items()},
            "restrict-node-scheduling": "false",
            "detailed-fit-errors": "false",
            "full-hierarchy-fairness": "true",
            "namespace": "ops",
            "v": "5",
            "log-json": "true",
        }
    )
    assert not args.ignored
    parsed = parser().parse_args([*args.command, "scheduler", *args.scheduler])
    assert (parsed.verbose, parsed.log_format, parsed.qps, parsed.leader_elect_namespace) == (2, "json", 7.5, "ops")
