"""rlhub: a plugin-based hub of environments and rewards for RL post-training of LLMs.

This module is the public facade; with the few public modules PLUGINS.md lists under "What you
may import" (``rlhub.testing``, ``rlhub.verifiers.bounded``, ``rlhub.bridges``,
``rlhub.integrations.exports.verifiers_env``), it is all a plugin may import: everything else is an
implementation detail that may move (tests/test_architecture.py holds first-party plugins to it).
Heavy parts (the scheduler, sandboxes) are imported on first attribute access, so ``import rlhub``
stays cheap.
"""

from __future__ import annotations

from typing import Any

from rlhub.domain import Domain, Episode, StepResult, Verdict
from rlhub.errors import (
    DomainNotFound,
    LabelError,
    ManifestError,
    PluginError,
    PolicyError,
    RlhubError,
    SandboxError,
    SchedulerError,
    StoreError,
    TrainerError,
    VerifierError,
)
from rlhub.failures import FAILURES, TRAINABLE, is_trainable
from rlhub.manifest import Manifest
from rlhub.home import rlhub_cache, rlhub_home
from rlhub.plugins import Registry, hookimpl, registry
from rlhub.task import Score, Task, clamp_reward, task_id

__version__ = "0.1.0"

_LAZY = {
    "Scheduler": "rlhub.scheduler",
    "Services": "rlhub.services",
    "ExecRequest": "rlhub.sandbox",
    "ExecResult": "rlhub.sandbox",
    "JsonSchema": "rlhub.verifiers.basic",
    "Lease": "rlhub.sandbox.workspaces",
    "Limits": "rlhub.sandbox",
    "Tool": "rlhub.tools",
    "ToolCall": "rlhub.tools",
    "ToolError": "rlhub.tools",
    "Toolset": "rlhub.tools",
    "Workspace": "rlhub.sandbox.workspaces",
    "assistant_message": "rlhub.tools",
    "completion_text": "rlhub.tools",
    "make_patch": "rlhub.patches",
    "make_snapshot": "rlhub.sandbox.snapshots",
    "tool": "rlhub.tools",
    "tool_message": "rlhub.tools",
    "code_of": "rlhub.extract",
    "last_fence": "rlhub.extract",
    "final_answer": "rlhub.extract",
    "fresh_nonce": "rlhub.sandbox.verdict",
    "last_boxed": "rlhub.extract",
    "parse_json_answer": "rlhub.verifiers.basic",
    "tagged_line": "rlhub.sandbox.verdict",
}

__all__ = sorted([
    "Domain",
    "DomainNotFound",
    "Episode",
    "ExecRequest",
    "ExecResult",
    "FAILURES",
    "JsonSchema",
    "LabelError",
    "Lease",
    "Limits",
    "Manifest",
    "ManifestError",
    "PluginError",
    "PolicyError",
    "Registry",
    "RlhubError",
    "SandboxError",
    "Scheduler",
    "SchedulerError",
    "Services",
    "Score",
    "StepResult",
    "StoreError",
    "TRAINABLE",
    "Task",
    "Tool",
    "ToolCall",
    "ToolError",
    "Toolset",
    "TrainerError",
    "Verdict",
    "VerifierError",
    "Workspace",
    "assistant_message",
    "clamp_reward",
    "code_of",
    "completion_text",
    "last_fence",
    "final_answer",
    "fresh_nonce",
    "hookimpl",
    "is_trainable",
    "last_boxed",
    "make_patch",
    "make_snapshot",
    "parse_json_answer",
    "registry",
    "rlhub_cache",
    "rlhub_home",
    "tagged_line",
    "task_id",
    "tool",
    "tool_message",
])


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'rlhub' has no attribute {name!r}")
