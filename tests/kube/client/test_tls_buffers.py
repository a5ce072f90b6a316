"""The TLS read buffer every connection of the scheduler keeps: 64 KiB, not asyncio's 256 KiB."""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import gc
import ssl
import warnings

import pytest

from scheduler.config.parse import load_config
from scheduler.kube.app import run_scheduler
from scheduler.kube.client.tls_buffers import TLS_READ_BUFFER, use_small_tls_read_buffers

STDLIB_DEFAULT = 256 * 1024


def _buffer_of_a_new_connection() -> int:
    """The size of the buffer a TLS connection opened now reads into (what asyncio allocates for it)."""

    async def main() -> int:
        loop = asyncio.get_running_loop()
        protocol = asyncio.sslproto.SSLProtocol(
            loop, asyncio.Protocol(), ssl.create_default_context(), None, call_connection_made=False
        )
        size = len(protocol.get_buffer(-1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)  # never connected, so never closed
            del protocol
            gc.collect()
        return size

    return asyncio.run(main())


@pytest.fixture(autouse=True)
def _stdlib_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(asyncio.sslproto.SSLProtocol, "max_size", STDLIB_DEFAULT)


def test_a_new_tls_connection_reads_into_64_kib_once_the_scheduler_chose_it() -> None:
    assert _buffer_of_a_new_connection() == STDLIB_DEFAULT  # what the process would keep per connection
    use_small_tls_read_buffers()
    assert _buffer_of_a_new_connection() == TLS_READ_BUFFER == 64 * 1024


def test_run_chooses_the_small_buffer_before_it_opens_any_connection() -> None:
    """Even a run that stops at a missing kubeconfig has set it: it comes before the client is made."""
    code = asyncio.run(run_scheduler(load_config(None), kubeconfig="/nonexistent/kubeconfig"))
    assert code == 1
    assert asyncio.sslproto.SSLProtocol.max_size == TLS_READ_BUFFER
