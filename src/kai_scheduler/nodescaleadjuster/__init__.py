"""The node-scale-adjuster (KAI `nodescaleadjuster`, BEHAVIOR.md §6): whole-GPU placeholder "scaling pods" for
unschedulable fractional-GPU pods, so that a cluster autoscaler sees their demand (docs/node-scale-adjuster.md)."""
