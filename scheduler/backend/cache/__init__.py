"""The cache: nodes, pods, assumed pods and incremental counts (upstream ``backend/cache``). No I/O."""
