"""`kai simulate`'s inputs with one thing wrong: the Alibaba trace CSVs (`--trace PODS --nodes NODES`) and the
`generators:` of a scenario. A bad row, header or file is one line naming the file, the row's line and the column
(`pods.csv:2:4: num_gpu: …`), exit 2; nothing is skipped (docs/simulate.md: a replay of part of the file would not
be the trace); never a traceback.

The property tests change one cell, column or byte of small generated files (hypothesis, bounded to a few
seconds); the tables keep each case the fuzzing found as its own test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler import cli
from kai_scheduler.api.errors import UserError
from kai_scheduler.sim import trace

JSON = dict[str, Any]
POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
)
POD_ROWS = ("p0,4000,8192,1,1000,,LS,Running,0,100,0", "p1,2000,4096,1,500,V100M32,BE,Running,10,90,20")
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
NODE_ROWS = ("n0,32000,262144,8,V100M32", "n1,16000,65536,0,")


def _csv(header: str, rows: tuple[str, ...] | list[str]) -> str:
    return "\n".join([header, *rows]) + "\n"


def _write(tmp_path: Path, pods: str, nodes: str) -> tuple[Path, Path]:
    (tmp_path / "pods.csv").write_text(pods, encoding="utf-8")
    (tmp_path / "nodes.csv").write_text(nodes, encoding="utf-8")
    return tmp_path / "pods.csv", tmp_path / "nodes.csv"


def _simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = cli.main(["simulate", *args, "--no-report", "--no-progress", "--until", "10m"])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


POD_CELL = {c: i for i, c in enumerate(POD_HEADER.split(","))}


def _pod(column: str, value: str) -> str:
    cells = POD_ROWS[0].split(",")
    cells[POD_CELL[column]] = value
    return ",".join(cells)


@pytest.mark.parametrize(
    "pods, nodes, line",
    [
        pytest.param("", None, "pods.csv:1: empty file: expected a header with name, ", id="empty file"),
        pytest.param(
            _csv(POD_HEADER, []), None, "pods.csv:1: a header and no rows: nothing to replay", id="header only"
        ),
        pytest.param(
            None, _csv(NODE_HEADER, []), "nodes.csv:1: a header and no rows: nothing to replay", id="nodes header only"
        ),
        pytest.param(
            _csv(POD_HEADER.replace(",", ";"), [POD_ROWS[0].replace(",", ";")]),
            None,
            "pods.csv:1: missing column 'name' (have: 'name;cpu_milli;memory_mib;num_gpu;gp...): the columns are "
            "separated by ';', not commas",
            id="semicolons",
        ),
        pytest.param(
            None,
            _csv(NODE_HEADER.replace(",", "\t"), [NODE_ROWS[0].replace(",", "\t")]),
            "nodes.csv:1: missing column 'sn' (have: 'sn\\tcpu_milli\\tmemory_mib\\tgpu\\tmodel'): the columns are "
            "separated by '\\t', not commas",
            id="tabs",
        ),
        pytest.param(
            _csv(POD_HEADER, [_pod("num_gpu", "abc")]), None, "pods.csv:2:4: num_gpu: expected a number, got 'abc'"
        ),
        pytest.param(
            _csv(POD_HEADER, [_pod("cpu_milli", "NaN")]), None, "pods.csv:2:2: cpu_milli: expected a number, got 'NaN'"
        ),
        pytest.param(
            _csv(POD_HEADER, [_pod("memory_mib", "-1")]), None, "pods.csv:2:3: memory_mib: must not be negative"
        ),
        pytest.param(
            _csv(POD_HEADER, [_pod("num_gpu", "1e30")]),
            None,
            "pods.csv:2:4: num_gpu: must be at most 100000, got '1e30'",
            id="a GPU count of 1e30 (was an error naming no row: the pod's quantity too large)",
        ),
        pytest.param(
            _csv(POD_HEADER, [_pod("cpu_milli", "1e300")]),
            None,
            "pods.csv:2:2: cpu_milli: must be at most 1e+09, got '1e300'",
            id="cpu 1e300 (was a 300-digit quantity in an error naming no row)",
        ),
        pytest.param(
            _csv(POD_HEADER, [_pod("gpu_milli", "1e30")]),
            None,
            "pods.csv:2:5: gpu_milli: must be at most 1000, got '1e30'",
            id="gpu_milli past a whole GPU (was read as one GPU)",
        ),
        pytest.param(
            _csv(POD_HEADER, [_pod("num_gpu", "1.5")]),
            None,
            "pods.csv:2:4: num_gpu: expected a whole number, got '1.5'",
            id="a fraction of a GPU count (was cut to 1)",
        ),
        pytest.param(
            _csv(POD_HEADER, [_pod("deletion_time", "1e300")]),
            None,
            "pods.csv:2:10: deletion_time: must be at most 1e+10, got '1e300'",
            id="a time past three centuries",
        ),
        pytest.param(
            _csv(POD_HEADER, ["p0,4000"]),
            None,
            "pods.csv:2:9: creation_time: missing: the row has 2 of the header's 11 fields",
            id="a short row (was: expected a number, got '')",
        ),
        pytest.param(
            _csv(POD_HEADER, [_pod("name", "")]),
            None,
            "pods.csv:2:1: name: empty name",
            id="an empty name (was an error naming no row)",
        ),
        pytest.param(
            _csv(POD_HEADER, [POD_ROWS[0], POD_ROWS[0]]),
            None,
            "pods.csv:3:1: name: 'p0' is also the name on line 2",
            id="a name twice (was an error naming no row)",
        ),
        pytest.param(
            None,
            _csv(NODE_HEADER, ["n0,32000,262144,1.5,V100M32"]),
            "nodes.csv:2:4: gpu: expected a whole number, got '1.5'",
            id="a node's fraction of a GPU (was cut to 1)",
        ),
        pytest.param(
            None,
            _csv(NODE_HEADER, ["n0,32000,262144,1e30,V100M32"]),
            "nodes.csv:2:4: gpu: must be at most 100000, got '1e30'",
            id="a node of 1e30 GPUs (was an error naming no row)",
        ),
    ],
)
def test_a_bad_trace_file_is_one_line_naming_the_file_row_and_column_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], pods: str | None, nodes: str | None, line: str
) -> None:
    paths = _write(
        tmp_path, _csv(POD_HEADER, POD_ROWS) if pods is None else pods, nodes or _csv(NODE_HEADER, NODE_ROWS)
    )
    code, lines = _simulate(capsys, "--trace", str(paths[0]), "--nodes", str(paths[1]))
    assert code == cli.EXIT_USER_ERROR
    assert lines == [f"kai: {tmp_path}/{line}"] or (len(lines) == 1 and lines[0].startswith(f"kai: {tmp_path}/{line}"))


def test_a_byte_order_mark_is_read_as_nothing(tmp_path: Path) -> None:
    plain = trace.read_tasks(_write(tmp_path, _csv(POD_HEADER, POD_ROWS), _csv(NODE_HEADER, NODE_ROWS))[0])
    (tmp_path / "bom.csv").write_text("\ufeff" + _csv(POD_HEADER, POD_ROWS), encoding="utf-8")
    (tmp_path / "bom-nodes.csv").write_text("\ufeff" + _csv(NODE_HEADER, NODE_ROWS), encoding="utf-8")
    assert trace.read_tasks(tmp_path / "bom.csv") == plain
    assert [n["name"] for n in trace.read_nodes(tmp_path / "bom-nodes.csv")] == ["n0", "n1"]


CELL = st.one_of(
    st.sampled_from(["abc", "", "-1", "NaN", "nan", "inf", "-inf", "1e400", "1e30", "9" * 40, "1.5", "0", "  7 "]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**20), 10**20).map(str),
)


@st.composite
def bad_files(draw: st.DrawFn) -> tuple[str, str, str]:
    """The two files with one thing changed: a cell, a row cut short or dropped, a header cell, a BOM, the
    delimiter; and which file was changed."""
    which = draw(st.sampled_from(["pods", "nodes"]))
    header, rows = (POD_HEADER, list(POD_ROWS)) if which == "pods" else (NODE_HEADER, list(NODE_ROWS))
    change = draw(st.sampled_from(["cell", "short", "header", "bom", "delimiter", "drop rows"]))
    r = draw(st.integers(0, len(rows) - 1))
    cells = rows[r].split(",")
    c = draw(st.integers(0, len(cells) - 1))
    if change == "cell":
        cells[c] = draw(CELL).replace(",", "").replace("\n", "").replace("\r", "").replace('"', "")
        rows[r] = ",".join(cells)
    elif change == "short":
        rows[r] = ",".join(cells[:c])
    elif change == "header":
        names = header.split(",")
        names[c] = draw(st.sampled_from(["", "Name", names[c].upper(), "x"]))
        header = ",".join(names)
    elif change == "delimiter":
        delimiter = draw(st.sampled_from([";", "\t", "|", " "]))
        header, rows = header.replace(",", delimiter), [row.replace(",", delimiter) for row in rows]
    elif change == "drop rows":
        rows = []
    text = ("\ufeff" if change == "bom" else "") + _csv(header, rows)
    pods, nodes = (text, _csv(NODE_HEADER, NODE_ROWS)) if which == "pods" else (_csv(POD_HEADER, POD_ROWS), text)
    return pods, nodes, which


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=bad_files())
def test_any_one_change_to_the_trace_files_loads_or_is_one_line_naming_the_file(
    tmp_path: Path, files: tuple[str, str, str]
) -> None:
    pods, nodes, which = files
    paths = _write(tmp_path, pods, nodes)
    try:
        trace.load(*paths)
    except UserError as err:
        text = str(err)
        changed = str(paths[0] if which == "pods" else paths[1])
        assert text.startswith(f"{changed}:") or text.startswith(f"{paths[0]}: "), text
        assert "\n" not in text and len(text) < 300, text
