"""What the fuzz tests share: hostile leaves, documents built around them, and their text.

A fuzz input is a *valid* document (a shipped suite, tools file, cassette, baseline or
report, read as a tree) with a few hostile edits: a leaf replaced by NaN, an overflowing or
a subnormal number, a 400-digit integer, control characters, a lone surrogate, a very long
string; a value of the wrong type; a key written twice; a value wrapped in deep nesting. The
tree is then written out as JSON or YAML *text* by the writers here, which can say what
``json.dumps`` and ``yaml.safe_dump`` refuse to (``NaN``, ``1e999``, duplicate keys), and the
bytes may be corrupted (invalid UTF-8, a UTF-16 byte-order mark, a NUL).

Every fuzz test runs with :data:`FUZZ` settings: a fixed seed (``derandomize``), no example
database (nothing written to the working folder), a bounded number of examples.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

#: Secrets that cannot occur by chance; a test puts them in the input's secret fields (a
#: password in a URL, a header value, an API key in a body) and looks for them in outputs.
PASSWORD = "S3CRETPW"
TOKEN = "T0KENVALUE"
KEY = "K3YVALUE"
API_KEY = "AP1KEYVALUE"
SECRETS = (PASSWORD, TOKEN, KEY, API_KEY)
SERVER = f"http://alice:{PASSWORD}@127.0.0.1:9/v?key={KEY}"


def fuzz_settings(examples: int) -> Any:
    """Fixed seed, no database, no per-example deadline (the machine is shared), bounded."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
            HealthCheck.filter_too_much,
        ],
    )


# --------------------------------------------------------------------------- the tree


@dataclass(frozen=True)
class Raw:
    """A number written verbatim: ``json`` in JSON text, ``yaml`` in YAML text."""

    json: str
    yaml: str


@dataclass(frozen=True)
class Pairs:
    """A mapping written as these pairs in this order: the same key may come twice."""

    items: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Deep:
    """``value`` inside ``depth`` nested lists."""

    depth: int
    value: Any = None


HUGE_INT = "1" + "0" * 400  # parses as a Python int, overflows a float
TOO_MANY_DIGITS = "9" * 5000  # above Python's 4300-digit limit for int(str)
NUMBERS = (
    Raw("NaN", ".nan"),
    Raw("Infinity", ".inf"),
    Raw("-Infinity", "-.inf"),
    Raw("1e999", "1.0e+999"),
    Raw("-1e400", "-1.0e+400"),
    Raw("1e308", "1.0e+308"),
    Raw("1.7976931348623157e308", "1.7976931348623157e+308"),
    Raw("1e-320", "1.0e-320"),
    Raw("5e-324", "5.0e-324"),
    Raw(HUGE_INT, HUGE_INT),
    Raw("-" + HUGE_INT, "-" + HUGE_INT),
    Raw(TOO_MANY_DIGITS, TOO_MANY_DIGITS),
    Raw("-0", "-0"),
    Raw("0.0", "0.0"),
    Raw(str(2**63), str(2**63)),
    Raw(str(-(2**63) - 1), str(-(2**63) - 1)),
)
# YAML-only spellings of values JSON has no word for (dates, binary, hex, tags, sexagesimal);
# in JSON text they are plain strings.
YAML_ONLY = tuple(
    Raw(json.dumps(text), text)
    for text in (
        "2024-13-45",
        "2024-01-01",
        "2024-01-01 10:00:00",
        "0x" + "f" * 400,
        "0o7",
        "!!binary aGVsbG8=",
        "!!float abc",
        "!!int 1_x",
        "!!python/object:os.system x",
        "1:20:30",
        "yes",
        "~",
        "&a [*a]",
    )
)
ODD_TEXT = (
    "",
    " ",
    "\x00",
    "\x1b[2J\x1b[31mred\x07",
    "line\nbreak\r\n",
    "\u2028\u2029\x85",
    "\u202eevil\u202c",
    "\ufeffbom",
    "\ud800",
    "\udfff lone",
    "😀 é 中",
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "| md | table |",
    "%s %d {0} {name}",
    '"quoted" \\ back',
    "x" * 300,
    "y" * 20_000,
)


