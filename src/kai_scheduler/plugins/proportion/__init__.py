"""proportion: queue fair shares, queue order and capacity policy (KAI `plugins/proportion/`, BEHAVIOR.md §5).

Public API, by module (imported as modules, so that the pure arithmetic loads without the framework):
- `plugin`: `Proportion` (ConfigMap name `proportion`; `Proportion.from_args`), `capacity_request`.
- `division`: `ShareInput`, `divide` (hierarchical fair shares), `allocatable_share`.
- `queue_order`: `QueueState`, `compare` (queue order rules 1-8, with a victim mode), `dominant_share`.
- `capacity`: `over_limit`, `non_preemptible_over_quota`.
"""
