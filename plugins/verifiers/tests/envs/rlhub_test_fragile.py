"""A verifiers environment whose reward function crashes on some replies (an env bug)."""

import verifiers.v1 as vf


class FragileTask(vf.Task[vf.TaskData]):
    @vf.reward
    async def echoed(self, trace: vf.Trace) -> float:
        if "boom" in trace.last_reply:
            raise ZeroDivisionError("the reward function divided by zero")
        return float(trace.last_reply.strip() == "ok")


class FragileTaskset(vf.Taskset[FragileTask, vf.TasksetConfig]):
    def load(self):
        for i in range(3):
            yield FragileTask(vf.TaskData(prompt=f"Reply with ok ({i})."), self.config.task)


__all__ = ["FragileTaskset"]
