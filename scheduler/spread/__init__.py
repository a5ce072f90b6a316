"""Spread after placement (pure): what keeps a workload's spread true once its pods are placed."""
