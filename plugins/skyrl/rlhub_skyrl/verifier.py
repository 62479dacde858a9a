"""The ``skyrl`` verifier: one step of a registered skyrl-gym environment scores a completion.

Options: ``env`` (one of :data:`rlhub_skyrl.catalog.BRIDGED`). The task's ``answer`` is the row's
ground truth, handed to the environment as SkyRL's own dataset rows do (``extras.reward_spec`` or
``extras.reward_model``); the environment's ``init`` gets the prompt and its ``step`` the
completion. Components: ``correct`` (SkyRL's reward reached its maximum, 1.0) and ``env_reward``
(SkyRL's reward itself: gsm8k pays 0 or 1, aime -1 or 1).

SkyRL's gsm8k scorer reads the first number after ``####``, so ``#### 7 or 12`` or ``#### 7Yes``
passes on a task whose answer is 7: a hedge a policy would learn. The bridge pays ``correct``
only when the completion gives one final answer, a single number after its only ``####``;
``env_reward`` still logs what SkyRL pays. SkyRL's full reward is not a pass by itself either: the
final answer (after ``####`` for gsm8k, the last ``\\boxed{}`` for aime) must also be the ground
truth's number (:func:`rlhub.bridges.gold_agrees`), whatever SkyRL's scorer accepts.
"""

from __future__ import annotations

import re
from typing import Any

from rlhub import Task, Verdict, VerifierError, last_boxed
from rlhub.bridges import gold_agrees

from rlhub_skyrl.catalog import BRIDGED

FINAL_NUMBER = re.compile(r"\$?-?\$?[0-9][0-9,]*(\.[0-9]+)?\.?")
SINGLE_ANSWER = {"gsm8k": lambda text: text.count("####") == 1 and bool(
    FINAL_NUMBER.fullmatch(text.rsplit("####", 1)[1].strip()))}
FINAL_ANSWER = {"gsm8k": lambda text: text.rsplit("####", 1)[-1].strip().rstrip("."),
                "aime": lambda text: last_boxed(text) or ""}


class SkyRLVerifier:
    """See the module docstring."""

    def __init__(self, options: dict[str, Any]):
        self.env = str(options.get("env", ""))
        if self.env not in BRIDGED:
            raise VerifierError(f"skyrl verifier: expected options.env in {sorted(BRIDGED)}, "
                                f"found {self.env!r}")
        self.extras_key = BRIDGED[self.env]["extras"]

    def check(self, task: Task, completion: str) -> Verdict:
        import skyrl_gym

        if task.answer is None:
            raise VerifierError(f"task {task.id}: a skyrl-gym environment needs the row's ground "
                                "truth as the task's answer, found none")
        extras = {self.extras_key: {"method": "rule", "ground_truth": str(task.answer)},
                  "extra_info": {}}
        env = skyrl_gym.make(self.env, env_config={}, extras=extras)
        messages = task.prompt if isinstance(task.prompt, list) else \
            [{"role": "user", "content": task.prompt}]
        env.init(messages)
        reward = float(env.step(completion)["reward"])
        env.close()
        single = SINGLE_ANSWER.get(self.env, lambda text: True)(completion)
        final = FINAL_ANSWER[self.env](completion).replace("$", "")
        passed = reward >= 1.0 and single and gold_agrees(final, task.answer) is not False
        feedback = "" if passed else "The final answer does not match the reference." if single \
            else "Give one final answer: a single number after one '####', and nothing after it."
        return Verdict({"correct": float(passed), "env_reward": reward}, passed, feedback)
