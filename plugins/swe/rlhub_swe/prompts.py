"""The prompts of the swe domains: the task, how to answer, and the repository."""

from __future__ import annotations

from rlhub_swe.made import Made

ANSWER = ("Answer with a unified diff that `git apply` accepts, paths relative to the repository "
          "root (`--- a/{example}` / `+++ b/{example}`), in a ```diff fenced block. Change only "
          "the package's source ({packages}): a patch that touches tests or test configuration "
          "earns nothing. Hidden tests decide whether the task is done.")


def _files(made: Made) -> list[str]:
    return sorted(made.files if made.shown is None else made.shown)


def repository(made: Made) -> str:
    """The repository's files (those ``made.shown`` names, or all), each in a fenced block."""
    return "\n\n".join(f"### {path}\n```{'python' if path.endswith('.py') else ''}\n"
                       f"{made.files[path].rstrip()}\n```" for path in _files(made))


def single_turn(made: Made) -> str:
    example = next((p for p in _files(made) if p.startswith(made.packages[0])), "pkg/mod.py")
    packages = ", ".join(f"`{p}/`" for p in made.packages)
    held = "" if made.shown is None else f" ({len(made.shown)} of them are shown below)"
    return (f"You are working in the Python repository `{made.package}` ({len(made.files)} "
            f"files{held}).\n\n{made.statement}\n\n"
            f"{ANSWER.format(example=example, packages=packages)}\n\n"
            f"The repository:\n\n{repository(made)}\n")


def agent(made: Made, tools: str, max_turns: int) -> str:
    packages = ", ".join(f"`{p}/`" for p in made.packages)
    tree = "\n".join(f"  {p}" for p in sorted(made.files)[:400])
    return (f"You are working in the Python repository `{made.package}`, checked out in your "
            f"workspace.\n\n{made.statement}\n\n"
            f"Tools:\n{tools}\n"
            'Call a tool by writing <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call> '
            "(up to 4 per message), or through your API's function calling. Read the code, run "
            "the tests, change the package's source "
            f"({packages}), then call submit. Hidden tests decide; changing tests or test "
            f"configuration earns nothing. You have {max_turns} messages.\n\n"
            f"Files:\n{tree}\n")
