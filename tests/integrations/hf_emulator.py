"""A local Hugging Face Hub for tests: the HTTP calls huggingface_hub makes for rlhub, in memory.

Start it with ``with EmulatedHub() as hub:`` and point huggingface_hub at ``hub.url`` (set
``HF_ENDPOINT``, or pass ``endpoint=``). It serves FastAPI on 127.0.0.1 with a random port and
keeps dataset repos as real commits (content-addressed trees with parents, ``main`` plus tags);
LFS objects live in a second server on another port (:mod:`hf_lfs`), as the Hub's live on a CDN.

Emulated, with the request and response shapes of huggingface_hub 2.3 (hf_api.py, _commit_api.py,
lfs.py, file_download.py, _snapshot_download.py):

==========================================================  ======================================
``POST /api/repos/create``                                  ``create_repo``; 409 when it exists. A
                                                            new repo has one commit holding the
                                                            default .gitattributes
``POST /api/validate-yaml``                                 README front matter check of
                                                            ``create_commit``; 400 with ``errors``
``POST /api/datasets/{repo}/preupload/{rev}``               upload modes: ``"lfs"`` for files the
                                                            .gitattributes marks, binary files and
                                                            files of 10 MiB or more, else
                                                            ``"regular"``; with the oid of files
                                                            already at ``rev`` (sha256 for LFS
                                                            files), so unchanged files are skipped
``POST /datasets/{repo}.git/info/lfs/objects/batch``        the LFS batch API, basic transfer: a
                                                            signed storage ``PUT`` URL and a
                                                            ``verify`` URL per object not yet
                                                            stored, nothing for stored ones
``POST /datasets/{repo}.git/info/lfs/objects/verify``       checks an uploaded object's sha256
                                                            and size, then stores it
``PUT``/``GET {storage}/objects/{repo}/{sha256}?sig=...``   the object store (another origin)
``POST /api/datasets/{repo}/commit/{rev}``                  ``create_commit``: ndjson ``header``,
                                                            ``file`` (base64; refused when binary
                                                            or 10 MiB or more, as on the Hub),
                                                            ``lfsFile`` (a verified object),
                                                            ``deletedFile``, ``deletedFolder``;
                                                            only branches can be committed to
``POST /api/datasets/{repo}/tag/{rev}``                     ``create_tag``; 409 when it exists
``DELETE /api/datasets/{repo}/tag/{tag}``                   ``delete_tag`` (how a tag is moved)
``GET /api/datasets/{repo}/refs``                           ``list_repo_refs``: branches and tags
``GET /api/datasets/{repo}`` and ``.../revision/{rev}``     ``repo_info``: ``sha``, ``siblings``
                                                            (with ``size``/``blobId``/``lfs`` when
                                                            ``blobs=true``), ``cardData``, ``tags``
``GET /api/datasets/{repo}/tree/{rev}[/{path}]``            ``list_repo_tree`` (``recursive``,
                                                            ``lfs``), one page
``HEAD``/``GET /datasets/{repo}/resolve/{rev}/{path}``      file metadata (``X-Repo-Commit``,
                                                            ``ETag`` = git blob oid,
                                                            ``Content-Length``) and content; for
                                                            an LFS file a ``302`` to a signed
                                                            storage URL with ``X-Linked-Etag`` (its
                                                            sha256) and ``X-Linked-Size``
==========================================================  ======================================

Errors carry ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``) so
huggingface_hub raises its own typed errors. Writes need an ``Authorization: Bearer`` token
(any value, or exactly ``token`` when given). Not emulated: model and Space repos, Xet storage
(tests set ``HF_HUB_DISABLE_XET``), LFS multipart transfers, pull requests, branches other than
``main``, pagination, token scopes, private or gated repos, and ``Range`` requests.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import yaml
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from hf_lfs import GITATTRIBUTES, LARGE, Storage, is_binary, pointer, recording_app, wants_lfs


def git_blob_oid(data: bytes) -> str:
    """The git oid of a blob, as the Hub reports it for regular files."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Commit:
    """One commit: its full file tree (path -> bytes), parent and message."""

    oid: str
    parent: str | None
    message: str
    files: dict[str, bytes]
    date: str
    lfs: dict[str, str] = field(default_factory=dict)  # LFS paths: the sha256 their pointer names

    def blob_oid(self, path: str) -> str:
        """The git oid of the path's blob: of its pointer when it is an LFS file."""
        data = self.files[path]
        if path in self.lfs:
            return git_blob_oid(pointer(self.lfs[path], len(data)))
        return git_blob_oid(data)

    def lfs_info(self, path: str, oid_key: str) -> dict[str, Any]:
        """``{"lfs": {...}}`` for an LFS file (``oid_key``: ``sha256`` in siblings, ``oid`` in
        trees), else nothing."""
        if path not in self.lfs:
            return {}
        sha, size = self.lfs[path], len(self.files[path])
        return {"lfs": {oid_key: sha, "size": size, "pointerSize": len(pointer(sha, size))}}


