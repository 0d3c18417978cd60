"""The install set: Namespace, CRDs, RBAC, the components, webhooks, default queues and priority classes.

One model serves both ways of installing: `model.manifests(values)` gives plain objects for
`kai manifests | kubectl apply -f -`, and `chart.files()` gives the Helm chart built from the same code with Helm
expressions in place of values (`values.VALUES_YAML` is both the chart's values.yaml and the defaults).
"""

from __future__ import annotations

from kai_scheduler.install.chart import files as chart_files
from kai_scheduler.install.chart import write as write_chart
from kai_scheduler.install.model import manifests
from kai_scheduler.install.render import stream
from kai_scheduler.install.values import ValuesError, defaults, resolve

__all__ = ["ValuesError", "chart_files", "defaults", "manifests", "resolve", "stream", "write_chart"]
