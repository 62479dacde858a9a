"""Connection limits of ``rlhub serve``, below the app: a cap per client address and a deadline
for every request's headers.

uvicorn bounds neither: a connection that never sends a byte, or that sends its headers one byte
a minute, stays open for as long as its client likes (uvicorn's keep-alive timer starts only after
a first response, and stops at the first byte of the next request). A few thousand of them take
every file descriptor the process has. So ``rlhub serve`` runs uvicorn with its own HTTP protocol
class (:func:`limited_protocol`, a subclass of the one uvicorn picks) that:

* refuses a connection from an address that already holds ``per_client`` open ones (HTTP and
  WebSocket alike): it answers ``503`` with a JSON error naming the limit, and closes;
* closes a connection whose next request's headers have not all arrived ``header_timeout_s``
  after it opened or after its last response.

Each connection holds a file descriptor, so the server first raises its own limit on open files
(:func:`raise_open_files`: the soft limit toward the hard one), since the usual default soft
limit (1024) would stop it near a thousand connections whatever the caps say.

The body of a request is read under its own deadline in the app (:func:`.guard.read_raw`), and a
WebSocket message under the session's idle deadline and uvicorn's ``ws_max_size``
(:mod:`rlhub.integrations.exports.openenv_server`), so no stage of a request waits on its client without a
bound. Everything here runs on the server's event loop.
"""

from __future__ import annotations

import asyncio
import json
import resource
from typing import Any

#: Open files the server asks for (at most the hard limit): room for the per-address cap several
#: times over, plus the pool's own pipes and sockets.
OPEN_FILES = 65536
#: Sweep every address's set of connections once per this many new connections, so addresses
#: whose last connection was upgraded to a WebSocket (its close is not seen here) are forgotten.
SWEEP_EVERY = 1024


def peer_host(transport: Any) -> str:
    """The client address of a transport (``"local"`` for a Unix socket or an unknown peer)."""
    peer = transport.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, (tuple, list)) and peer else "local"


class ConnectionLimits:
    """Open connections per client address, capped at ``per_client``; see the module docstring."""

    def __init__(self, per_client: int = 4096, header_timeout_s: float = 10.0):
        self.per_client = per_client
        self.header_timeout_s = header_timeout_s
        self.open: dict[str, set[Any]] = {}
        self.refused = 0
        self.timed_out = 0
        self._since_sweep = 0

    def admit(self, transport: Any) -> bool:
        """Count ``transport`` against its address; False (not counted) when the address is full.

        The address's closed connections (an upgraded WebSocket's close is not seen here) are
        forgotten when they would fill it, so admitting costs nothing per open connection."""
        self._sweep_sometimes()
        host = peer_host(transport)
        live = self.open.setdefault(host, set())
        if len(live) >= self.per_client:
            live.difference_update([t for t in live if t.is_closing()])
            if len(live) >= self.per_client:
                self.refused += 1
                return False
        live.add(transport)
        return True

    def release(self, transport: Any) -> None:
        host = peer_host(transport)
        live = self.open.get(host)
        if live is not None:
            live.discard(transport)
            if not live:
                del self.open[host]

    def _sweep_sometimes(self) -> None:
        self._since_sweep += 1
        if self._since_sweep < SWEEP_EVERY:
            return
        self._since_sweep = 0
        for host in list(self.open):
            live = {t for t in self.open[host] if not t.is_closing()}
            if live:
                self.open[host] = live
            else:
                del self.open[host]

    def refusal(self, transport: Any) -> bytes:
        """The 503 written to a refused connection before it is closed."""
        body = json.dumps({"error": f"expected at most {self.per_client} open connections from "
                                    f"{peer_host(transport)}, found that many already; reuse "
                                    "connections (keep-alive) or raise "
                                    "--max-connections-per-client"}).encode()
        head = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
                b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(body))
        return head + body

    def state(self) -> dict[str, int]:
        return {"open": sum(len(s) for s in self.open.values()), "clients": len(self.open),
                "per_client": self.per_client, "refused": self.refused,
                "header_timeouts": self.timed_out,
                "open_files": resource.getrlimit(resource.RLIMIT_NOFILE)[0]}


def raise_open_files(wanted: int = OPEN_FILES) -> int:
    """Raise this process's soft limit on open files to ``wanted`` (never above the hard limit,
    never lowered); the soft limit in effect."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


def limited_protocol(limits: ConnectionLimits, base: type[asyncio.Protocol] | None = None
                     ) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class (``base``, default the one uvicorn would pick) with
    ``limits`` applied; pass it as uvicorn's ``http=`` option."""
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        base = AutoHTTPProtocol
    parent: Any = base

    class Limited(parent):  # type: ignore[misc, valid-type]
        """uvicorn's protocol, refusing over-cap addresses and closing late headers."""

        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if not limits.admit(transport):
                transport.write(limits.refusal(transport))
                transport.close()
                return
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            limits.release(self.transport)
            if self._deadline is not None:
                self._deadline.cancel()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def _arm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(limits.header_timeout_s, self._overdue,
                                                  self.cycle)

        def _overdue(self, cycle: Any) -> None:
            """No new request began since the timer was armed: close the connection."""
            idle = cycle is None or cycle.response_complete
            if self.cycle is cycle and idle and not self.transport.is_closing() \
                    and self.transport.get_protocol() is self:
                limits.timed_out += 1
                self.transport.close()

    Limited.__name__ = Limited.__qualname__ = f"Limited{base.__name__}"
    return Limited
