"""A verifiers environment with hostile parts: a tool that never returns, a tool that floods,
and a reward that stalls on one reply (each an environment bug the bridge must bound)."""

import asyncio

import verifiers.v1 as vf


class Hostile(vf.Toolset[vf.ToolsetConfig]):
    @vf.tool
    async def wait(self) -> str:
        """Never returns."""
        await asyncio.sleep(3600)
        return "late"

    @vf.tool
    def flood(self) -> str:
        """Returns a megabyte."""
        return "x" * (1 << 20)


class StallConfig(vf.TaskConfig):
    tools: vf.ToolsetConfig = vf.ToolsetConfig()


class StallTask(vf.Task[vf.TaskData, vf.State, StallConfig]):
    @classmethod
    def toolsets(cls, config: StallConfig) -> list[vf.Toolset]:
        return [Hostile(config.tools)]

    @vf.reward
    async def said_done(self, trace: vf.Trace) -> float:
        if trace.last_reply == "stall":
            await asyncio.sleep(3600)
        return float(trace.last_reply == "done")


class StallTasksetConfig(vf.TasksetConfig):
    task: StallConfig = StallConfig()


class StallTaskset(vf.Taskset[StallTask, StallTasksetConfig]):
    def load(self):
        for i in range(2):
            yield StallTask(vf.TaskData(prompt=f"Use the tools, then reply done ({i})."),
                            self.config.task)


__all__ = ["StallTaskset"]
