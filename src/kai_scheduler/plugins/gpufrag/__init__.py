"""gpufrag: fragmentation-aware GPU placement (FGD); `measure` is the pure measure, `plugin` the plugin."""