@dataclass
class Repo:
    """A dataset repo: commits by oid, the ``main`` branch and tags."""

    repo_id: str
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def resolve(self, revision: str) -> Commit | None:
        oid = self.branches.get(revision) or self.tags.get(revision) or revision
        return self.commits.get(oid)

    def commit(
        self, branch: str, files: dict[str, bytes], message: str, lfs: dict[str, str] | None = None
    ) -> Commit:
        parent = self.branches.get(branch)
        blob = json.dumps(
            {
                "parent": parent,
                "message": message,
                "files": {p: git_blob_oid(d) for p, d in sorted(files.items())},
                "lfs": dict(sorted((lfs or {}).items())),
                "n": len(self.commits),
            }
        ).encode()
        made = Commit(
            hashlib.sha1(blob).hexdigest(), parent, message, files, hub_date(), dict(lfs or {})
        )
        self.commits[made.oid] = made
        self.branches[branch] = made.oid
        return made


def hub_date() -> str:
    """Now, in the Hub's date format (``2024-05-01T12:00:00.000Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def hub_error(status: int, code: str | None, message: str) -> JSONResponse:
    headers = {"X-Error-Message": message}
    if code:
        headers["X-Error-Code"] = code
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class HubState:
    """Every repo of the emulated Hub, behind one lock."""

    def __init__(self, token: str | None = None):
        self.repos: dict[str, Repo] = {}
        self.token = token
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []
        self.storage = Storage()

    def authorised(self, request: Request) -> bool:
        auth = request.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            return False
        return self.token is None or auth[7:].strip() == self.token

    def lookup(
        self, repo_id: str, revision: str | None = None
    ) -> tuple[Repo | None, Commit | None, JSONResponse | None]:
        repo = self.repos.get(repo_id)
        if repo is None:
            return None, None, hub_error(404, "RepoNotFound", f"Repository {repo_id} not found")
        if revision is None:
            return repo, None, None
        commit = repo.resolve(revision)
        if commit is None:
            return repo, None, hub_error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return repo, commit, None


def front_matter(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(metadata, error)`` of a README's YAML front matter."""
    if not text.startswith("---"):
        return {}, None
    end = text.find("\n---", 3)
    if end < 0:
        return None, "front matter is not closed by a '---' line"
    try:
        meta = yaml.safe_load(text[3:end]) or {}
    except yaml.YAMLError as exc:
        return None, f"invalid YAML: {exc}"
    if not isinstance(meta, dict):
        return None, "front matter must be a mapping"
    if "tags" in meta and not (
        isinstance(meta["tags"], list) and all(isinstance(t, str) for t in meta["tags"])
    ):
        return None, "tags must be a list of strings"
    if "license" in meta and not isinstance(meta["license"], str):
        return None, "license must be a string"
    return meta, None


