"""A small cluster with every thing the dashboard shows: a three-level queue tree, nodes in two
racks, a shared GPU, a queue over its quota, a pending gang with a reason, and a node whose idle GPUs fit no
pending job (its taint keeps the pending work out)."""

from __future__ import annotations

CLUSTER = """
name: dashboard test cluster
topologies:
- name: dc
  levels: [{nodeLabel: topology/rack}, {nodeLabel: kubernetes.io/hostname}]
nodes:
- {name: a, count: 2, gpus: 4, gpuMemory: 40000, cpu: "32", memory: 256Gi,
   labels: {topology/rack: r1}}
- {name: b, count: 1, gpus: 4, gpuMemory: 40000, cpu: "32", memory: 256Gi,
   labels: {topology/rack: r2},
   taints: [{key: dedicated, value: infer, effect: NoSchedule}]}
queues:
- name: org
  resources: {gpu: {quota: 8, overQuotaWeight: 1, limit: -1}}
- {name: research, parent: org, resources: {gpu: {quota: 6, overQuotaWeight: 1, limit: -1}}}
- {name: vision, parent: research, resources: {gpu: {quota: 2, overQuotaWeight: 1, limit: 6}}}
- {name: nlp, parent: research, resources: {gpu: {quota: 4, overQuotaWeight: 1, limit: -1}}}
- {name: serving, parent: org, resources: {gpu: {quota: 2, overQuotaWeight: 1, limit: -1}}}
jobs:
- name: big-vision
  queue: vision
  createdAt: 30
  tasks:
  - {name: big-vision-0, status: Running, node: a-0, gpus: 4}
- name: small-vision
  queue: vision
  createdAt: 20
  tasks:
  - {name: small-vision-0, status: Running, node: a-1, gpus: 0.5, gpuGroups: [g1]}
- name: nlp-gang
  queue: nlp
  createdAt: 10
  replicas: 2
  template: {gpus: 4}
- name: nlp-one
  queue: nlp
  createdAt: 5
  tasks:
  - {name: nlp-one-0, gpus: 2}
"""
