"""The large-file half of the Hub emulator: which files are LFS, and the storage that holds them.

The Hub stores a file through Git LFS when the repo's ``.gitattributes`` marks it
(``filter=lfs``), when it is binary, or when it is 10 MiB or more; the git tree then holds a
pointer, and the bytes live in object storage on another host. An upload asks the LFS batch API
for instructions (basic transfer: one signed ``PUT`` per object to the storage host, then a
``verify`` call back to the Hub, which checks the sha256 and size), and the commit names the
object with an ``lfsFile`` line. A download of an LFS file is a ``302`` from ``/resolve`` to a
signed storage URL, with the object's sha256 and size in ``X-Linked-Etag`` and
``X-Linked-Size``.

:class:`Storage` is that object store: a FastAPI app served on its own port, so it is another
origin, as a CDN is (huggingface_hub then drops the ``Authorization`` header and does not follow
the redirect on ``HEAD``). Signed URLs carry an HMAC of the method and object id.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import secrets
import threading
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

LARGE = 10 * 1024 * 1024  # the Hub's limit for a regular (non-LFS) file
GITATTRIBUTES = b"".join(  # a subset of the default .gitattributes of a new dataset repo
    f"{pattern} filter=lfs diff=lfs merge=lfs -text\n".encode()
    for pattern in ("*.7z", "*.arrow", "*.bin", "*.gz", "*.npy", "*.parquet", "*.pickle",
                    "*.pkl", "*.pt", "*.safetensors", "*.tar", "*.zip", "*.zst")
)


def pointer(oid: str, size: int) -> bytes:
    """The Git LFS pointer file the git tree holds for an LFS object."""
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n".encode()


def is_binary(sample: bytes) -> bool:
    """The Hub's test on a file's first 512 bytes: a NUL byte, or text that is not UTF-8."""
    if b"\x00" in sample:
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(sample) - 3  # a character cut at the sample's end is fine
    return False


def lfs_patterns(gitattributes: bytes | None) -> list[str]:
    """The path patterns a ``.gitattributes`` file sends to LFS."""
    patterns = []
    for line in (gitattributes or b"").decode(errors="replace").splitlines():
        parts = line.split()
        if len(parts) > 1 and "filter=lfs" in parts[1:]:
            patterns.append(parts[0])
    return patterns


def wants_lfs(path: str, size: int, sample: bytes, gitattributes: bytes | None) -> bool:
    """Whether the Hub stores this file through LFS (see the module docstring)."""
    name = path.rsplit("/", 1)[-1]
    marked = any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(path, p)
                 for p in lfs_patterns(gitattributes))
    return marked or size >= LARGE or is_binary(sample)


def recording_app(requests: list[tuple[str, str]]) -> FastAPI:
    """A FastAPI app that appends ``(method, path)`` of every request it serves to ``requests``."""
    app = FastAPI()

    @app.middleware("http")
    async def record(request: Request, call_next: Any) -> Any:
        requests.append((request.method, request.url.path))
        return await call_next(request)

    return app


class Storage:
    """The object store behind LFS: pending uploads and verified objects, by ``repo/sha256``
    (an object is scoped to the repo it was uploaded to, as a git-lfs server scopes it)."""

    def __init__(self) -> None:
        self.key = secrets.token_bytes(16)
        self.pending: dict[str, bytes] = {}
        self.objects: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.url = ""  # set by the emulator once its port is known
        self.lock = threading.Lock()

    def signed(self, method: str, name: str) -> str:
        """A URL on the storage host that allows ``method`` on the object ``name``
        (``repo/sha256``)."""
        sig = hmac.new(self.key, f"{method}:{name}".encode(), hashlib.sha256).hexdigest()
        return f"{self.url}/objects/{name}?sig={sig}"

    def _allowed(self, method: str, name: str, sig: str) -> bool:
        want = hmac.new(self.key, f"{method}:{name}".encode(), hashlib.sha256).hexdigest()
        return hmac.compare_digest(want, sig)

    def verify(self, name: str, size: int) -> str | None:
        """Move a pending upload into the store; the problem when it does not match."""
        oid = name.rsplit("/", 1)[-1]
        with self.lock:
            data = self.pending.get(name)
            if data is None:
                return f"object {oid} was not uploaded"
            if len(data) != size or hashlib.sha256(data).hexdigest() != oid:
                return f"object {oid}: the uploaded bytes do not match its sha256 and size"
            self.objects[name] = self.pending.pop(name)
        return None

    def app(self) -> FastAPI:
        app = recording_app(self.requests)

        @app.put("/objects/{name:path}")
        async def put(name: str, request: Request) -> Response:
            if not self._allowed("PUT", name, request.query_params.get("sig", "")):
                return Response("SignatureDoesNotMatch", status_code=403)
            data = await request.body()
            with self.lock:
                self.pending[name] = data
            return Response(status_code=200, headers={"ETag": f'"{hashlib.md5(data).hexdigest()}"'})

        @app.get("/objects/{name:path}")
        async def get(name: str, request: Request) -> Response:
            if not self._allowed("GET", name, request.query_params.get("sig", "")):
                return Response("SignatureDoesNotMatch", status_code=403)
            data = self.objects.get(name)
            if data is None:
                return JSONResponse({"error": "NoSuchKey"}, status_code=404)
            return Response(data, media_type="application/octet-stream")

        return app
