"""The fragmentation measure of FGD (Weng et al., "Beware of Fragmentation", USENIX ATC '23), on plain arrays.

A node's GPUs are given as their free fractions `f_1 … f_G` in [0, 1] (1: an unused device; 0: a device fully
allocated, or a slot the node does not have: both offer nothing, so nodes with fewer GPUs are padded with 0).
A task shape `m` asks for `c_m` CPU, `r_m` memory and `k_m` devices of `d_m` GPU each (`d = 1` whole devices,
`0 < d < 1` a shared portion of each, `k = d = 0` no GPU), on the nodes it is eligible for (labels).

- `m` fits node `n` when `c_m` and `r_m` fit the node's free CPU and memory, `n` is eligible, and at least
  `k_m` of its GPUs have `f_i >= d_m`.
- The fragmentation of `n` for `m`, `F_n(m)`, is the free GPU capacity on `n` that `m` cannot use:
  `sum_i f_i` (all of it) when `m` does not fit `n`; else `sum_{i: f_i < d_m} f_i` (the GPUs too full for
  one device of `m`). A shape without GPUs that fits leaves no fragment; a node without free GPU has none.
- The expected fragmentation of `n` for a workload `M` whose shapes have popularity `p_m` (summing to 1) is
  `F_n(M) = sum_m p_m F_n(m)`, in GPUs; the cluster's is `sum_n F_n(M)`.

FGD places a task where `F_n(M)` grows least. All functions take any leading batch shape (nodes, or nodes ×
candidate placements), so a task is scored over every node in a few vector operations. Each value depends on its
own row alone, bit for bit: the weighted sum over the shapes is taken in a fixed pairwise order (`weigh`), not by
BLAS, whose rounding depends on a row's place in the batch. So a node's value can be kept and reused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kai_scheduler.cluster import tolerance

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]

EPS = tolerance.RESOURCE  # free fractions are differences of sums of parsed quantities


@dataclass(frozen=True, slots=True)
class Shapes:
    """A workload's task shapes and their popularity (weights sum to 1); arrays of length M."""

    cpu: Floats  # millicores
    memory: Floats  # bytes
    devices: Floats  # k: devices asked for (0: no GPU)
    per_device: Floats  # d: GPU per device (1 whole, (0, 1) shared, 0 none)
    weight: Floats
    levels: Floats  # the distinct `per_device` values
    level_of: npt.NDArray[np.intp]  # per shape: its index into `levels`

    @classmethod
    def of(cls, cpu: object, memory: object, devices: object, per_device: object, weight: object) -> Shapes:
        """Shapes from parallel sequences; weights are normalised (all zero: every shape alike)."""
        arrays = [np.asarray(v, dtype=np.float64).reshape(-1) for v in (cpu, memory, devices, per_device, weight)]
        if len({a.size for a in arrays}) != 1:
            raise ValueError("shape arrays differ in length")
        w = normalized(arrays[4])
        per = np.where(arrays[2] > 0, arrays[3], 0.0)
        levels, level_of = np.unique(per, return_inverse=True)
        return cls(arrays[0], arrays[1], arrays[2], per, w, levels, level_of.reshape(-1))

    def __len__(self) -> int:
        return int(self.weight.size)


def normalized(weight: object) -> Floats:
    """Weights scaled to sum to 1 (all zero: every one alike); ValueError for a negative or infinite one."""
    w = np.asarray(weight, dtype=np.float64).reshape(-1)
    if (w < 0).any() or not np.isfinite(w).all():
        raise ValueError("shape weights must be finite and not negative")
    total = w.sum()
    out: Floats = w / total if total > 0 else np.full(w.size, 1.0 / max(w.size, 1))
    return out


def per_shape(
    shapes: Shapes, gpu_free: Floats, cpu_free: Floats, memory_free: Floats, eligible: Bools | None = None
) -> Floats:
    """`F_n(m)` in GPUs: (..., M)."""
    # Per level d: the GPUs below d are the first `below` of the row sorted ascending, and what they hold is
    # that prefix's sum (a cumulative sum read at `below`), without a (..., D, G) array of floats.
    ascending = np.sort(gpu_free, axis=-1)
    prefix = np.zeros((*gpu_free.shape[:-1], gpu_free.shape[-1] + 1))
    np.cumsum(ascending, axis=-1, out=prefix[..., 1:])
    below = (ascending[..., None, :] < shapes.levels[:, None] - EPS).sum(axis=-1)  # (..., D)
    stranded = np.take_along_axis(prefix, below, axis=-1)  # (..., D)
    counts = gpu_free.shape[-1] - below  # GPUs with f >= d
    ok: Bools = counts[..., shapes.level_of] >= shapes.devices
    ok &= cpu_free[..., None] >= shapes.cpu - EPS
    ok &= memory_free[..., None] >= shapes.memory - EPS
    if eligible is not None:
        ok &= eligible
    total = gpu_free.sum(axis=-1)
    out: Floats = np.where(ok, stranded[..., shapes.level_of], total[..., None])
    return out


def expected(
    shapes: Shapes, gpu_free: Floats, cpu_free: Floats, memory_free: Floats, eligible: Bools | None = None
) -> Floats:
    """`F_n(M)` in GPUs: one value per node (the leading shape of `cpu_free`)."""
    if len(shapes) == 0:
        return np.zeros(np.shape(cpu_free))
    return weigh(per_shape(shapes, gpu_free, cpu_free, memory_free, eligible), shapes.weight)


def weigh(values: Floats, weight: Floats) -> Floats:
    """`sum_m weight_m * values[..., m]`, summed in one fixed pairwise order (the shape axis padded with zeros
    to a power of two, then halved): each element-wise step is exact IEEE arithmetic, so a row's sum is the same
    bit for bit whatever other rows are computed with it and however the array is laid out."""
    terms = values * weight
    size = terms.shape[-1]
    if size == 0:
        return np.zeros(terms.shape[:-1])
    width = 1 << (size - 1).bit_length()
    if width != size:
        terms = np.concatenate([terms, np.zeros((*terms.shape[:-1], width - size))], axis=-1)
    while width > 1:
        width //= 2
        terms = terms[..., :width] + terms[..., width:]
    out: Floats = terms[..., 0]
    return out
