"""Install the test verifiers environments into a folder the way pip would lay them out.

Each module in ``envs/`` becomes a distribution (``rlhub_test_arith.py`` ->
``rlhub-test-arith``): the module beside a ``.dist-info`` folder whose METADATA requires
``verifiers``, which is all a real installation leaves behind that discovery reads.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ENVS = Path(__file__).parent / "envs"
LICENSES = {"rlhub-test-arith": "MIT", "rlhub-test-guess": "Apache-2.0"}


def install(site: Path, names: list[str] | None = None, version: str = "1.2.0") -> Path:
    """Lay out the named test environments (all by default) in ``site``."""
    site.mkdir(parents=True, exist_ok=True)
    for module in sorted(ENVS.glob("*.py")):
        dist = module.stem.replace("_", "-")
        if names is not None and dist not in names:
            continue
        shutil.copy(module, site / module.name)
        info = site / f"{module.stem}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.4\nName: {dist}\nVersion: {version}\n"
            f"Summary: test environment {dist}\n"
            f"License-Expression: {LICENSES.get(dist, 'BSD-3-Clause')}\n"
            "Requires-Dist: verifiers>=0.4\n")
        (info / "top_level.txt").write_text(module.stem + "\n")
    return site
