"""A scripted OpenAI-compatible judge for the whole session, named by RLHUB_JUDGE_URL/MODEL.

The contract kit grades gold and bad completions through the domains' judge; the scripted judge
(:mod:`rlhub.testing.judge_server`) grades deterministically against the reference answers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rlhub.testing.judge_server import ScriptedJudge, judge_env


@pytest.fixture(scope="session", autouse=True)
def scripted_judge() -> Iterator[ScriptedJudge]:
    with judge_env("good") as judge:
        yield judge
