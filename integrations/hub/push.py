"""``rlhub push``: build a bundle in a scratch folder and upload it to a remote."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rlhub.integrations.hub.bundle import BuildOptions, build_bundle
from rlhub.integrations.hub.errors import HubError
from rlhub.integrations.hub.remote import check_tag, parse_ref
from rlhub.integrations.hub.transports import open_remote

if TYPE_CHECKING:
    from rlhub.plugins import Registry


def push(
    target: str,
    to: str,
    *,
    revision: str | None = None,
    registry: Registry | None = None,
    options: BuildOptions = BuildOptions(),
) -> dict[str, Any]:
    """Bundle ``target`` (domain id, glob or plugin name) and push it to ``to``.

    :param to: ``hf://org/name``, ``file:///path``, ``s3://bucket/prefix`` or any fsspec URL.
    :param revision: A tag to set on the pushed bundle (tags never move); ``main`` always moves.
    :return: ``{url, bundle, revision, name, domains, files, ...}`` (remote-specific extras).
    """
    ref = parse_ref(to)
    if ref.revision is not None:
        raise HubError(
            f"push --to {to}: expected a URL without @revision; pass the tag as "
            f"--revision {ref.revision}"
        )
    if revision is not None:
        check_tag(revision)
    remote = open_remote(ref.url)
    pull_ref = f"{ref.url}@{revision}" if revision else ref.url
    # the card names the remote but not the tag, so retagging the same content keeps its id
    options = dataclasses.replace(options, ref=options.ref or ref.url)
    with tempfile.TemporaryDirectory(prefix="rlhub-push-") as tmp:
        bundle = build_bundle(target, Path(tmp) / "bundle", registry=registry, options=options)
        result = remote.push(bundle, revision)
    return {
        **result,
        "name": bundle.name,
        "domains": sorted(bundle.lock["domains"]),
        "files": len(bundle.paths()),
        "pull": pull_ref,
    }
