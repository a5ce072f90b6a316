"""The size of asyncio's per-connection TLS read buffer, set once for the scheduler process."""

from __future__ import annotations

import asyncio.sslproto

__all__ = ["TLS_READ_BUFFER", "use_small_tls_read_buffers"]

# asyncio reads each TLS connection into a zero-filled buffer of ``SSLProtocol.max_size`` bytes (256 KiB),
# allocated when the connection opens and kept for its life. TLS records are at most 16 KiB, and a
# read takes whatever the socket holds, up to this size: a smaller buffer means more reads only for
# a response larger than it (a page of a LIST), never a different result.
TLS_READ_BUFFER = 64 * 1024


def use_small_tls_read_buffers(size: int = TLS_READ_BUFFER) -> None:
    """Make every TLS connection opened from now on read into ``size`` bytes instead of 256 KiB.

    Kept for a measured reason: the process holds a watch per resource kind over HTTP/1.1 and up to
    ``WRITE_CONNECTIONS`` writes, each connection with its own buffer, and its peak RSS end to end
    is lower by about their difference with this than without (docs/benchmarks.md, "Why the I/O
    layer is shaped as it is"). kube-scheduler multiplexes everything over one HTTP/2 connection.

    Process-wide because asyncio takes the size from this class attribute in ``SSLProtocol``'s
    constructor, with no per-connection parameter; every TLS connection of this process is its own
    to the API server (watches, lists, writes, delegated auth), an extender or its secure port, so it
    is in effect scoped to ours. The unit tests fail if a Python release stops reading it.
    """
    asyncio.sslproto.SSLProtocol.max_size = size
