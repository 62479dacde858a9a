"""The plugin module stays cheap: listing domains imports none of the domain code."""

import json
import subprocess
import sys


def test_listing_domains_imports_no_domain_module_or_heavy_library():
    code = ("import json, sys; from rlhub_structured import plugin; plugin.rlhub_domains(); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('rlhub_structured') "
            "or m in ('jsonschema', 'torch', 'numpy', 'sympy'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == ["rlhub_structured", "rlhub_structured.plugin"]
