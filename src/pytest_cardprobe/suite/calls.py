"""Suite stage: what a call suite's case expects (``expect:``), as plain frozen records.

A call suite (``judge: call``) declares the tools a team ships; each case says which call(s)
a good answer makes, or that none should be made. This module holds the records of the
``expect:``, ``results:`` and ``final:`` parts of a case and reads argument matchers; the
rest of a case is read by ``suite/expectations.py``. Parsing reports through a ``fail``
callback that raises the loader's :class:`SuiteError` with the file, key path and line.

Matching values against these records is the judge's job (``judge/call.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_cardprobe.suite.errors import Fail, KeyPath
from pytest_cardprobe.suite.patterns import PatternError, pattern_problem, search

#: Matcher names an argument matcher mapping may use (``ignore_case`` is a modifier).
#: The judge's records: ``absent`` (value None), ``optional`` and ``each`` (value: the inner
#: :class:`Matcher`), ``length`` (value: an inclusive ``(lo, hi)`` tuple of ints).
MATCHERS: tuple[str, ...] = (
    "equals",
    "one_of",
    "regex",
    "contains",
    "type",
    "range",
    "any",
    "absent",
    "optional",
    "each",
    "length",
)
MODIFIERS: tuple[str, ...] = ("ignore_case",)
#: The kinds of ``expect:`` (the suite schema's ``expect`` definition says how each is written).
EXPECT_KINDS: tuple[str, ...] = ("call", "calls", "no_call", "sequence")
#: Turns a tool loop may take when neither the case nor the suite says (``max_turns``).
DEFAULT_MAX_TURNS = 5


@dataclass(frozen=True)
class Matcher:
    """One argument matcher: ``kind`` is a name of :data:`MATCHERS`; ``value`` its operand."""

    kind: str
    value: Any = field(hash=False, default=None)
    ignore_case: bool = False

    def describe(self) -> str:
        """How the matcher reads in a label, e.g. ``regex 'src/.*'``."""
        case = " (ignoring case)" if self.ignore_case else ""
        if self.kind == "equals":
            return repr(self.value) + case
        if self.kind == "any":
            return "any value"
        if self.kind == "absent":
            return "absent"
        if self.kind == "optional":
            return f"{self.value.describe()}{case} or absent"
        if self.kind == "each":
            return f"each {self.value.describe()}{case}"
        if self.kind in ("range", "length"):
            return f"{self.kind} [{self.value[0]}, {self.value[1]}]"
        return f"{self.kind.replace('_', ' ')} {self.value!r}{case}"


@dataclass(frozen=True)
class CallSpec:
    """An expected call: the tool's name and matchers for the arguments that matter."""

    name: str
    args: tuple[tuple[str, Matcher], ...] = ()


@dataclass(frozen=True)
class FinalCheck:
    """A matcher on the model's final text: ``contains``, ``regex`` or ``not_contains``."""

    kind: str
    value: str
    ignore_case: bool = False


@dataclass(frozen=True)
class ScriptedResult:
    """What the "tool" returns to a call of ``name`` whose arguments match ``args``."""

    name: str
    args: tuple[tuple[str, Matcher], ...]
    content: str


@dataclass(frozen=True)
class Expectation:
    """A case's ``expect:``. ``kind`` is one of :data:`EXPECT_KINDS`.

    ``calls`` holds one spec for ``call``, several for ``calls`` (one turn) and
    ``sequence`` (across turns, in order), none for ``no_call``.
    """

    kind: str
    calls: tuple[CallSpec, ...] = ()
    ordered: bool = False
    final: tuple[FinalCheck, ...] = ()

    @property
    def multi_turn(self) -> bool:
        """A sequence runs a tool loop; the other kinds judge the first reply."""
        return self.kind == "sequence"


# --------------------------------------------------------------------------- parsing

#: Matchers that compare strings, so ``ignore_case`` means something beside them; ``optional``
#: and ``each`` pass it on to the matcher they hold.
CASE_MATCHERS: tuple[str, ...] = ("equals", "one_of", "regex", "contains", "optional", "each")


