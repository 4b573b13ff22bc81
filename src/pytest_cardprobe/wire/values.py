"""Readers of one option or ini value: text in, a checked value out, or a ValueError saying why.

Each reader is used for the command-line option and for its ini key alike, so both refuse the
same values with the same words; the caller puts the flag or the key in front of the reason.
The commands (``cli/``) use the same readers for their own flags. Nothing here contacts a
server or touches a file. They sit in the wire, below both the plugin's glue and the
commands, since the server URL and header readers are the HTTP client's rules.
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

from pytest_cardprobe.files import MB, folder_typed
from pytest_cardprobe.text import model_problem

#: Ollama's port, for a server given as a bare host (``OLLAMA_HOST=myhost``).
DEFAULT_PORT = 11434

#: A reader: the text of a value to the value; ValueError("wants ..., got ...") when refused.
Reader = Callable[[str], Any]


def _bounded(convert: type[int] | type[float], wants: str, ok: Callable[[float], bool]) -> Reader:
    def read(text: str) -> float:
        try:
            value = convert(text.strip())
            # An integer too large for a float (400 digits) is no count or time either.
            finite = math.isfinite(value)
        except ValueError:
            raise ValueError(f"wants {wants}, got {text!r}") from None
        except OverflowError:
            digits = len(text.strip().lstrip("+-"))
            raise ValueError(f"wants {wants}, got a number of {digits} digits") from None
        if not finite or not ok(value):
            raise ValueError(f"wants {wants}, got {value:g}")
        return value

    read.__doc__ = f"A number: {wants}."
    return read


positive_int = _bounded(int, "an integer >= 1", lambda v: v >= 1)
non_negative_int = _bounded(int, "an integer >= 0", lambda v: v >= 0)
positive_float = _bounded(float, "a number > 0", lambda v: v > 0)
share = _bounded(float, "a number from 0 to 1", lambda v: 0 <= v <= 1)
level = _bounded(float, "a number between 0 and 1", lambda v: 0 < v < 1)
#: A request deadline: a socket takes no timeout beyond about 9e9 s, and a day is plenty.
seconds = _bounded(float, "a number of seconds > 0 and at most 86400", lambda v: 0 < v <= 86400)
#: A file size cap: it becomes a byte count, which a float of 1e308 MB overflows and one of
#: 1e-320 MB rounds down to nothing (every file would be "too large"): one byte at least.
megabytes = _bounded(
    float, "a number of MB from 0.000001 (one byte) to 1000000", lambda v: v * MB >= 1 and v <= 1e6
)


def one_of(choices: tuple[str, ...]) -> Reader:
    """A reader accepting one of ``choices`` (ini keys; argparse checks options itself)."""

    def read(text: str) -> str:
        if text.strip() not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}; got {text.strip()!r}")
        return text.strip()

    return read


def text(value: str) -> str:
    """Any text, kept as given, if it is text: command-line bytes that are not UTF-8 arrive
    as surrogate escapes, which no request body or report can carry."""
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise ValueError(f"{value!r} holds bytes that are not UTF-8 text")
    return value


def git_ref(value: str) -> str:
    """A git revision to read the base's baseline from (``origin/main``, ``HEAD^1``, a hash):
    one word of printable text that git cannot take for an option."""
    ref = value.strip()
    if not ref:
        raise ValueError("wants a git revision such as origin/main, got an empty one")
    if "://" in ref or ref.startswith("git@"):
        # A remote's URL is no revision, and it may carry a token: not echoed anywhere.
        raise ValueError(
            "wants a git revision such as origin/main, got a repository URL (not shown: it "
            "may hold a token); fetch the base branch first (git fetch --depth=1 origin "
            "<the base branch>) and name it: origin/<the base branch>"
        )
    if ref.startswith("-") or not ref.isprintable() or any(c.isspace() for c in ref):
        raise ValueError(f"wants a git revision such as origin/main, got {ref!r}")
    return ref


#: The longest reason an acceptance keeps (score/acceptance.py says why).
MAX_REASON = 1000


def reason(value: str) -> str:
    """Why regressions are accepted: one line of printable text, not empty."""
    said = value.strip()
    if not said or not said.isprintable() or len(said) > MAX_REASON:
        raise ValueError(
            f"wants a reason: one line of text of at most {MAX_REASON} characters, got "
            + (
                "an empty one"
                if not said
                else f"{len(said)} characters"
                if said.isprintable()
                else "control characters"
            )
        )
    return said


def path_text(value: str) -> str:
    """A file or folder path: anything but empty (an empty path would silently mean "none")."""
    if not value.strip():
        raise ValueError("wants a path, got an empty one")
    if "\x00" in value:
        raise ValueError("holds a NUL character (\\x00), which no file name can")
    return value


def file_path_text(value: str) -> str:
    """A path of a file (the baseline, a report): :func:`path_text`, not typed as a folder."""
    path_text(value)
    problem = folder_typed(value)
    if problem:
        raise ValueError(problem)
    return value


def model_name(name: str) -> str:
    """A model name (see :func:`pytest_cardprobe.text.model_problem`)."""
    problem = model_problem(name)
    if problem:
        raise ValueError(f"{name!r} {problem}")
    return name


def normalise_server(url: str) -> str:
    """``OLLAMA_HOST`` style ``host:port`` or ``0.0.0.0`` to a usable base URL (not checked).

    No scheme means ``http://``; a plain-http URL without a port gets Ollama's; ``0.0.0.0``
    (where a server listens, not an address to call) becomes ``127.0.0.1``.
    """
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = f"http://{url}"
    scheme, rest = url.split("://", 1)
    split = re.search(r"[/?#]", rest)
    host, path = (rest[: split.start()], rest[split.start() :]) if split else (rest, "")
    if host == "0.0.0.0" or host.startswith("0.0.0.0:"):
        host = "127.0.0.1" + host[len("0.0.0.0") :]
    if scheme == "http" and ":" not in host.rsplit("]", 1)[-1].rpartition("@")[2]:
        host = f"{host}:{DEFAULT_PORT}"
    return f"{scheme}://{host}{path}"


# A host name: letters (any script), digits, dots, hyphens, underscores; nothing else.
_HOST = re.compile(r"[^\W][\w.-]*", re.UNICODE)


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/*")


def _without_secrets(url: str) -> str:
    """``url`` as it may be shown in an error: no query, and nothing before its last ``@``
    but the scheme (a password may hold a ``/``, or follow a mistyped ``http:/``)."""
    url = url.split("?", 1)[0].split("#", 1)[0]
    head, at, tail = url.rpartition("@")
    if not at:
        return url
    scheme = _SCHEME.match(head)
    return (scheme.group() if scheme else "") + tail


def server_url(value: str) -> str:
    """An absolute http(s) base URL with a valid host and port, normalised."""
    url = normalise_server(value)
    shown = repr(_without_secrets(value.strip()))
    typo = re.match(r"(https?):/(?!/)", value.strip(), re.IGNORECASE)
    if typo:
        # It would read as the host "http" with an empty port and the rest as a path.
        raise ValueError(f"{shown} has one slash after {typo.group(1)}:; write {typo.group(1)}://")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        # Not the text it quotes: a "port" may be the end of a password holding a "/".
        why = str(exc).split(" as ", 1)[0]
        raise ValueError(f"{shown} is not a valid http(s) URL ({why})") from None
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        raise ValueError(f"{shown} holds whitespace or control characters")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in url):
        # Command-line bytes that are not UTF-8 arrive as surrogate escapes; no URL holds one.
        raise ValueError(f"{shown} holds bytes that are not UTF-8 text")
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"{shown} is not an http:// or https:// URL")
    host = parts.hostname or ""
    if not host:
        raise ValueError(f"{shown} has no host")
    if parts.netloc.rpartition("@")[2].startswith("["):
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise ValueError(f"{shown} has an invalid IPv6 address {host!r}") from None
    elif not _HOST.fullmatch(host):
        raise ValueError(f"{shown} has an invalid host {host!r}")
    else:
        _check_host_name(shown, host)
    if port == 0:
        raise ValueError(f"{shown} has port 0")
    if parts.netloc.endswith(":"):
        # ``http://host:/``: a colon and no port (the typo above gave one too).
        raise ValueError(f"{shown} has an empty port")
    return url


def _check_host_name(shown: str, host: str) -> None:
    """A dotted-number host is an IPv4 address; any other is a domain name IDNA can encode."""
    if re.fullmatch(r"[0-9.]+", host):
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"{shown} has an invalid IPv4 address {host!r}") from None
        return
    labels = host.rstrip(".").split(".")
    if len(host) > 253 or any(not label or len(label) > 63 for label in labels):
        raise ValueError(
            f"{shown} has an invalid host name (labels of 1 to 63 characters, 253 in all)"
        )
    try:
        host.encode("idna")
    except UnicodeError:
        raise ValueError(f"{shown} has a host name that is no valid domain name") from None


#: Headers that frame or route the request: httpx writes them, a user's copy breaks it.
_CLIENT_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "host", "connection", "te", "trailer", "upgrade",
     "keep-alive", "proxy-connection",
     # Always identity: a compressed reply could not be bounded before it is inflated.
     "accept-encoding"}
)  # fmt: skip

# RFC 9110 field names: a token.
_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")


def header_value(name: str, value: str) -> str:
    """``value`` if it can be sent as header ``name``: printable ASCII (or tab), no CR/LF.

    The reason for a refusal names the header, never its value (it is usually a secret).
    """
    for position, char in enumerate(value, start=1):
        if char in "\r\n":
            raise ValueError(f"the value of {name} holds a line break (character {position})")
        if not (" " <= char <= "~" or char == "\t"):
            raise ValueError(
                f"the value of {name} holds a character that is not printable ASCII "
                f"(character {position}, U+{ord(char):04X}); header values are ASCII"
            )
    return value


def header_line(line: str) -> tuple[str, str]:
    """``Name: value`` with ``$VAR`` expanded in the value, checked by :func:`header_value`."""
    name, colon, raw = line.partition(":")
    name = name.strip()
    if not colon:
        # Then the whole line may be the value ("X-Token abc123"): it is not shown.
        raise ValueError("has a line with no ':' in it; each line is 'Header-Name: value'")
    if not _HEADER_NAME.fullmatch(name):
        # Not quoted either: a value typed without its colon ("X-Key abc:def") is in it.
        raise ValueError(
            "has a line whose name (before ':') is not a header name (letters, digits and "
            "!#$%&'*+.^_`|~- only); each line is 'Header-Name: value'"
        )
    if name.lower() in _CLIENT_HEADERS:
        raise ValueError(
            f"sets {name}, which the HTTP client writes itself for each request; remove it"
        )
    value = raw.strip()
    if re.search(r"\$\{[^}]*$", value):
        raise ValueError(f"the value of {name} has a '${{' with no closing '}}'")
    for braced, bare in re.findall(r"\$(?:\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))", value):
        named = braced or bare
        if named and named not in os.environ:
            # A run missing its token would send the variable's name and get a 401.
            raise ValueError(f"the value of {name} names ${named}, which is not set")
    return name, header_value(name, os.path.expandvars(value))