def make_app(state: HubState) -> FastAPI:
    """The FastAPI app serving ``state``; see the module docstring for the routes."""
    app = recording_app(state.requests)

    @app.post("/api/repos/create")
    async def create_repo(request: Request) -> Response:
        if not state.authorised(request):
            return hub_error(401, None, "Invalid credentials in Authorization header")
        body = await request.json()
        if body.get("type") != "dataset":
            return hub_error(
                400, None, f"this emulator serves dataset repos only, got {body.get('type')!r}"
            )
        repo_id = (
            f"{body['organization']}/{body['name']}" if body.get("organization") else body["name"]
        )
        url = f"{str(request.base_url).rstrip('/')}/datasets/{repo_id}"
        with state.lock:
            if repo_id in state.repos:  # the Hub's 409 carries the URL, which exist_ok returns
                return JSONResponse(
                    {"error": "You already created this dataset repo", "url": url}, status_code=409
                )
            repo = state.repos[repo_id] = Repo(repo_id)
            repo.commit("main", {".gitattributes": GITATTRIBUTES}, "initial commit")
        return JSONResponse({"url": url, "name": repo_id, "id": repo_id})

    @app.post("/api/validate-yaml")
    async def validate_yaml(request: Request) -> Response:
        body = await request.json()
        _, error = front_matter(body.get("content", ""))
        if error:
            return JSONResponse({"errors": [{"message": error}], "warnings": []}, status_code=400)
        return JSONResponse({"errors": [], "warnings": []})

    @app.post("/api/datasets/{org}/{name}/preupload/{revision}")
    async def preupload(org: str, name: str, revision: str, request: Request) -> Response:
        if not state.authorised(request):
            return hub_error(401, None, "Invalid credentials in Authorization header")
        _, commit, error = state.lookup(f"{org}/{name}", revision)
        if error:
            return error
        files = (await request.json())["files"]
        attributes = commit.files.get(".gitattributes")
        out = []
        for f in files:
            lfs = wants_lfs(f["path"], f["size"], base64.b64decode(f["sample"]), attributes)
            existing = commit.files.get(f["path"])
            if existing is None:
                oid = None
            elif f["path"] in commit.lfs:
                oid = commit.lfs[f["path"]]  # the sha256: what the client compares for LFS
            else:
                oid = git_blob_oid(existing)
            out.append(
                {
                    "path": f["path"],
                    "uploadMode": "lfs" if lfs else "regular",
                    "shouldIgnore": False,
                    "oid": oid,
                }
            )
        return JSONResponse({"files": out, "commitOid": commit.oid})

    @app.post("/api/datasets/{org}/{name}/commit/{revision}")
    async def commit(org: str, name: str, revision: str, request: Request) -> Response:
        if not state.authorised(request):
            return hub_error(401, None, "Invalid credentials in Authorization header")
        repo_id = f"{org}/{name}"
        lines = [json.loads(line) for line in (await request.body()).splitlines() if line.strip()]
        with state.lock:
            repo, head, error = state.lookup(repo_id, revision)
            if error:
                return error
            if revision not in repo.branches:
                return hub_error(400, None, f"{revision} is not a branch; commit to a branch")
            tree = Tree(dict(head.files), dict(head.lfs))
            message, problem = apply_operations(tree, lines, state.storage, repo_id)
            if problem:
                return hub_error(400, None, problem)
            made = repo.commit(revision, tree.files, message, tree.lfs)
        url = f"{str(request.base_url).rstrip('/')}/datasets/{repo_id}/commit/{made.oid}"
        return JSONResponse(
            {"commitUrl": url, "commitOid": made.oid, "success": True, "pullRequestUrl": None}
        )

    @app.post("/api/datasets/{org}/{name}/tag/{revision}")
    async def create_tag(org: str, name: str, revision: str, request: Request) -> Response:
        if not state.authorised(request):
            return hub_error(401, None, "Invalid credentials in Authorization header")
        tag = (await request.json())["tag"]
        with state.lock:
            repo, target, error = state.lookup(f"{org}/{name}", revision)
            if error:
                return error
            if tag in repo.tags:
                return hub_error(409, None, f"Tag {tag} already exists")
            repo.tags[tag] = target.oid
        return JSONResponse({"name": tag, "ref": f"refs/tags/{tag}", "targetCommit": target.oid})

    @app.delete("/api/datasets/{org}/{name}/tag/{tag}")
    async def delete_tag(org: str, name: str, tag: str, request: Request) -> Response:
        if not state.authorised(request):
            return hub_error(401, None, "Invalid credentials in Authorization header")
        with state.lock:
            repo, _, error = state.lookup(f"{org}/{name}")
            if error:
                return error
            if repo.tags.pop(tag, None) is None:
                return hub_error(404, "RevisionNotFound", f"Invalid rev id: {tag}")
        return Response(status_code=200)

    @app.get("/api/datasets/{org}/{name}/refs")
    async def refs(org: str, name: str) -> Response:
        repo, _, error = state.lookup(f"{org}/{name}")
        if error:
            return error

        def ref(kind: str, n: str, oid: str) -> dict[str, str]:
            return {"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": oid}

        return JSONResponse(
            {
                "branches": [ref("heads", n, o) for n, o in repo.branches.items()],
                "tags": [ref("tags", n, o) for n, o in repo.tags.items()],
                "converts": [],
                "pullRequests": [],
            }
        )

    @app.get("/api/datasets/{org}/{name}/tree/{revision}")
    @app.get("/api/datasets/{org}/{name}/tree/{revision}/{path:path}")
    async def tree(
        org: str, name: str, revision: str, request: Request, path: str = ""
    ) -> Response:
        _, commit, error = state.lookup(f"{org}/{name}", revision)
        if error:
            return error
        recursive = request.query_params.get("recursive", "false").lower() in ("1", "true")
        return JSONResponse(tree_entries(commit, path.strip("/"), recursive))

    @app.get("/api/datasets/{org}/{name}")
    @app.get("/api/datasets/{org}/{name}/revision/{revision}")
    async def repo_info(org: str, name: str, request: Request, revision: str = "main") -> Response:
        repo, commit, error = state.lookup(f"{org}/{name}", revision)
        if error:
            return error
        blobs = request.query_params.get("blobs", "false").lower() in ("1", "true")
        meta, _ = front_matter(commit.files.get("README.md", b"").decode(errors="replace"))
        siblings = [
            {
                "rfilename": p,
                **(
                    {"size": len(d), "blobId": commit.blob_oid(p), **commit.lfs_info(p, "sha256")}
                    if blobs
                    else {}
                ),
            }
            for p, d in sorted(commit.files.items())
        ]
        return JSONResponse(
            {
                "_id": repo.repo_id,
                "id": repo.repo_id,
                "author": org,
                "sha": commit.oid,
                "lastModified": commit.date,
                "createdAt": repo.commits[next(iter(repo.commits))].date,
                "private": False,
                "gated": False,
                "disabled": False,
                "downloads": 0,
                "likes": 0,
                "tags": (meta or {}).get("tags", []),
                "cardData": meta or {},
                "siblings": siblings,
            }
        )

    @app.api_route("/datasets/{org}/{name}/resolve/{revision}/{path:path}", methods=["GET", "HEAD"])
    async def resolve(org: str, name: str, revision: str, path: str, request: Request) -> Response:
        _, commit, error = state.lookup(f"{org}/{name}", revision)
        if error:
            return error
        data = commit.files.get(path)
        if data is None:
            response = hub_error(404, "EntryNotFound", f"{path} does not exist at {revision}")
            response.headers["X-Repo-Commit"] = commit.oid
            return response
        if path in commit.lfs:  # the bytes are in storage, behind a signed redirect
            sha = commit.lfs[path]
            headers = {
                "X-Repo-Commit": commit.oid,
                "ETag": f'"{commit.blob_oid(path)}"',
                "X-Linked-Etag": f'"{sha}"',
                "X-Linked-Size": str(len(data)),
                "Location": state.storage.signed("GET", f"{org}/{name}/{sha}"),
            }
            return Response(status_code=302, headers=headers)
        headers = {
            "X-Repo-Commit": commit.oid,
            "ETag": f'"{git_blob_oid(data)}"',
            "Content-Length": str(len(data)),
            "Content-Type": "application/octet-stream",
            "Accept-Ranges": "none",
        }
        return Response(content=b"" if request.method == "HEAD" else data, headers=headers)

    @app.post("/datasets/{org}/{name}.git/info/lfs/objects/batch")
    async def lfs_batch(org: str, name: str, request: Request) -> Response:
        if not state.authorised(request):
            return hub_error(401, None, "Invalid credentials in Authorization header")
        repo, _, error = state.lookup(f"{org}/{name}")
        if error:
            return error
        body = await request.json()
        if body.get("operation") != "upload" or "basic" not in body.get("transfers", ["basic"]):
            return JSONResponse(
                {"message": "this emulator serves uploads with the basic transfer only"},
                status_code=422,
            )
        base = str(request.base_url).rstrip("/")
        git_url = f"{base}/datasets/{org}/{name}.git"
        objects = [lfs_action(state.storage, f"{org}/{name}", o, git_url)
                   for o in body.get("objects", [])]
        return JSONResponse({"transfer": "basic", "objects": objects, "hash_algo": "sha256"},
                            media_type="application/vnd.git-lfs+json")

    @app.post("/datasets/{org}/{name}.git/info/lfs/objects/verify")
    async def lfs_verify(org: str, name: str, request: Request) -> Response:
        if not state.authorised(request):
            return hub_error(401, None, "Invalid credentials in Authorization header")
        body = await request.json()
        problem = state.storage.verify(f"{org}/{name}/{body.get('oid')}", int(body.get("size", -1)))
        if problem:
            return hub_error(422, None, problem)
        return JSONResponse({"success": True})

    return app


