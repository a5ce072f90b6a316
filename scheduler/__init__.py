"""spread-scheduler: a secondary Kubernetes scheduler with kube-scheduler's decisions, explained."""

__version__ = "0.1.0"
__all__ = ["__version__"]
