"""The errors upstream's ``Allocate`` returns, told apart as the scheduler tells them apart. Pure."""

from __future__ import annotations

__all__ = ["AllocationError", "FailedOnNodeError"]


class AllocationError(Exception):
    """An error ``Allocate`` returns: the claims cannot be allocated as they stand (upstream's text)."""


class FailedOnNodeError(AllocationError):
    """``ErrFailedAllocationOnNode``: this node failed; allocation on other nodes may proceed."""
