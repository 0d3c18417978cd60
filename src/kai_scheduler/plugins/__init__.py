"""Policy layer: one module per plugin, named as in the scheduler ConfigMap.

`registry` maps each ConfigMap name to its builder; `base.PluginBase` is what every plugin shares (building
from no arguments, nothing to release at close), so a plugin module holds only its own rules.
"""