def parse_matcher(value: Any, key: KeyPath, fail: Fail, *, checked: bool = False) -> Matcher:
    """An argument matcher: a literal (any non-mapping JSON value) or a matcher mapping.

    The suite schema's ``matcher`` definition says what a matcher looks like; ``checked``
    says the caller has validated ``value`` with it already (the loader validates the whole
    suite first). What a schema cannot say is checked here: regular expressions compile,
    ``low <= high``, and ``ignore_case`` passed on by ``optional``/``each`` fits their matcher.
    """
    if not checked:
        from pytest_cardprobe.suite.schema import first_problem

        found = first_problem(value, "matcher")
        if found is not None:
            fail((*key, *found[0]), found[1])
    return _matcher(value, key, fail, inherited=False)


def _matcher(value: Any, key: KeyPath, fail: Fail, *, inherited: bool) -> Matcher:
    if not isinstance(value, dict):
        return Matcher("equals", value, inherited)
    ignore_case = bool(value.get("ignore_case", False)) or inherited
    kind = next(k for k in value if k != "ignore_case")
    operand = value[kind]
    where = (*key, kind)
    if inherited and kind not in CASE_MATCHERS:
        fail(where, f"ignore_case (given beside the enclosing matcher) does not apply to {kind}")
    if kind == "regex":
        problem = pattern_problem(operand, ignore_case)
        if problem:
            fail(where, problem)
    elif kind == "range" and operand[0] > operand[1]:
        fail(where, f"expected [low, high] with two numbers, low <= high; got {operand!r}")
    elif kind == "length":
        low, high = int(operand[0]), int(operand[1])
        if low > high:
            fail(
                where,
                f"expected [low, high] with two whole numbers >= 0, low <= high; got {operand!r}",
            )
        operand = (low, high)
    elif kind in ("optional", "each"):
        operand = _matcher(operand, where, fail, inherited=ignore_case)
    elif kind == "absent":
        operand = None  # `absent: true` says it all
    return Matcher(kind, operand, ignore_case)


def declared_names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """Names of the functions in an OpenAI/Ollama ``tools`` list."""
    names: list[str] = []
    for tool in tools:
        fn = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            names.append(fn["name"])
    return names


#: Keywords under which a parameters schema may say what its properties are without listing
#: them in ``properties``: argument names cannot be checked against such a schema by name.
COMPOSED: tuple[str, ...] = (
    "$ref",
    "allOf",
    "anyOf",
    "oneOf",
    "if",
    "dependentSchemas",
    "$dynamicRef",
)


def admits(parameters: Mapping[str, Any], name: str) -> bool:
    """Whether a tool whose ``parameters`` are these takes an argument called ``name``.

    One rule for the loader (an ``args:`` key) and the judge (an argument a model sent): the
    name is in ``properties``; or ``additionalProperties`` is ``true`` or a schema (which
    then says what its value must be); or a ``patternProperties`` pattern matches it; or the
    parameters list no ``properties`` but compose them (``allOf``, ``$ref``, …), so only the
    JSON Schema can tell. Otherwise not, though JSON Schema itself admits any name by
    default: a tool with no ``properties`` (or no ``parameters``) takes no arguments.
    """
    properties = parameters.get("properties")
    if isinstance(properties, Mapping) and name in properties:
        return True
    extra = parameters.get("additionalProperties")
    if extra is True or isinstance(extra, Mapping):
        return True
    patterns = parameters.get("patternProperties")
    if isinstance(patterns, Mapping) and any(_searches(p, name) for p in patterns):
        return True
    return not properties and any(k in parameters for k in COMPOSED)


def _searches(pattern: Any, name: str) -> bool:
    # JSON Schema patterns are unanchored (a search), run by RE2 like every pattern of a
    # suite or tool (suite/patterns.py): a model picks the name.
    try:
        return isinstance(pattern, str) and search(pattern, name)
    except PatternError:
        return False


def parameters_of(tools: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    """The ``parameters`` JSON Schema of the declared tool ``name``."""
    for tool in tools:
        fn = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and fn.get("name") == name:
            params = fn.get("parameters")
            return params if isinstance(params, Mapping) else {}
    return None
