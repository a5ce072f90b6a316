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

    The scheduler holds one watch per resource kind open over HTTP/1.1, as kopf does, and up to
    ``WRITE_CONNECTIONS`` for writes: when they were 33 in all, their buffers at 256 KiB each were
    8 MiB, 5.5 MB of the peak RSS at 500 nodes (147 vs 152.8 MB, two runs each). kube-scheduler multiplexes
    everything over one HTTP/2 connection. ``max_size`` is a plain class attribute of the stdlib's
    protocol; the unit tests fail if a Python release stops reading it.
    """
    asyncio.sslproto.SSLProtocol.max_size = size