def _chars() -> st.SearchStrategy[str]:
    # Every code point, surrogates and controls included.
    return st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())


TEXT = st.one_of(st.sampled_from(ODD_TEXT), st.text(_chars(), max_size=24))
SCALAR = st.one_of(
    st.sampled_from(NUMBERS),
    TEXT,
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)


def hostile_leaf(yaml_too: bool = False) -> st.SearchStrategy[Any]:
    """One hostile value: a number, text, a wrong type, deep nesting, an empty container."""
    options: list[st.SearchStrategy[Any]] = [
        SCALAR,
        st.builds(Deep, st.sampled_from([65, 100, 3000]), SCALAR),
        st.just([]),
        st.just({}),
        st.lists(SCALAR, max_size=3),
        st.dictionaries(TEXT, SCALAR, max_size=3),
    ]
    if yaml_too:
        options.append(st.sampled_from(YAML_ONLY))
    return st.one_of(*options)


NUMBER = st.one_of(
    st.sampled_from(NUMBERS),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)


def alike(value: Any) -> st.SearchStrategy[Any]:
    """A hostile value of ``value``'s kind: text for text, a number for a number."""
    if isinstance(value, str):
        return TEXT
    if isinstance(value, bool):
        return st.one_of(st.booleans(), st.sampled_from(NUMBERS[:3]))
    if isinstance(value, int | float):
        return NUMBER
    if isinstance(value, list):
        items = st.one_of(*(alike(v) for v in value[:3])) if value else TEXT
        return st.lists(items, max_size=4)
    if isinstance(value, dict):
        return st.just(value)  # its leaves are edited where they are
    return st.one_of(st.none(), st.sampled_from(NUMBERS[:3]))


def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return list(node)
    if isinstance(node, list):
        return list(range(len(node)))
    return []


def paths(node: Any, limit: int = 4000) -> list[tuple[Any, ...]]:
    """Every path into ``node`` (the root first), breadth first, at most ``limit``."""
    found: list[tuple[Any, ...]] = [()]
    queue: list[tuple[tuple[Any, ...], Any]] = [((), node)]
    while queue and len(found) < limit:
        path, here = queue.pop(0)
        for key in _children(here):
            found.append((*path, key))
            queue.append(((*path, key), here[key]))
    return found


