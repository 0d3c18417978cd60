"""DRA against extended resources: `python bench/bench_dra.py [--only NAME]` prints a table.

The same workload twice: 1,000 nodes x 8 GPUs, 20 queues, 8,000 pending one-GPU pods in gangs of 4, once asking
`nvidia.com/gpu` and once through DRA (each node publishes a ResourceSlice of 8 GPUs of NVIDIA's driver, each pod
has a claim made from a template for one device of class gpu.nvidia.com, selected by CEL). One allocate cycle
of a fresh scheduler over the in-memory store, each case in its own process. Target: DRA allocate within 2x of
`nvidia.com/gpu`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import ALLOCATE_COLUMNS, allocate_cells, allocate_figures, print_table, run_cases, time_cycle

NODES, QUEUES, GANGS = 1000, 20, [4] * 2000
DRA = "resource.k8s.io/v1beta1"
DRIVER = "gpu.nvidia.com"
CASES = {
    "nvidia.com/gpu": "8,000 one-GPU pods (nvidia.com/gpu) in gangs of 4 on 1,000 nodes x 8 GPUs",
    "dra": "the same pods, each with a one-GPU claim from a template, on 1,000 nodes x 8 DRA GPUs",
}
TARGET = 2.0


def _dra_cluster() -> list[dict[str, Any]]:
    import workloads

    objs = workloads.cluster(NODES, QUEUES, GANGS)
    objs.append(
        {
            "apiVersion": DRA,
            "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        }
    )
    template_spec = {"devices": {"requests": [{"name": "gpu", "deviceClassName": DRIVER, "count": 1}]}}
    for obj in list(objs):
        if obj["kind"] == "Node":
            name = obj["metadata"]["name"]
            del obj["status"]["allocatable"]["nvidia.com/gpu"]
            devices = [
                {
                    "name": f"gpu-{i}",
                    "basic": {
                        "attributes": {
                            "type": {"string": "gpu"},
                            "index": {"int": i},
                            "uuid": {"string": f"GPU-{name}-{i}"},
                            "productName": {"string": "NVIDIA H100 80GB HBM3"},
                        },
                        "capacity": {"memory": {"value": "80Gi"}},
                    },
                }
                for i in range(8)
            ]
            spec = {
                "driver": DRIVER,
                "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            }
            objs.append(
                {
                    "apiVersion": DRA,
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"{name}-gpu"},
                    "spec": {**spec, "devices": devices},
                }
            )
        elif obj["kind"] == "Pod":
            meta, spec = obj["metadata"], obj["spec"]
            spec["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": "4Gi"}}
            spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
            claim = f"{meta['name']}-gpu"
            obj["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim}]
            objs.append(
                {
                    "apiVersion": DRA,
                    "kind": "ResourceClaim",
                    "metadata": {
                        "name": claim,
                        "namespace": meta["namespace"],
                        "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "name": meta["name"],
                                "uid": meta["uid"],
                                "controller": True,
                            }
                        ],
                    },
                    "spec": template_spec,
                }
            )
    objs.append(
        {
            "apiVersion": DRA,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "one-gpu", "namespace": "bench"},
            "spec": {"spec": template_spec},
        }
    )
    return objs


def run_case(name: str) -> dict[str, float]:
    import workloads

    objects = _dra_cluster() if name == "dra" else workloads.cluster(NODES, QUEUES, GANGS)
    cycle = time_cycle(objects, "allocate")
    return allocate_figures(cycle, sum(GANGS))


def main() -> None:
    results = run_cases(__file__, __doc__, CASES, run_case)
    if results is None:
        return
    base = results.get("nvidia.com/gpu")
    columns = (
        *ALLOCATE_COLUMNS,
        "cycle CPU s",
        "allocate / gpu",
        "CPU / gpu",
        "peak GiB",
    )
    rows = {}
    for name, r in results.items():
        ratio = f"{r['allocate_s'] / base['allocate_s']:.2f}x (≤ {TARGET:g}x)" if base else "-"
        cpu_ratio = f"{r['cycle_cpu_s'] / base['cycle_cpu_s']:.2f}x" if base else "-"
        rows[name] = (
            *allocate_cells(r),
            f"{r['cycle_cpu_s']:.2f}",
            ratio,
            cpu_ratio,
            f"{r['peak_gib']:.2f}",
        )
    title = "One allocate cycle: DRA claims against nvidia.com/gpu, in-memory store"
    print_table(title, columns, rows, CASES, width=160)


if __name__ == "__main__":
    main()