@dataclass
class Tree:
    """A commit's tree while operations apply to it: contents, and which paths are LFS."""

    files: dict[str, bytes]
    lfs: dict[str, str]


def apply_operations(
    tree: Tree, lines: list[dict[str, Any]], storage: Storage, repo_id: str
) -> tuple[str, str | None]:
    """Apply a commit's ndjson operations to ``tree``: ``(message, problem)``.

    A regular file must be text under 10 MiB, as on the Hub; an ``lfsFile`` must name an object
    uploaded and verified through the batch API, with its size.
    """
    message = ""
    for line in lines:
        key, value = line.get("key"), line.get("value", {})
        if key == "header":
            message = value.get("summary", "")
            continue
        problem = _apply(tree, key, value, storage, repo_id)
        if problem:
            return message, problem
    return message, None


def _apply(
    tree: Tree, key: Any, value: dict[str, Any], storage: Storage, repo_id: str
) -> str | None:
    path = value.get("path", "")
    if key == "file":
        if value.get("encoding") != "base64":
            return f"expected base64 content for {path}"
        data = base64.b64decode(value["content"])
        if len(data) >= LARGE or is_binary(data[:512]):
            return (f"Your push was rejected because it contains binary files or files larger "
                    f"than 10 MiB ({path}). Please use https://git-lfs.github.com/ to store them.")
        tree.files[path] = data
        tree.lfs.pop(path, None)
    elif key == "lfsFile":
        oid = str(value.get("oid", ""))
        data = storage.objects.get(f"{repo_id}/{oid}")
        if data is None or ("size" in value and value["size"] != len(data)):
            return (f"Your push was rejected because an LFS pointer pointed to a file that does "
                    f"not exist ({path})")
        tree.files[path] = data
        tree.lfs[path] = oid
    elif key == "deletedFile":
        if tree.files.pop(path, None) is None:
            return f"A file with this name doesn't exist: {path}"
        tree.lfs.pop(path, None)
    elif key == "deletedFolder":
        prefix = path.rstrip("/") + "/"
        tree.files = {p: d for p, d in tree.files.items() if not p.startswith(prefix)}
        tree.lfs = {p: o for p, o in tree.lfs.items() if p in tree.files}
    else:
        return f"this emulator does not accept commit operations of kind {key!r}"
    return None