def get(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


def _put(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    """``node`` with the value at ``path`` replaced (copies along the path only)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        copy: Any = dict(node)
    else:
        copy = list(node)
    copy[head] = _put(node[head], rest, value)
    return copy


KINDS = ("alike",) * 8 + ("leaf",) * 4 + ("twice", "twice", "drop", "extra", "wrap")
#: Edits that keep every value's type: hostile numbers and text, keys written twice.
SAME_TYPES = ("alike", "alike", "alike", "twice")


@st.composite
def mutated(
    draw: st.DrawFn,
    base: Any,
    *,
    edits: int = 2,
    yaml_too: bool = False,
    focus: Callable[[tuple[Any, ...]], bool] = lambda path: True,
    kinds: tuple[str, ...] = KINDS,
) -> Any:
    """``base`` with 1 to ``edits`` hostile edits at paths ``focus`` accepts, of ``kinds``
    (``alike``: a hostile value of the same kind; ``leaf``: any hostile value; ``twice``: a
    key written twice; ``drop``: a key or item left out; ``extra``: an unknown key;
    ``wrap``: the value inside deep nesting)."""
    tree = base
    for _ in range(draw(st.integers(1, edits))):
        where = [p for p in paths(tree) if focus(p)] or [()]
        path = draw(st.sampled_from(where))
        here = get(tree, path)
        # Hypothesis draws small integers most often: the common edits come first.
        kind = kinds[draw(st.integers(0, len(kinds) - 1))]
        if kind == "alike":
            # A hostile value of the kind the document has there: the structure stays valid.
            tree = _put(tree, path, draw(alike(here)))
            continue
        if kind == "twice" and isinstance(here, dict) and here:
            key = draw(st.sampled_from(sorted(here)))
            again = draw(st.one_of(st.just(here[key]), alike(here[key])))
            items = [*here.items()]
            at = draw(st.integers(0, len(items)))
            items.insert(at, (key, again))
            tree = _put(tree, path, Pairs(tuple(items)))
        elif kind == "drop" and path:
            parent = get(tree, path[:-1])
            if isinstance(parent, dict):
                tree = _put(tree, path[:-1], {k: v for k, v in parent.items() if k != path[-1]})
            elif isinstance(parent, list):
                tree = _put(tree, path[:-1], [v for i, v in enumerate(parent) if i != path[-1]])
        elif kind == "extra" and isinstance(here, dict):
            name = draw(TEXT)
            tree = _put(tree, path, {**here, name: draw(hostile_leaf(yaml_too))})
        elif kind == "wrap":
            tree = _put(tree, path, Deep(draw(st.sampled_from([1, 2, 70, 2000])), here))
        elif kind == "leaf":
            tree = _put(tree, path, draw(hostile_leaf(yaml_too)))
        else:  # an edit that does not fit here: a value of the same kind instead
            tree = _put(tree, path, draw(alike(here)))
        if isinstance(tree, Pairs | Deep | Raw):
            break  # the root itself was replaced: nothing left to walk into
    return tree


@st.composite
def renumbered(
    draw: st.DrawFn,
    base: Any,
    focus: Callable[[tuple[Any, ...]], bool],
    edits: int = 3,
    numbers: tuple[Raw, ...] = NUMBERS,
) -> Any:
    """``base`` with 1 to ``edits`` of the number leaves ``focus`` accepts replaced by edge
    ``numbers`` (by default all of :data:`NUMBERS`: 400-digit integers, NaN, ``1e999``,
    subnormals, 2**63): where ``mutated`` makes one of those now and then, every edit here
    is one."""
    where = [p for p in paths(base) if focus(p) and type(get(base, p)) in (int, float)]
    tree = base
    for path in draw(st.lists(st.sampled_from(where), min_size=1, max_size=edits, unique=True)):
        tree = _put(tree, path, draw(st.sampled_from(numbers)))
    return tree


#: Counts at the edges: too large for a float or an int64, just above and at the bound of a
#: billion (``score/bounds.py``), negative, a float where an integer belongs, and small.
EDGE_COUNTS = tuple(
    Raw(text, text)
    for text in (
        HUGE_INT,
        str(2**63),
        str(10**9 + 1),
        str(10**9),
        "-1",
        "1.5",
        "1e308",
        TOO_MANY_DIGITS,
        "0",
        "1",
    )
)


# --------------------------------------------------------------------------- writing text


def to_json(node: Any, ascii_only: bool = True) -> str:
    """``node`` as JSON text; :class:`Raw` numbers verbatim, :class:`Pairs` keys repeated."""
    if isinstance(node, Raw):
        return node.json
    if isinstance(node, Deep):
        return "[" * node.depth + to_json(node.value, ascii_only) + "]" * node.depth
    if isinstance(node, Pairs):
        items: Iterable[tuple[Any, Any]] = node.items
    elif isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        return "[" + ",".join(to_json(v, ascii_only) for v in node) + "]"
    elif isinstance(node, str):
        return json.dumps(node, ensure_ascii=ascii_only)
    elif isinstance(node, float):
        return json.dumps(node) if node == node and abs(node) != float("inf") else "NaN"
    else:
        return json.dumps(node)
    return (
        "{"
        + ",".join(f"{json.dumps(str(k), ensure_ascii=ascii_only)}:{to_json(v, ascii_only)}"
                   for k, v in items)
        + "}"
    )  # fmt: skip


_YAML_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_ .-]*")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"}


def yaml_quote(text: str) -> str:
    """``text`` as a YAML double-quoted scalar; what YAML cannot hold raw is escaped."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        elif code in (0x2028, 0x2029, 0xFEFF, 0xFFFE, 0xFFFF):
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _yaml_key(key: Any) -> str:
    text = str(key)
    if _YAML_PLAIN.fullmatch(text) and text.lower() not in _YAML_WORDS and text.strip() == text:
        return text
    return yaml_quote(text)


def _yaml_flow(node: Any) -> str:
    if isinstance(node, Raw):
        return node.yaml
    if isinstance(node, Deep):
        return "[" * node.depth + _yaml_flow(node.value) + "]" * node.depth
    if isinstance(node, Pairs):
        return "{" + ", ".join(f"{_yaml_key(k)}: {_yaml_flow(v)}" for k, v in node.items) + "}"
    if isinstance(node, dict):
        return "{" + ", ".join(f"{_yaml_key(k)}: {_yaml_flow(v)}" for k, v in node.items()) + "}"
    if isinstance(node, list):
        return "[" + ", ".join(_yaml_flow(v) for v in node) + "]"
    if isinstance(node, str):
        return yaml_quote(node)
    if node is None:
        return "null"
    if isinstance(node, bool):
        return "true" if node else "false"
    if isinstance(node, float):
        if node != node:
            return ".nan"
        if abs(node) == float("inf"):
            return ".inf" if node > 0 else "-.inf"
        text = repr(node)
        # YAML 1.1 floats need a dot and a signed exponent: 1e-05 would read as a string.
        mantissa, _, exponent = text.partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        if exponent and exponent[0] not in "+-":
            exponent = "+" + exponent
        return mantissa + (f"e{exponent}" if exponent else "")
    return str(node)


def to_yaml(node: Any, indent: int = 0) -> str:
    """``node`` as YAML text: block style for the two outer levels, flow style inside."""
    pad = " " * indent
    items: Iterable[tuple[Any, Any]]
    if isinstance(node, Pairs):
        items = node.items
    elif isinstance(node, dict) and node:
        items = node.items()
    elif isinstance(node, list) and node and indent < 4:
        return "".join(f"{pad}- {_yaml_flow(v)}\n" for v in node)
    else:
        return pad + _yaml_flow(node) + "\n"
    lines = []
    for key, value in items:
        block = indent < 2 and (
            (isinstance(value, dict | Pairs) and value) or isinstance(value, list)
        )
        if block and (not isinstance(value, list) or value):
            lines.append(f"{pad}{_yaml_key(key)}:\n{to_yaml(value, indent + 2)}")
        else:
            lines.append(f"{pad}{_yaml_key(key)}: {_yaml_flow(value)}\n")
    return "".join(lines)


CORRUPTIONS = (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf", b"\x80\x80")


@st.composite
def corrupted(draw: st.DrawFn, text: str, rate: float = 0.08) -> bytes:
    """``text`` as UTF-8, sometimes with bad bytes spliced in or a UTF-16 byte-order mark."""
    raw = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 99)) < 100 - rate * 100:  # (small draws are the common ones)
        return raw
    how = draw(st.sampled_from(["splice", "splice", "bom16", "truncate"]))
    if how == "bom16":
        return b"\xff\xfe" + raw
    if how == "truncate":
        return raw[: draw(st.integers(0, len(raw)))]
    at = draw(st.integers(0, len(raw)))
    return raw[:at] + draw(st.sampled_from(CORRUPTIONS)) + raw[at:]


# --------------------------------------------------------------------------- checks


def leaked(text: str, secrets: Iterable[str] = SECRETS) -> list[str]:
    """The secrets found in ``text``."""
    return [s for s in secrets if s in text]


def listing(folder: Path, skip: Path | None = None) -> dict[str, int]:
    """Every path under ``folder`` with its size (``skip`` and what is below it left out)."""
    found: dict[str, int] = {}
    for path in folder.rglob("*"):
        if skip is not None and (path == skip or skip in path.parents):
            continue
        try:
            found[str(path.relative_to(folder))] = path.lstat().st_size
        except OSError:
            continue
    return found


ROOT = Path(__file__).resolve().parents[2]
