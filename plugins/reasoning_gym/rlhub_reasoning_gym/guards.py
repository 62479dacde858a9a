"""Answer guards: keep a completion's answer from running code or hanging inside ``score_answer``.

Some reasoning-gym 0.1.25 scorers evaluate the answer they are given:

* ``eval(answer)`` (a partial-credit path for answers written as a Python list): string_insertion,
  spiral_matrix, binary_matrix, n_queens. ``__import__('os').system(...)`` would run.
* ``sympy.parse_expr(answer)``, which is ``eval`` after a token rewrite: countdown, puzzle24,
  polynomial_multiplication, simple_integration, intermediate_integration. Besides running code
  (``exec(chr(105)+...)`` works), ``9**9**9**9`` never finishes.

A guard inspects the answer's Python syntax tree without evaluating it and returns a reason when
the answer must not reach the scorer; the domain then scores the empty answer instead. Guards are
conservative by design: they accept every answer shape reasoning-gym itself produces (the contract
tests check each guarded dataset's gold answers), and nothing that can call, import, index or build
a huge number. ``tests/test_guards.py`` re-reads the installed scorers' source and fails when a
scorer that evaluates its input has no guard here.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

Guard = Callable[[str, frozenset[str]], "str | None"]

_LITERAL_NODES = (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict,
                  ast.UnaryOp, ast.USub, ast.UAdd, ast.Name, ast.Load)
_LITERAL_CONSTANTS = (str, int, float, bool, type(None))

_ARITHMETIC_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Call,
                     ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.USub, ast.UAdd, ast.Load)
#: Elementary functions and constants an algebra answer may name (sympy spellings).
FUNCTIONS = frozenset({
    "sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "acot", "asec", "acsc",
    "sinh", "cosh", "tanh", "coth", "asinh", "acosh", "atanh", "exp", "log", "ln", "sqrt", "Abs",
})
CONSTANTS = frozenset({"pi", "E", "I", "oo"})
MAX_DIGITS = 30  # per numeric literal
MAX_EXPONENT_WEIGHT = 100  # product of the literals in one exponent
MAX_EXPONENT_NODES = 24
MAX_POWER_NESTING = 2  # (x**2 + 1)**3 is fine, ((9**99)**99)**99 is not


def _parse(answer: str) -> ast.Expression | None:
    try:
        return ast.parse(answer, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def python_literal(answer: str, reference_calls: frozenset[str] = frozenset()) -> str | None:
    """Refuse answers that ``eval`` would run as code; plain literals and non-Python text pass.

    Text that does not parse as Python (the usual answer: ``1 0 1\\n0 1 1``) is harmless, because
    ``eval`` fails on it the same way. Bare names pass too (a string_insertion answer such as
    ``abcAde`` is one): looking a name up calls nothing. ``reference_calls`` is not used here.
    """
    tree = _parse(answer)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, _LITERAL_NODES):
            return f"only plain values are accepted here, not Python {type(node).__name__} syntax"
        if isinstance(node, ast.Constant) and not isinstance(node.value, _LITERAL_CONSTANTS):
            return f"only plain values are accepted here, not {type(node.value).__name__} literals"
    return None


def arithmetic_expression(answer: str,
                          reference_calls: frozenset[str] = frozenset()) -> str | None:
    """Refuse anything but arithmetic on numbers, variables and elementary functions.

    Accepted: ``+ - * / **``, parentheses, numeric literals of at most 30 digits, one- or
    two-letter variables, the names in :data:`FUNCTIONS` (called with one or two arguments) and
    :data:`CONSTANTS`. Exponents must be small (no powers inside, literals multiplying to at most
    100) and powers nest at most two deep, so every accepted answer evaluates quickly. Functions
    that reasoning-gym's own answer calls (``reference_calls``) are allowed as well: some
    intermediate_integration answers contain an unevaluated ``Integral(...)``, which would be a
    free pass on every other task.
    """
    tree = _parse(answer.replace("^", "**"))
    if tree is None:
        return "the answer is not a well-formed arithmetic expression"
    functions = FUNCTIONS | reference_calls
    for node in ast.walk(tree):
        reason = _arithmetic_node_problem(node, functions)
        if reason:
            return reason
    return _power_problem(tree.body, 0)


def _arithmetic_node_problem(node: ast.AST, functions: frozenset[str]) -> str | None:
    if not isinstance(node, _ARITHMETIC_NODES):
        return f"{type(node).__name__} syntax is not allowed in an arithmetic answer"
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            return f"the literal {node.value!r} is not a number"
        if len(str(node.value).replace(".", "").lstrip("-")) > MAX_DIGITS:
            return f"numbers may have at most {MAX_DIGITS} digits"
    if isinstance(node, ast.Name) and not _allowed_name(node.id, functions):
        return f"the name {node.id!r} is not a variable or a known function"
    if isinstance(node, ast.Call):
        ok = isinstance(node.func, ast.Name) and node.func.id in functions
        if not ok or node.keywords or not 1 <= len(node.args) <= 2:
            return "only elementary functions such as sin(x) or log(x) may be called"
    return None


def _allowed_name(name: str, functions: frozenset[str]) -> bool:
    return name in functions or name in CONSTANTS or (len(name) <= 2 and name.isascii()
                                                      and name.isalpha())


def _power_problem(node: ast.AST, nesting: int) -> str | None:
    """Walk the tree iteratively, bounding power nesting and exponent size."""
    stack = [(node, nesting)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, ast.BinOp) and isinstance(current.op, ast.Pow):
            if depth + 1 > MAX_POWER_NESTING:
                return f"powers may nest at most {MAX_POWER_NESTING} deep"
            reason = _exponent_problem(current.right)
            if reason:
                return reason
            stack.append((current.left, depth + 1))
        else:
            stack.extend((child, depth) for child in ast.iter_child_nodes(current))
    return None


def _exponent_problem(exponent: ast.AST) -> str | None:
    nodes = list(ast.walk(exponent))
    if len(nodes) > MAX_EXPONENT_NODES:
        return "the exponent is too complicated"
    weight = 1.0
    for node in nodes:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            return "an exponent may not contain another power"
        if isinstance(node, ast.Constant):
            weight *= max(1.0, abs(float(node.value)))
    if weight > MAX_EXPONENT_WEIGHT:
        return f"exponents must be small (literals multiplying to at most {MAX_EXPONENT_WEIGHT})"
    return None


#: Which guard protects which dataset's scorer (audited against reasoning-gym 0.1.25).
GUARDS: dict[str, Guard] = {
    "binary_matrix": python_literal,
    "n_queens": python_literal,
    "spiral_matrix": python_literal,
    "string_insertion": python_literal,
    "countdown": arithmetic_expression,
    "intermediate_integration": arithmetic_expression,
    "polynomial_multiplication": arithmetic_expression,
    "puzzle24": arithmetic_expression,
    "simple_integration": arithmetic_expression,
}

#: Scorers whose source evaluates something, but never the answer (kept for the audit test).
EVALUATES_ONLY_THE_TASK: dict[str, str] = {
    "number_sorting": "eval(entry['answer']) parses the task's own answer, not the completion",
}


def called_names(reference: str | None) -> frozenset[str]:
    """The function names a (trusted) reference answer calls, e.g. ``Integral``."""
    tree = _parse(reference.replace("^", "**")) if reference else None
    if tree is None:
        return frozenset()
    return frozenset(node.func.id for node in ast.walk(tree)
                     if isinstance(node, ast.Call) and isinstance(node.func, ast.Name))


def refusal(dataset: str, answer: str, reference: str | None = None) -> str | None:
    """Why ``answer`` must not reach ``dataset``'s scorer, or None when it may.

    ``reference`` is reasoning-gym's own answer to the task, whose function names are allowed.
    """
    guard = GUARDS.get(dataset)
    return guard(answer, called_names(reference)) if guard else None
