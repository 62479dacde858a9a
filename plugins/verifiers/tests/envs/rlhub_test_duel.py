"""A two-seat verifiers environment, which a one-policy rlhub domain cannot play."""

import verifiers.v1 as vf


class DuelTask(vf.Task[vf.TaskData]):
    @vf.reward
    async def any_reply(self, trace: vf.Trace) -> float:
        return float(bool(trace.last_reply))


class DuelEnvConfig(vf.EnvConfig):
    red: vf.AgentConfig = vf.AgentConfig()
    blue: vf.AgentConfig = vf.AgentConfig()


class DuelEnv(vf.Env[DuelEnvConfig]):
    async def run(self, task, agents):
        await agents.red.run(task)
        await agents.blue.run(task)


class DuelTaskset(vf.Taskset[DuelTask, vf.TasksetConfig]):
    def load(self):
        yield DuelTask(vf.TaskData(prompt="Say something."), self.config.task)


__all__ = ["DuelEnv", "DuelTaskset"]
