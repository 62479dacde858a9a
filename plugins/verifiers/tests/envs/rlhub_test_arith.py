"""A single-turn verifiers environment: add two numbers, answer in \\boxed{}."""

import random

import verifiers.v1 as vf


class ArithData(vf.TaskData):
    answer: str


class ArithTask(vf.Task[ArithData]):
    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        return float(vf.extract_boxed_answer(trace.last_reply) == self.data.answer)

    @vf.reward(weight=0.0)
    async def short(self, trace: vf.Trace) -> float:
        return float(len(trace.last_reply) < 200)


class ArithConfig(vf.TasksetConfig):
    num_tasks: int = 40


class ArithTaskset(vf.Taskset[ArithTask, ArithConfig]):
    def load(self):
        rng = random.Random(0)
        for _ in range(self.config.num_tasks):
            a, b = rng.randrange(100), rng.randrange(100)
            yield ArithTask(ArithData(prompt=f"What is {a} + {b}? Answer in \\boxed{{}}.",
                                      answer=str(a + b)), self.config.task)


__all__ = ["ArithTaskset"]
