"""A cached description is keyed by the environment's code itself: a file changed in place with
its size and modification time kept (as a copy or a checkout can leave it) is described again."""

from __future__ import annotations

import os
import sys

from rlhub_verifiers.discover import Source, stamp


def test_a_module_changed_in_place_with_its_size_and_time_kept_gets_another_stamp(
    tmp_path, monkeypatch
):
    module = tmp_path / "fake_vf_env.py"
    module.write_text("def load_environment():\n    return 'honest'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("fake_vf_env", None)
    source = Source("owner/fake-vf-env", "fake_vf_env", "fake-vf-env", "1.0", "MIT", "")
    before = stamp(source)
    st = module.stat()
    module.write_text("def load_environment():\n    return 'hostle'\n")  # same length
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert module.stat().st_size == st.st_size and module.stat().st_mtime_ns == st.st_mtime_ns
    assert stamp(source) != before
    other = Source("owner/other-env", "fake_vf_env", "other-env", "1.0", "MIT", "")
    assert stamp(other) != stamp(source)  # the same code under another environment
