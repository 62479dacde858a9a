"""The calculator and unit-converter tools: pure functions with bounded cost, no code execution.

:func:`calculate` evaluates an arithmetic expression by walking its Python AST: numbers, ``+ - * /
// % **``, parentheses, and a few named functions and constants. Exponents, factorials and
intermediate sizes are bounded, so no input can make it slow. :func:`convert` handles
``"<number> <unit> to <unit>"`` for length, mass, time, volume, speed and temperature.
Both raise :class:`rlhub_agentic.episode.ToolInputError` with a message for the policy.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from typing import Any

from rlhub_agentic.episode import ToolInputError

MAX_EXPRESSION = 500
MAX_MAGNITUDE = 1e100
MAX_EXPONENT = 200

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt, "log": math.log, "log10": math.log10, "exp": math.exp, "abs": abs,
    "round": round, "floor": math.floor, "ceil": math.ceil, "min": min, "max": max,
    "sin": math.sin, "cos": math.cos, "tan": math.tan,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def _bounded(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolInputError("the expression must evaluate to a number.")
    if abs(value) > MAX_MAGNITUDE:
        raise ToolInputError(f"a value exceeds {MAX_MAGNITUDE:g}; the calculator stops there.")
    return value


def _power(base: Any, exponent: Any) -> Any:
    if abs(exponent) > MAX_EXPONENT:
        raise ToolInputError(f"exponents are limited to {MAX_EXPONENT} in absolute value.")
    if base == 0 and exponent < 0:
        raise ToolInputError("zero cannot be raised to a negative power.")
    result = base ** exponent
    if isinstance(result, complex):
        raise ToolInputError("the result is not a real number.")
    return result


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return _bounded(node.value)
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            return _bounded(_power(left, right))
        op = _BINARY.get(type(node.op))
        if op is not None:
            return _bounded(op(left, right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fn = _FUNCTIONS.get(node.func.id)
        if fn is not None:
            return _bounded(fn(*(_evaluate(arg) for arg in node.args)))
    raise ToolInputError(f"unsupported syntax {ast.unparse(node)[:60]!r}; use numbers, + - * / // "
                         f"% **, parentheses and {', '.join(sorted(_FUNCTIONS))}.")


def format_number(value: float | int) -> str:
    """A number as the tools print it: integers exactly, floats to 12 significant digits."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.12g}"


def calculate(expression: str) -> str:
    """The value of ``expression`` as text; see the module docstring for what is allowed."""
    text = expression.strip().replace("^", "**").replace("×", "*").replace("÷", "/")
    if not text:
        raise ToolInputError("the expression was empty; write e.g. 2*(3+4).")
    if len(text) > MAX_EXPRESSION:
        raise ToolInputError(f"the expression has {len(text)} characters; the limit is "
                             f"{MAX_EXPRESSION}.")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ToolInputError(f"could not parse {text[:80]!r}: {exc.msg}.") from None
    except (RecursionError, MemoryError, ValueError):
        raise ToolInputError("the expression is nested too deeply.") from None
    try:
        return format_number(_evaluate(tree))
    except ToolInputError:
        raise
    except ZeroDivisionError:
        raise ToolInputError("division by zero.") from None
    except RecursionError:
        raise ToolInputError("the expression is nested too deeply.") from None
    except (ValueError, OverflowError, TypeError) as exc:
        raise ToolInputError(f"could not evaluate: {exc}.") from None


# -- unit conversion ---------------------------------------------------------------------------

