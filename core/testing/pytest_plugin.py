"""pytest plugin shipped with rlhub (entry point ``pytest11``): fixtures for plugin authors.

* ``rlhub_hub(plugins=[...], domain_files=[...])`` builds an isolated registry (no autoloaded
  plugins unless ``autoload=True``) and installs it as the process registry for the test.
* ``rlhub_sandbox(handler)`` installs a sandbox double whose ``run`` calls ``handler(request)``
  and returns its ExecResult, as the default backend for the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest


@pytest.fixture
def rlhub_hub() -> Iterator[Callable[..., Any]]:
    from rlhub import plugins

    saved = plugins._default

    def make(*, plugins_: Sequence[object] = (), domain_files: Sequence[Any] = (),
             autoload: bool = False, block: Sequence[str] = (), **kw: Any) -> Any:
        reg = plugins.Registry(plugins=kw.pop("plugins", plugins_), domain_files=domain_files,
                               autoload=autoload, block=block)
        plugins._default = reg
        return reg

    yield make
    plugins._default = saved


class SandboxDouble:
    """A sandbox backend that answers with a handler function (httpx MockTransport style)."""

    name = "double"

    def __init__(self, handler: Callable[[Any], Any]):
        self.handler = handler
        self.requests: list[Any] = []

    def run(self, request: Any) -> Any:
        self.requests.append(request)
        return self.handler(request)

    async def run_batch(self, requests: Sequence[Any]) -> list[Any]:
        return [await asyncio.to_thread(self.run, r) for r in requests]

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "active": [], "missing": ["everything: this is a test double"]}

    def close(self) -> None:
        pass


@pytest.fixture
def rlhub_sandbox(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[Any], Any]], Any]:
    from rlhub import sandbox

    def install(handler: Callable[[Any], Any]) -> SandboxDouble:
        double = SandboxDouble(handler)
        monkeypatch.setitem(sandbox._backends, "double", double)
        monkeypatch.setenv("RLHUB_SANDBOX", "double")
        return double

    return install
