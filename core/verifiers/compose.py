"""The ``composite`` verifier: rule-based and model-based verifiers combined, with gates.

Options::

    parts:
      - name: math                  # any named verifier, with its own options
        gate: true                  # if this part fails, the parts after it do not run
      - name: regex
        options: {pattern: "(?s).*Explanation:.*"}
        rename: {match: format}     # component names as the domain declares them
        require: false              # its pass does not count towards the composite's pass
      - name: judge
        options: {rubric: {criteria: {clarity: "..."}}}

Every component of every part that ran lands in the verdict (renamed as asked); the components of
parts skipped behind a failed gate are absent, so the domain scores them at their range minimum.
Weights live in one place, the domain's ``reward.components`` (weight 0 keeps a component for
logging only), and the domain clamps the weighted sum into its declared range. The composite
passes when every part with ``require: true`` (the default) ran and passed. Feedback joins the
parts' feedback in order; a part's recorded error (a judge's fallback) joins ``Score.error``. A
part that raises makes the whole verification fail (the domain scores its range minimum with the
error recorded), so a judge outage never earns a rule-only reward by accident.

The typical hybrid: a format check and a correctness check gate an LLM judge, so the judge is only
paid for (and only gameable on) answers that are already right.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlhub.domain import Verdict
from rlhub.errors import VerifierError
from rlhub.task import Task

if TYPE_CHECKING:
    from rlhub.protocols import ServicesLike


@dataclass
class Part:
    """One sub-verifier of a composite and how its verdict is used."""

    name: str
    options: dict[str, Any]
    gate: bool = False
    require: bool = True
    rename: dict[str, str] = field(default_factory=dict)
    verifier: Any = None

    @classmethod
    def parse(cls, index: int, raw: Any) -> Part:
        if isinstance(raw, str):
            raw = {"name": raw}
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise VerifierError(f"composite: part {index}: expected a verifier name or "
                                f"{{name, options, gate, require, rename}}, found {raw!r}")
        unknown = sorted(set(raw) - {"name", "options", "gate", "require", "rename"})
        if unknown:
            raise VerifierError(f"composite: part {index} ({raw['name']}): unknown keys {unknown}; "
                                "expected name, options, gate, require, rename")
        return cls(raw["name"], dict(raw.get("options") or {}), bool(raw.get("gate", False)),
                   bool(raw.get("require", True)), dict(raw.get("rename") or {}))

    def build(self, services: ServicesLike) -> None:
        self.verifier = services.verifier(self.name, self.options)


class Composite:
    """Run parts in order with gates; merge their components (see the module docstring)."""

    def __init__(self, options: dict[str, Any], services: ServicesLike):
        raw = options.get("parts")
        if not isinstance(raw, list) or not raw:
            raise VerifierError(f"composite: expected options.parts as a non-empty list, "
                                f"found {raw!r}")
        self.parts = [Part.parse(i, p) for i, p in enumerate(raw)]
        for part in self.parts:
            part.build(services)  # fail at construction on unknown names or bad options

    def check(self, task: Task, completion: str) -> Verdict:
        components: dict[str, float] = {}
        owner: dict[str, str] = {}
        feedback: list[str] = []
        errors: list[str] = []
        passed, exec_result = True, None
        for index, part in enumerate(self.parts):
            verdict = part.verifier.check(task, completion)
            self._merge(index, part, verdict, components, owner)
            if verdict.feedback:
                feedback.append(verdict.feedback)
            if verdict.error:
                errors.append(f"{part.name}: {verdict.error}")
            exec_result = exec_result if exec_result is not None else verdict.exec
            passed = passed and (verdict.passed or not part.require)
            if part.gate and not verdict.passed:
                passed = passed and not any(p.require for p in self.parts[index + 1:])
                break
        return Verdict(components, passed, "\n".join(feedback), exec_result,
                       "; ".join(errors) or None)

    @staticmethod
    def _merge(index: int, part: Part, verdict: Verdict, components: dict[str, float],
               owner: dict[str, str]) -> None:
        for name, value in verdict.components.items():
            target = part.rename.get(name, name)
            if target in owner:
                raise VerifierError(f"composite: component {target!r} comes from both "
                                    f"{owner[target]} and part {index} ({part.name}); "
                                    "rename one of them")
            owner[target] = f"part {index} ({part.name})"
            components[target] = value
