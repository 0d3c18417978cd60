"""`kai explain`: why a job is where it is, as the scheduler sees it (a job pending, placeable, running).

`build.explain` reads a cluster through any `ClusterStore` (the API server's, read only, or an embedded one
loaded from a scenario), opens a scheduling session per node pool and asks it, without committing anything:
the queue shares and order, what each node lacks, dry runs of allocate and of the victim actions, and what
could take a running job's pods. The answer is a `model.Explanation` of plain values; `text` renders it for a
person, `model.Explanation.to_json` for a program.
"""

from kai_scheduler.explain.build import Limits, explain
from kai_scheduler.explain.lookup import ClusterError, JobNotFound, JobRef
from kai_scheduler.explain.model import Explanation

__all__ = ["ClusterError", "Explanation", "JobNotFound", "JobRef", "Limits", "explain"]
