"""Serving an ASGI app with uvicorn on a socket bound before the server starts.

Binding first lets ``port=0`` take a free port with no race (picking a free port and binding it
later lets another process take it in between), and the real address is announced only once the
server accepts connections, as ``listening on http://HOST:PORT``: a line :func:`announced_url`
finds in a log. ``rlhub serve``, ``rlhub policy serve`` and the scripted judge all start this way.
"""

from __future__ import annotations

import gc
import re
import socket
from collections.abc import Callable
from typing import Any

#: Container allocations (net) between two collections of the youngest generation, once a server
#: has started (the interpreter's default is 700).
YOUNG_COLLECTION_EVERY = 10_000
ANNOUNCE = re.compile(r"listening on (http://(?:\[[0-9a-fA-F:.]+\]|[^\s/:]+):\d+)")
_HELD: list[socket.socket] = []  # the sockets that keep refused_port()'s ports taken


def bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)``; port 0 takes a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


def refused_port(host: str = "127.0.0.1") -> int:
    """A port where connections are refused for as long as this process lives: it is bound and
    never listened on, so no server (ours or another process's) can take it meanwhile."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.bind((host, 0))
    _HELD.append(sock)
    return int(sock.getsockname()[1])


def url_of(sock: socket.socket) -> str:
    """``http://HOST:PORT`` of a bound socket."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def announced_url(text: str) -> str | None:
    """The last ``http://HOST:PORT`` announced as listening in ``text``, or None."""
    found = ANNOUNCE.findall(text)
    return found[-1] if found else None


def server(app: Any, sock: socket.socket, ready: Callable[[str], None] | None = None,
           **options: Any) -> Any:
    """A uvicorn server for ``app`` on ``sock`` whose ``ready(url)`` runs once it listens.

    Run it with ``server.run(sockets=[sock])``, in this thread or another.
    """
    import uvicorn

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and ready is not None:
                ready(url_of(sock))

    return Announcing(uvicorn.Config(app, **options))


def serve(app: Any, *, host: str, port: int, ready: Callable[[str], None] | None = None,
          **options: Any) -> bool:
    """Serve ``app`` on ``host:port`` (0: any free port) until interrupted; False when it never
    started (its lifespan failed: uvicorn has logged why)."""
    sock = bind(host, port)
    instance = server(app, sock, ready, **options)
    try:
        instance.run(sockets=[sock])
    except SystemExit:  # uvicorn's way of giving up on a failed start-up
        if instance.started:
            raise
    return bool(instance.started)


def settle_heap() -> None:
    """Once a server has started: freeze what start-up built (modules, plugins, manifests, the
    pool) out of the collector's sight, and collect the youngest generation less often.

    A request allocates about a hundred containers, and the hundreds of requests a reward server
    holds in flight keep thousands of them alive, which the default threshold scanned again and
    again: about 0.1 ms of CPU per request, a tenth of what ``rlhub serve`` spends on one
    (``bench/server.py``). Garbage cycles wait a little longer to be freed, nothing else changes.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, *gc.get_threshold()[1:])
