"""The environment card: a bundle's ``README.md``, with YAML front matter the Hub can index.

The front matter carries the ``rlhub`` tag (how environments are found on the Hugging Face
Hub), the license, the domain ids, each domain's reward components, and one dataset ``configs``
entry per domain pointing at its Parquet task sets, so ``datasets.load_dataset(repo, name)``
reads the held-out tasks directly. The body says what the bundle holds and how to use it.
"""

from __future__ import annotations

from typing import Any

import yaml

from rlhub.manifest import Manifest

BASE_TAGS = ["rlhub", "reinforcement-learning", "rl-environment"]


def hf_license(manifests: list[Manifest]) -> str:
    """The Hub's license id: the shared SPDX id in lower case, else ``other``."""
    found = {m.data.get("license", "NOASSERTION") for m in manifests}
    if len(found) == 1 and (spdx := found.pop()) not in ("NOASSERTION", "NONE", ""):
        return spdx.lower()
    return "other"


def front_matter(
    name: str, manifests: list[Manifest], tasks: dict[str, dict[str, str]]
) -> dict[str, Any]:
    """The card's metadata; ``tasks`` maps each domain id to ``{split: parquet path}``."""
    tags = list(BASE_TAGS)
    for manifest in manifests:
        tags += [t for t in manifest.tags if t not in tags]
    return {
        "pretty_name": f"rlhub environment {name}",
        "license": hf_license(manifests),
        "tags": tags,
        "domains": [m.id for m in manifests],
        "reward_components": {m.id: sorted(m.components) for m in manifests},
        "configs": [
            {
                "config_name": slug(m.id),
                "data_files": [{"split": s, "path": p} for s, p in tasks[m.id].items()],
            }
            for m in manifests
        ],
    }


def slug(domain_id: str) -> str:
    """A file- and config-name-safe form of a domain id: ``math/add-v1`` -> ``math--add-v1``."""
    return domain_id.replace("/", "--")


def render_card(
    name: str,
    manifests: list[Manifest],
    tasks: dict[str, dict[str, str]],
    code: str,
    ref: str | None,
) -> str:
    """The full ``README.md``; ``code`` says how the domains' code ships, ``ref`` where to pull."""
    meta = yaml.safe_dump(front_matter(name, manifests, tasks), sort_keys=False, width=100)
    pull = (
        f"rlhub pull {ref}          # the latest push; {ref}@<tag> pins a tagged one"
        if ref
        else "rlhub pull <URL>@<tag>"
    )
    lines = [
        f"---\n{meta}---",
        "",
        f"# {name}",
        "",
        "An rlhub environment bundle: verifiable tasks and rewards "
        "for RL post-training of LLMs, pinned by content hash.",
        "",
        "## Domains",
        "",
        "| id | version | summary | reward components |",
        "| --- | --- | --- | --- |",
    ]
    for m in manifests:
        comps = ", ".join(
            f"{c} (weight {spec.get('weight', 1)})" for c, spec in m.components.items()
        )
        lines.append(f"| `{m.id}` | {m.version} | {m.data['summary']} | {comps} |")
    lines += [
        "",
        "## Contents",
        "",
        "- `manifests/`: each domain's manifest (JSON);",
        "- `data/<domain>/test.parquet`: the held-out task set; `train.parquet`: a train sample;",
        f"- {code};",
        "- `rlhub.lock`: the sha256 of every file, each domain's verifier code hash and, when "
        "an image was built, its digest. The bundle's id is the hash of this lock.",
        "",
        "## Usage",
        "",
        "```bash",
        pull,
        "rlhub list            # the pulled domains are listed",
        f"rlhub check {manifests[0].id}",
        "```",
        "",
        "`rlhub pull` verifies every file against `rlhub.lock` before installing anything. "
        "A plugin wheel is installed only with `--trust-remote-code`; without it the domains "
        "use your own judge endpoints and sandbox policy.",
        "",
    ]
    return "\n".join(lines)
