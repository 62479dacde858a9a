"""An OpenEnv environment server written with OpenEnv's own framework (run in its venv).

    python guess_server.py PORT

Higher/lower over 1..64: the secret comes from ``reset(seed=...)``; each step's action is
``{"message": "<a number>"}``; a right guess earns reward 1 and ends the episode, eight wrong
ones end it with 0.
"""

import random
import re
import sys
import uuid

import uvicorn
from openenv.core.env_server import Action, Environment, Observation, State, create_app
from openenv.core.env_server.types import EnvironmentMetadata


class GuessAction(Action):
    message: str


class GuessObservation(Observation):
    text: str


class GuessEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        super().__init__()
        self._state = State(episode_id=None, step_count=0)
        self.secret = 0

    def reset(self, seed=None, episode_id=None, **kwargs):
        self.secret = random.Random(seed).randint(1, 64)
        self._state = State(episode_id=episode_id or uuid.uuid4().hex, step_count=0)
        return GuessObservation(text="Guess my number between 1 and 64; reply with one number.")

    def step(self, action, timeout_s=None, **kwargs):
        self._state.step_count += 1
        found = re.findall(r"-?\d{1,9}\b", action.message)  # a guess, not a 5,000-digit probe
        if not found:
            return GuessObservation(text="Reply with a number.", reward=0.0,
                                    done=self._state.step_count >= 8)
        guess = int(found[-1])
        if guess == self.secret:
            return GuessObservation(text="Correct!", reward=1.0, done=True)
        hint = "higher" if guess < self.secret else "lower"
        return GuessObservation(text=f"{guess} is wrong: go {hint}.", reward=0.0,
                                done=self._state.step_count >= 8)

    @property
    def state(self):
        return self._state

    def get_metadata(self):
        return EnvironmentMetadata(name="guess", description="Higher/lower over 1..64",
                                   version="2.1.0")


app = create_app(GuessEnvironment, GuessAction, GuessObservation, env_name="guess",
                 max_concurrent_envs=8)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
