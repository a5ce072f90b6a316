"""The local control plane (cluster.py), its helpers, the demo and the e2e tests; run from the repository root."""
