"""A multi-turn verifiers environment: the env plays the user of a higher/lower game."""

import re

import verifiers.v1 as vf


class GuessData(vf.TaskData):
    secret: int


class GuessTask(vf.Task[GuessData]):
    pass


class GuessEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig(max_turns=8)


class GuessEnv(vf.Env[GuessEnvConfig]):
    async def run(self, task, agents):
        won = 0.0
        async with agents.player.interaction(task) as interaction:
            segment = await interaction.turn()
            for _ in range(8):
                if segment.terminated:
                    break
                found = re.findall(r"-?\d{1,9}\b", segment.last_reply)
                if not found:
                    segment = await interaction.turn("Reply with a number.")
                    continue
                guess = int(found[-1])
                if guess == task.data.secret:
                    won = 1.0
                    break
                hint = "higher" if guess < task.data.secret else "lower"
                segment = await interaction.turn(f"{guess} is wrong: go {hint}.")
        interaction.trace.record_reward("won", won, 1.0)


class GuessTaskset(vf.Taskset[GuessTask, vf.TasksetConfig]):
    INFINITE = True

    def load(self):
        position = 0
        while True:
            secret = (position * 37) % 64 + 1
            yield GuessTask(GuessData(prompt="Guess my number between 1 and 64. Reply with one "
                                      "number; I will say higher or lower.", secret=secret),
                            self.config.task)
            position += 1


__all__ = ["GuessEnv", "GuessTaskset"]
