"""A tool-use verifiers environment: multiply with a tool, then answer."""

import verifiers.v1 as vf


class Calculator(vf.Toolset[vf.ToolsetConfig]):
    @vf.tool
    def multiply(self, a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b


class MulData(vf.TaskData):
    answer: str


class MulConfig(vf.TaskConfig):
    tools: vf.ToolsetConfig = vf.ToolsetConfig()


class MulTask(vf.Task[MulData, vf.State, MulConfig]):
    @classmethod
    def toolsets(cls, config: MulConfig) -> list[vf.Toolset]:
        return [Calculator(config.tools)]

    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        return float(trace.last_reply.strip() == self.data.answer)


class MulTasksetConfig(vf.TasksetConfig):
    task: MulConfig = MulConfig()


class MulTaskset(vf.Taskset[MulTask, MulTasksetConfig]):
    def load(self):
        for i in range(6):
            a, b = 1234 + 7 * i, 5678 - 3 * i
            yield MulTask(MulData(prompt=f"What is {a} * {b}? Reply with the number only.",
                                  answer=str(a * b)), self.config.task)


__all__ = ["MulTaskset"]
