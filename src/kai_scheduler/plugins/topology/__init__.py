"""The topology plugin (§7.3): domain trees, domain selection for SubsetNodes, preferred-level scores."""
