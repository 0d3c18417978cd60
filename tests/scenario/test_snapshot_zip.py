"""snapshot.zip (KAI's snapshot plugin's format): its layout, what `kai schedule` reads from it, and every user
error as one line naming the file and the field."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler import scenario as scenarios
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.framework.config import Flags
from kai_scheduler.scenario import snapshot_zip
from kai_scheduler.scenario.source import ScenarioError
from tests.builders import node, queue

POD: dict[str, Any] = {  # as KAI's snapshot holds a pod: a lister's object, without kind and apiVersion
    "metadata": {"name": "p", "namespace": "team-a", "labels": {"kai.scheduler/queue": "q"}},
    "spec": {
        "schedulerName": "kai-scheduler",
        "containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}],
    },
    "status": {"phase": "Pending"},
}


def zipped(doc: object, member: str = "snapshot.json") -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(member, doc if isinstance(doc, str) else json.dumps(doc))
    return out.getvalue()


def write(tmp_path: Path, data: bytes, name: str = "snapshot.zip") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def kai_doc(**raw: Any) -> dict[str, Any]:
    objects = {"nodes": [node("n1", gpus=0)], "queues": [queue("q")], "pods": [POD], **raw}
    params = {"schedulerName": "kai-scheduler"}
    return {"config": {"actions": "allocate"}, "schedulerParams": params, "rawObjects": objects}


def test_encode_writes_one_member_with_the_three_keys_and_kais_names() -> None:
    params = snapshot_zip.params_json(Flags(partition_label_value="a", schedule_period=1.5))
    data = snapshot_zip.encode({"actions": "allocate"}, params, {"pods": [POD], "podGroups": []})
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.namelist() == ["snapshot.json"]
        doc = json.loads(archive.read("snapshot.json"))
    assert list(doc) == ["config", "schedulerParams", "rawObjects"]
    assert doc["rawObjects"] == {"pods": [POD], "podGroups": []}
    assert doc["schedulerParams"]["partitionParams"] == {
        "nodePoolLabelKey": "kai.scheduler/node-pool",
        "nodePoolLabelValue": "a",
    }
    assert doc["schedulerParams"]["schedulePeriod"] == 1_500_000_000  # a Go time.Duration: nanoseconds
    assert doc["schedulerParams"]["maxNumberConsolidationPreemptees"] == 16
    assert doc["schedulerParams"]["globalDefaultStalenessGracePeriod"] == 60_000_000_000
    with pytest.raises(ValueError, match="rawObjects: unknown key 'widgets'"):
        snapshot_zip.encode({}, {}, {"widgets": []})


def test_every_flag_has_a_param_and_they_read_back(tmp_path: Path) -> None:
    flags = Flags(
        partition_label_value="pool-b",
        schedule_period=0.25,
        max_consolidation_preemptees=3,
        use_scheduling_signatures=False,
        stuck_in_releasing_threshold=30.0,
        pipelined_claims=True,
    )
    doc = {"config": {}, "schedulerParams": snapshot_zip.params_json(flags), "rawObjects": {}}
    loaded = scenarios.load(write(tmp_path, zipped(doc)))
    assert Flags(**loaded.config["flags"]) == flags


def test_a_kai_snapshot_loads_kinds_from_their_keys_and_skips_kinds_not_read(tmp_path: Path) -> None:
    doc = kai_doc(configMaps=[{"metadata": {"name": "c"}}], storageClasses=None, topologies=None)
    doc["schedulerParams"] = {"isInferencePreemptible": True, "partitionParams": {"nodePoolLabelKey": "pool"}}
    loaded = scenarios.load(write(tmp_path, zipped(doc)))
    kinds = [(o["kind"], o["apiVersion"], o["metadata"]["name"]) for o in loaded.objects]
    assert kinds == [("Node", "v1", "n1"), ("Queue", "scheduling.run.ai/v2", "q"), ("Pod", "v1", "p")]
    assert loaded.config == {"actions": "allocate", "flags": {"nodepool_label_key": "pool"}}


def test_dra_objects_are_kept_beside_the_manifest_kinds(tmp_path: Path) -> None:
    device_class = {"metadata": {"name": "gpu.example.com"}, "spec": {"selectors": []}}
    loaded = scenarios.load(write(tmp_path, zipped(kai_doc(deviceClasses=[device_class]))))
    assert [o["kind"] for o in loaded.objects][-1] == "DeviceClass"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"PK\x03\x04 cut short", "snapshot.zip: not a readable zip (truncated or corrupt?)"),
        (zipped({}, member="other.json"), "snapshot.zip: not a scheduler snapshot: no snapshot.json in the zip"),
        (zipped('{"config": '), "snapshot.zip: snapshot.json:1: not JSON: Expecting value"),
        (zipped([]), "snapshot.zip: snapshot.json: expected an object with config, schedulerParams, rawObjects"),
        (zipped({"config": {}}), "snapshot.zip: snapshot.json: rawObjects: missing"),
        (zipped({**kai_doc(), "extra": 1}), "snapshot.zip: snapshot.json: unknown field 'extra'"),
        (zipped(kai_doc(widgets=[])), "snapshot.zip: snapshot.json rawObjects.widgets: unknown kind"),
        (zipped(kai_doc(pods={})), "snapshot.zip: snapshot.json rawObjects.pods: expected a list, got {}"),
        (zipped(kai_doc(pods=[1])), "snapshot.zip: snapshot.json rawObjects.pods[0]: expected an object, got 1"),
        (
            zipped(kai_doc(pods=[{**POD, "kind": "Node"}])),
            "snapshot.zip: snapshot.json rawObjects.pods[0].kind: 'Node' under pods",
        ),
        (
            zipped({**kai_doc(), "schedulerParams": {"schedulePeriod": "1s"}}),
            "snapshot.zip: snapshot.json schedulerParams.schedulePeriod: expected a duration in nanoseconds",
        ),
        (
            zipped({**kai_doc(), "schedulerParams": {"speed": 1}}),
            "snapshot.zip: snapshot.json schedulerParams.speed: unknown parameter",
        ),
        (zipped({**kai_doc(), "config": []}), "snapshot.zip: snapshot.json config: expected an object"),
        (
            zipped({**kai_doc(), "config": {"flags": {}}}),
            "snapshot.zip: snapshot.json config.flags: the flags are schedulerParams in a snapshot",
        ),
    ],
)
def test_a_bad_snapshot_is_one_line_naming_the_field(tmp_path: Path, data: bytes, message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        scenarios.load(write(tmp_path, data))
    said = str(err.value).removeprefix(f"{tmp_path}/")
    assert said.startswith(message), said
    assert "\n" not in said


def test_a_bad_object_in_a_snapshot_names_the_file_the_object_and_the_field(tmp_path: Path) -> None:
    pod = json.loads(json.dumps(POD))
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    with pytest.raises(ObjectError) as err:
        scenarios.load(write(tmp_path, zipped(kai_doc(pods=[pod]))))
    assert str(err.value) == (
        f"{tmp_path}/snapshot.zip: Pod team-a/p spec.containers[0].resources.requests.cpu: invalid quantity 'lots'"
    )


def test_a_zip_whose_data_is_damaged_is_one_line(tmp_path: Path) -> None:
    data = bytearray(snapshot_zip.encode({}, {}, {"pods": [POD] * 50}))
    data[60] ^= 0xFF  # inside the deflated snapshot.json
    with pytest.raises(ScenarioError) as err:
        scenarios.load(write(tmp_path, bytes(data)))
    assert "not a readable zip (truncated or corrupt?)" in str(err.value)


def test_a_binary_file_that_is_no_zip_says_so(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"not UTF-8 text \(byte 1\), nor a snapshot zip"):
        scenarios.load(write(tmp_path, b"\x00\xff\xfe", "blob.dat"))
