"""Text shown to a person or used as a name: control characters escaped, hidden ones refused.

A leaf: every part of the package shows model text (escaped) or takes names (checked) through
these rules, so there is one definition of what a terminal, a test id or a shell command may
hold.
"""

from __future__ import annotations

import shlex
import unicodedata


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# C0 and C1 controls, DEL, the Unicode line separators and the bidi overrides and
# isolates (they reorder what a terminal or CI log shows), each shown as an escape.
_CONTROLS = [
    *range(0x20),
    *range(0x7F, 0xA0),
    0x2028,
    0x2029,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]
_ESCAPES = {code: _escape(code) for code in _CONTROLS} | {0x0A: "\\n", 0x09: "\\t"}
_ESCAPES_KEEP_LINES = {k: v for k, v in _ESCAPES.items() if k not in (0x0A, 0x09)}


def escape_control(text: str, keep_newlines: bool = False) -> str:
    """Model text made safe for a terminal: control characters shown as escapes.

    An ANSI escape in a reply would otherwise recolour or rewrite the reader's terminal.
    ``keep_newlines`` leaves line breaks and tabs as they are (multi-line display).
    """
    return text.translate(_ESCAPES_KEEP_LINES if keep_newlines else _ESCAPES)


#: Categories no name may hold (controls, bidi overrides and other formatting, separators).
_NOT_IN_NAMES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def hidden_character(text: str) -> str | None:
    """The first character of ``text`` a screen would not show as itself (a control, a bidi
    override, a zero-width one) as ``U+202E RIGHT-TO-LEFT OVERRIDE``; else None."""
    for char in text:
        if not char.isprintable() and unicodedata.category(char) in _NOT_IN_NAMES:
            return f"U+{ord(char):04X} {unicodedata.name(char, '')}".rstrip()
    return None


def name_problem(name: str) -> str | None:
    """Why ``name`` (of a model, suite, case or tool) would read as another name, or None."""
    found = hidden_character(name)
    return found and (
        f"holds {found}, a control or invisible formatting character that would make it "
        "read as another name in test ids, terminals and shell commands; remove it"
    )


def model_problem(name: str) -> str | None:
    """Why ``name`` cannot be a model name, or None (the pytest options and init use it).

    Names like ``library/llama3`` or ``hf.co/org/repo:Q4`` are real Ollama names, so a ``/``
    between parts is fine; what looks like a path (empty, ``.``/``..`` parts, a leading
    ``/``, a backslash) or holds whitespace or a character a screen hides
    (:func:`name_problem`) is refused: it lands in file names, test ids and commands.
    """
    if not name.strip():
        return "is empty"
    if any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        # How Python hands over command-line bytes that are not UTF-8 (surrogate escapes).
        return "holds bytes that are not UTF-8 text"
    if any(c.isspace() or ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c == "\\" for c in name):
        return "holds whitespace, a backslash or control characters"
    if name_problem(name):
        return name_problem(name)
    if name.startswith("/") or any(part in ("", ".", "..") for part in name.split("/")):
        return "looks like a file path, not a model name"
    return None


def shell_quoted(text: str) -> str:
    """``text`` as one shell word that shows every character it holds.

    Printable text is quoted as :func:`shlex.quote` quotes it. Text holding a control or an
    invisible formatting character (a bidirectional override would make the command read as
    another one) is written in ``$'...'`` quoting, which bash and zsh read, with each such
    character as an escape (``$'a\\u202eb'``), so the command shows what it runs. (A shell
    turns ``\\u`` escapes into UTF-8 in a UTF-8 locale, the usual one.)
    """
    if text.isprintable():
        return shlex.quote(text)
    out = []
    for char in text:
        if char in "\\'":
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        elif 0xDC80 <= ord(char) <= 0xDCFF:
            # A command-line byte that is not UTF-8 (Python's surrogate escape): the byte.
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return "$'" + "".join(out) + "'"
