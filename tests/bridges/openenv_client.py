"""Drive an OpenEnv server with OpenEnv's own client (run by the OpenEnv venv's interpreter).

    python openenv_client.py URL PLAN.json

PLAN is a list of calls: ``["reset", {kwargs}]``, ``["step", {action}]``, ``["state"]``; the
script prints one JSON list with each call's result, or ``{"error": ...}`` where it raised.
"""

import json
import sys

from openenv import GenericEnvClient


def result(value):
    if hasattr(value, "observation"):
        return {"observation": value.observation, "reward": value.reward, "done": value.done,
                "metadata": getattr(value, "metadata", None)}
    return value


def main() -> None:
    url, plan = sys.argv[1], json.loads(open(sys.argv[2]).read())
    out = []
    with GenericEnvClient(base_url=url).sync() as env:
        for call in plan:
            try:
                name, args = call[0], call[1:]
                value = env.reset(**args[0]) if name == "reset" else getattr(env, name)(*args)
                out.append(result(value))
            except Exception as exc:  # noqa: BLE001 - reported to the test
                out.append({"error": f"{type(exc).__name__}: {exc}"})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
