"""The controllers beside the scheduling loop: deletion costs, rebalancing, and the workload marks both run on."""
