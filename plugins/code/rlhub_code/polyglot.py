"""One renderer for the code families in many languages, MultiPL-E style.

A family's :class:`~rlhub_code.spec.FuncSpec` is written in Python (signature, reference,
arguments). A :class:`Dialect` says how one language spells its types, literals, function
signature and a test program, so the same task is rendered in each language: the prompt's
signature and examples, and a harness that calls the candidate on every hidden case and prints
each result as ``@@rlhub <index> <value>``. The expected values never enter the sandbox; the host
compares them, and a case whose line is missing or printed more than once fails, so printing
guesses earns nothing.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MARK = "@@rlhub"


def c_string(text: str) -> str:
    """A double-quoted literal with C-family escapes (JSON's are valid in every dialect here)."""
    return json.dumps(text)


@dataclass(frozen=True)
class Dialect:
    """How one language spells what the families need (types ``int``, ``str``, ``list[int]``)."""

    language: str  # the registered sandbox language
    title: str
    types: dict[str, str]
    list_literal: Callable[[list[int]], str]
    signature: Callable[[str, list[tuple[str, str]], str], str]
    call: str  # how a harness line calls: {call} -> the expression, {i} the case index
    program: Callable[[str, list[str]], str]  # (candidate, harness lines) -> the whole program
    note: str = ""
    string_literal: Callable[[str], str] = c_string

    def literal(self, value: Any, kind: str) -> str:
        if kind == "list[int]":
            return self.list_literal(value)
        return self.string_literal(value) if kind == "str" else str(value)

    def call_expr(self, name: str, params: list[tuple[str, str]], args: tuple[Any, ...]) -> str:
        return f"{name}({', '.join(self.literal(a, k) for a, (_, k) in zip(args, params))})"


def _sig(dialect_types: dict[str, str], style: str) -> Callable[..., str]:
    def render(name: str, params: list[tuple[str, str]], ret: str) -> str:
        t = dialect_types
        if style == "python":
            args = ", ".join(f"{p}: {k}" for p, k in params)
            return f"def {name}({args}) -> {ret}:"
        if style == "ts":
            args = ", ".join(f"{p}: {t[k]}" for p, k in params)
            return f"function {name}({args}): {t[ret]}"
        if style == "c":
            args = ", ".join(f"{t[k]} {p}" for p, k in params)
            return f"{t[ret]} {name}({args})"
        if style == "static":
            args = ", ".join(f"{t[k]} {p}" for p, k in params)
            return f"public static {t[ret]} {name}({args})"
        if style == "rust":
            args = ", ".join(f"{p}: {t[k]}" for p, k in params)
            return f"fn {name}({args}) -> {t[ret]}"
        if style == "php":
            args = ", ".join(f"{t[k]} ${p}" for p, k in params)
            return f"function {name}({args}): {t[ret]}"
        return f"{'function' if style == 'js' else 'def'} {name}({', '.join(p for p, _ in params)})"
    return render


def _items(values: list[int]) -> str:
    return ", ".join(str(v) for v in values)


def _php(candidate: str, lines: list[str]) -> str:
    body = candidate.strip()
    body = body[5:] if body.startswith("<?php") else body
    body = body[:-2] if body.endswith("?>") else body
    return "<?php\n" + body + "\n\n" + "\n".join(lines) + "\n"


DIALECTS: dict[str, Dialect] = {d.language: d for d in (
    Dialect("python", "Python", {"int": "int", "str": "str", "list[int]": "list[int]"},
            lambda v: f"[{_items(v)}]", _sig({}, "python"),
            'print("@@rlhub {i}", {call})',
            lambda c, lines: c + "\n\n" + "\n".join(lines) + "\n"),
    Dialect("javascript", "JavaScript", {"int": "number", "str": "string", "list[int]": "number[]"},
            lambda v: f"[{_items(v)}]", _sig({}, "js"),
            'console.log("@@rlhub {i} " + String({call}));',
            lambda c, lines: c + "\n\n" + "\n".join(lines) + "\n"),
    Dialect("typescript", "TypeScript",
            {"int": "number", "str": "string", "list[int]": "number[]"},
            lambda v: f"[{_items(v)}]",
            _sig({"int": "number", "str": "string", "list[int]": "number[]"}, "ts"),
            'console.log("@@rlhub {i} " + String({call}));',
            lambda c, lines: c + "\n\n" + "\n".join(lines) + "\n"),
    Dialect("cpp", "C++", {"int": "long", "str": "std::string", "list[int]": "std::vector<long>"},
            lambda v: f"std::vector<long>{{{_items(v)}}}",
            _sig({"int": "long", "str": "std::string", "list[int]": "std::vector<long>"}, "c"),
            'std::cout << "@@rlhub {i} " << {call} << "\\n";',
            lambda c, lines: ("#include <iostream>\n#include <string>\n#include <vector>\n\n" + c
                              + "\n\nint main() {\n    " + "\n    ".join(lines) + "\n}\n"),
            "Use the standard library only; no main function."),
    Dialect("java", "Java", {"int": "long", "str": "String", "list[int]": "long[]"},
            lambda v: f"new long[]{{{_items(v)}}}",
            _sig({"int": "long", "str": "String", "list[int]": "long[]"}, "static"),
            'System.out.println("@@rlhub {i} " + Problem.{call});',
            lambda c, lines: ("import java.util.*;\n\n" + c + "\n\npublic class Main {\n"
                              "    public static void main(String[] args) {\n        "
                              + "\n        ".join(lines) + "\n    }\n}\n"),
            "Put it in a class `Problem` that is not public (imports of java.util are there)."),
    Dialect("csharp", "C#", {"int": "long", "str": "string", "list[int]": "long[]"},
            lambda v: f"new long[]{{{_items(v)}}}",
            _sig({"int": "long", "str": "string", "list[int]": "long[]"}, "static"),
            'System.Console.WriteLine("@@rlhub {i} " + Problem.{call});',
            lambda c, lines: (c + "\n\nstatic class Harness {\n    static void Main() {\n        "
                              + "\n        ".join(lines) + "\n    }\n}\n"),
            "Put it in a class `Problem`; no Main method."),
    Dialect("rust", "Rust", {"int": "i64", "str": "String", "list[int]": "Vec<i64>"},
            lambda v: f"vec![{_items(v)}]",
            _sig({"int": "i64", "str": "String", "list[int]": "Vec<i64>"}, "rust"),
            'println!("@@rlhub {i} {{}}", {call});',
            lambda c, lines: c + "\n\nfn main() {\n    " + "\n    ".join(lines) + "\n}\n",
            "No main function.", lambda text: f"String::from({c_string(text)})"),
    Dialect("ruby", "Ruby", {"int": "Integer", "str": "String", "list[int]": "Array"},
            lambda v: f"[{_items(v)}]", _sig({}, "ruby"),
            'puts "@@rlhub {i} #{{{call}}}"',
            lambda c, lines: c + "\n\n" + "\n".join(lines) + "\n"),
    Dialect("php", "PHP", {"int": "int", "str": "string", "list[int]": "array"},
            lambda v: f"[{_items(v)}]",
            _sig({"int": "int", "str": "string", "list[int]": "array"}, "php"),
            'echo "@@rlhub {i} ", {call}, "\\n";', _php,
            "Start with <?php."),
)}
# string literals: JSON's escapes hold in every dialect above but PHP's and Ruby's
# double-quoted strings, where `$` and `#{` interpolate: the families' strings have neither.


def parameters(signature: str) -> tuple[str, list[tuple[str, str]], str]:
    """``def f(a: list[int], b: int) -> int`` -> ``("f", [("a", "list[int]"), ("b", "int")],
    "int")``."""
    node = ast.parse(signature + ": ...").body[0]
    assert isinstance(node, ast.FunctionDef) and node.returns is not None
    params = [(a.arg, ast.unparse(a.annotation)) for a in node.args.args if a.annotation]
    return node.name, params, ast.unparse(node.returns)


def harness(dialect: Dialect, signature: str, cases: list[tuple[Any, ...]]) -> list[str]:
    """One line per case calling the candidate and printing ``@@rlhub <i> <result>``."""
    name, params, _ = parameters(signature)
    return [dialect.call.format(i=i, call=dialect.call_expr(name, params, args))
            for i, args in enumerate(cases)]


def results(stdout: str, count: int) -> list[str | None]:
    """The value printed for each case, or None where its line is missing or repeated."""
    seen: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        parts = line.strip().split(" ", 2)
        if len(parts) == 3 and parts[0] == MARK and parts[1].isdigit():
            seen.setdefault(int(parts[1]), []).append(parts[2].strip())
    return [seen[i][0] if len(seen.get(i, [])) == 1 else None for i in range(count)]