# Each unit: (dimension, factor to the SI unit). Temperature is affine and handled apart.
UNITS: dict[str, tuple[str, float]] = {
    "m": ("length", 1.0), "km": ("length", 1000.0), "cm": ("length", 0.01),
    "mm": ("length", 0.001), "mi": ("length", 1609.344), "yd": ("length", 0.9144),
    "ft": ("length", 0.3048), "in": ("length", 0.0254), "nmi": ("length", 1852.0),
    "kg": ("mass", 1.0), "g": ("mass", 0.001), "mg": ("mass", 1e-6), "t": ("mass", 1000.0),
    "lb": ("mass", 0.45359237), "oz": ("mass", 0.028349523125),
    "s": ("time", 1.0), "min": ("time", 60.0), "h": ("time", 3600.0), "day": ("time", 86400.0),
    "l": ("volume", 0.001), "ml": ("volume", 1e-6), "m3": ("volume", 1.0),
    "gal": ("volume", 0.003785411784), "qt": ("volume", 0.000946352946),
    "cup": ("volume", 0.0002365882365), "floz": ("volume", 2.95735295625e-5),
    "m/s": ("speed", 1.0), "km/h": ("speed", 1000 / 3600), "mph": ("speed", 1609.344 / 3600),
    "kn": ("speed", 1852 / 3600), "ft/s": ("speed", 0.3048),
}
ALIASES = {
    "meter": "m", "meters": "m", "metre": "m", "kilometer": "km", "kilometers": "km",
    "mile": "mi", "miles": "mi", "foot": "ft", "feet": "ft", "inch": "in", "inches": "in",
    "yard": "yd", "yards": "yd", "kilogram": "kg", "kilograms": "kg", "gram": "g", "grams": "g",
    "pound": "lb", "pounds": "lb", "lbs": "lb", "ounce": "oz", "ounces": "oz", "tonne": "t",
    "sec": "s", "second": "s", "seconds": "s", "minute": "min", "minutes": "min", "hr": "h",
    "hour": "h", "hours": "h", "days": "day", "liter": "l", "liters": "l", "litre": "l",
    "gallon": "gal", "gallons": "gal", "quart": "qt", "cups": "cup", "kph": "km/h",
    "knot": "kn", "knots": "kn", "mps": "m/s", "fl oz": "floz", "fl_oz": "floz",
    "celsius": "c", "°c": "c", "fahrenheit": "f", "°f": "f", "kelvin": "k",
}
TEMPERATURES = ("c", "f", "k")
_CONVERT = re.compile(r"^\s*([-+]?[\d,]*\.?\d+(?:e[-+]?\d+)?)\s*(.+?)\s+(?:to|in|->)\s+(.+?)\s*$",
                      re.IGNORECASE)


def unit_name(text: str) -> str:
    """The canonical name of a unit, or raise naming the known units."""
    key = ALIASES.get(text.strip().lower(), text.strip().lower())
    if key in UNITS or key in TEMPERATURES:
        return key
    known = ", ".join(sorted(UNITS) + ["C", "F", "K"])
    raise ToolInputError(f"unknown unit {text.strip()[:30]!r}; known units: {known}.")


def _to_kelvin(value: float, unit: str) -> float:
    return {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[unit]


def _from_kelvin(value: float, unit: str) -> float:
    return {"c": value - 273.15, "f": (value - 273.15) * 9 / 5 + 32, "k": value}[unit]


def convert_value(value: float, source: str, target: str) -> float:
    """``value`` in unit ``source`` expressed in unit ``target`` (canonical names)."""
    if source in TEMPERATURES or target in TEMPERATURES:
        if not (source in TEMPERATURES and target in TEMPERATURES):
            raise ToolInputError(f"cannot convert between {source} and {target}.")
        return _from_kelvin(_to_kelvin(value, source), target)
    (dim_a, fa), (dim_b, fb) = UNITS[source], UNITS[target]
    if dim_a != dim_b:
        raise ToolInputError(f"cannot convert {dim_a} ({source}) to {dim_b} ({target}).")
    return value * fa / fb


def convert(request: str) -> str:
    """Answer ``"<number> <unit> to <unit>"`` with ``"<number> <unit> = <number> <unit>"``."""
    match = _CONVERT.match(request)
    if not match:
        raise ToolInputError(f"expected '<number> <unit> to <unit>' (e.g. 3.5 mi to km), found "
                             f"{request.strip()[:80]!r}.")
    value = float(match.group(1).replace(",", ""))
    source, target = unit_name(match.group(2)), unit_name(match.group(3))
    result = convert_value(value, source, target)
    return f"{format_number(value)} {source} = {format_number(result)} {target}"
