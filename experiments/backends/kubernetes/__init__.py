"""The kubernetes backend: cells as Flux Operator MiniClusters on a cluster."""