def lfs_action(
    storage: Storage, repo_id: str, obj: dict[str, Any], git_url: str
) -> dict[str, Any]:
    """The batch API's answer for one object: nothing to do when it is stored, else where to
    ``PUT`` it (a signed storage URL) and how to verify it."""
    oid, size = str(obj.get("oid")), int(obj.get("size", -1))
    stored = storage.objects.get(f"{repo_id}/{oid}")
    if stored is not None and len(stored) == size:
        return {"oid": oid, "size": size}
    return {
        "oid": oid,
        "size": size,
        "authenticated": True,
        "actions": {
            "upload": {"href": storage.signed("PUT", f"{repo_id}/{oid}"), "expires_in": 3600},
            "verify": {"href": f"{git_url}/info/lfs/objects/verify"},
        },
    }


def tree_entries(commit: Commit, path: str, recursive: bool) -> list[dict[str, Any]]:
    """The Hub's tree listing of ``path`` in ``commit``: files, and the folders on the way."""
    prefix = f"{path}/" if path else ""
    entries: dict[str, dict[str, Any]] = {}
    for file_path, data in sorted(commit.files.items()):
        if not file_path.startswith(prefix):
            continue
        parts = file_path[len(prefix) :].split("/")
        for depth in range(1, len(parts)):
            folder = prefix + "/".join(parts[:depth])
            entries.setdefault(
                folder,
                {
                    "type": "directory",
                    "oid": hashlib.sha1(folder.encode()).hexdigest(),
                    "size": 0,
                    "path": folder,
                },
            )
            if not recursive:
                break
        if recursive or len(parts) == 1:
            entries[file_path] = {
                "type": "file",
                "oid": commit.blob_oid(file_path),
                "size": len(data),
                "path": file_path,
                **commit.lfs_info(file_path, "oid"),
            }
    return list(entries.values())


class EmulatedHub:
    """Runs :func:`make_app` and the LFS storage (:class:`hf_lfs.Storage`) with uvicorn, each in a
    thread on 127.0.0.1 and its own random free port (two origins, as the Hub and its CDN)."""

    def __init__(self, token: str | None = None):
        self.state = HubState(token)
        hub_server, self.url = _server(make_app(self.state))
        storage_server, self.state.storage.url = _server(self.state.storage.app())
        self.storage_url = self.state.storage.url
        self._servers = [hub_server, storage_server]

    def __enter__(self) -> EmulatedHub:
        for server in self._servers:
            server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self._servers:
            server.stop()


class _Threaded:
    """One uvicorn server on a bound socket, in a daemon thread."""

    def __init__(self, app: FastAPI, sock: socket.socket):
        import uvicorn

        self.sock = sock
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, daemon=True
        )

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the emulated Hub did not start within 10 s")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def _server(app: FastAPI) -> tuple[_Threaded, str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return _Threaded(app, sock), f"http://127.0.0.1:{sock.getsockname()[1]}"
