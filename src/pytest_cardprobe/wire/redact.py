"""Keep secrets out of what the plugin records and shows: the one place of that rule.

Every URL the plugin records or shows goes through :func:`redact_url`; recorded request
bodies go through :func:`redact_fields`; objects that hold a URL or headers show them
through :func:`redacted_repr`, so a traceback or a debugger never carries a credential.
The secret values a run was configured with (:func:`run_secrets`) are replaced in free text
by :func:`scrub` — in log records (``wire/logfilter.py``) and in the report of an
unexpected error (``glue/internal.py``) alike, by the same word list and minimum length.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# Query parameters that carry credentials (``?key=``, ``api_key``, ``access_token``, ``sig``).
SECRET_PARAM = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential|session", re.I)
#: A known secret shorter than this is not replaced in free text: one or two characters
#: would blank out ordinary words; no credential is that short.
MIN_SECRET_LENGTH = 3


def redact_url(url: str) -> str:
    """``url`` without ``user:password@`` and without secret-looking query parameters.

    Every URL the plugin records or shows goes through here: a server URL typed with
    credentials must not reach a cassette, a terminal, a CI log or a report.
    """
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(url)
        netloc = parts.netloc.rpartition("@")[2]
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return "<unparsable URL>"
    kept = [(k, v) for k, v in query if not SECRET_PARAM.search(k)]
    return urllib.parse.urlunsplit(
        (parts.scheme, netloc, parts.path, urllib.parse.urlencode(kept), parts.fragment)
    )


REDACTED = "[redacted]"
# Request-body keys replaced by "[redacted]" before a request is recorded or captured (ini
# cardprobe_redact_fields and capture's --redact-field add more): credentials a hook or an
# application may put into the body, including header names copied into it.
DEFAULT_REDACT_FIELDS = (
    "api_key",
    "apikey",
    "api-key",
    "access_token",
    "refresh_token",
    "token",
    "password",
    "secret",
    "client_secret",
    "authorization",
)


def redact_fields(value: Any, fields: Sequence[str]) -> Any:
    """``value`` with every mapping entry whose key is in ``fields`` (any case) redacted."""
    if not fields:
        return value
    names = {f.lower() for f in fields}

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: REDACTED if str(k).lower() in names else walk(v) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    return walk(value)


# Header values that never carry a credential; every other value is shown redacted (deny by
# default, as a recording keeps only what replay needs: credentials come under too many names).
PLAIN_HEADERS = frozenset({"accept", "content-type", "user-agent"})


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` as they may be shown: names kept, values redacted unless plainly harmless."""
    return {k: v if k.lower() in PLAIN_HEADERS else REDACTED for k, v in headers.items()}


#: An option whose value is header lines (``Name: value``), shown with the values redacted.
HEADER_OPTIONS = frozenset({"cardprobe_headers"})
#: Options whose value is a server URL, also written without a scheme (``user:pw@host:11434``).
SERVER_OPTIONS = frozenset({"cardprobe_servers", "--cardprobe-server", "--server"})
_ANY_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def url_secrets(url: str) -> list[str]:
    """The secret parts of a server URL: its user and password, secret query values, each
    as written and percent-decoded (a traceback may show either)."""
    import urllib.parse

    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return []
    user, _, password = parts.netloc.rpartition("@")[0].partition(":")
    raw = [user, password]
    for pair in parts.query.split("&"):
        name, _, value = pair.partition("=")
        if SECRET_PARAM.search(urllib.parse.unquote_plus(name)):
            raw.append(value)
    found: list[str] = []
    for value in raw:
        for form in (value, urllib.parse.unquote_plus(value)):
            if form and form not in found:
                found.append(form)
    return found


def run_secrets(settings: object) -> list[str]:
    """What a run was configured with that must never be shown, read from an object's
    ``headers``, ``api_key`` and ``servers`` (the run's settings): every header value (a
    harmless one included: replacing it costs nothing), the API key, each server URL's user,
    password and secret query values (:func:`url_secrets`)."""
    headers: Mapping[str, Any] = getattr(settings, "headers", None) or {}
    api_key = getattr(settings, "api_key", None)
    found = [str(v) for v in headers.values()]
    found += [str(api_key)] if api_key else []
    for url in getattr(settings, "servers", None) or ():
        found += url_secrets(str(url))
    return found


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every URL redacted (:func:`redact_url`) and every known secret of at
    least :data:`MIN_SECRET_LENGTH` characters replaced by ``[redacted]``, longest first."""
    text = _ANY_URL.sub(lambda m: redact_url(m.group()), text)
    known = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}
    for secret in sorted(known, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def redacted_repr(obj: Any) -> str:
    """The ``repr`` of a dataclass that holds a URL, an API key or headers, without them:
    ``base_url`` and each of ``servers`` through :func:`redact_url`, ``api_key`` as
    ``[redacted]``, ``headers`` through :func:`redact_headers`. Use it as ``__repr__``."""
    shown: dict[str, Any] = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if "base_url" in shown:
        shown["base_url"] = redact_url(obj.base_url)
    if "servers" in shown:
        shown["servers"] = [redact_url(url) for url in obj.servers]
    if "api_key" in shown:
        shown["api_key"] = REDACTED if obj.api_key else None
    if "headers" in shown:
        shown["headers"] = redact_headers(obj.headers)
    return f"{type(obj).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


def redact_option(name: str, value: str) -> str:
    """An option's or ini key's ``value`` as it may be echoed (a re-record hint, a report).

    The one redaction for every place a run repeats what it was given: header values
    (unless plainly harmless, :data:`PLAIN_HEADERS`) become ``[redacted]``, a server URL
    loses its ``user:password@`` and secret query parameters (:func:`redact_url`, also when
    written without a scheme), any other URL in a value is redacted the same way, and an
    option whose name looks secret (``key``, ``token``, ``pass``, …) is shown as
    ``[redacted]`` whole. The name is the ini key or the flag (``cardprobe_headers``).
    """
    key = name.strip().lower()
    if SECRET_PARAM.search(key.removeprefix("cardprobe_").lstrip("-")):
        return REDACTED
    lines = value.split("\n")
    if key in HEADER_OPTIONS:
        return "\n".join(_header_line(line) for line in lines)
    if key in SERVER_OPTIONS:
        return "\n".join(_server(line) for line in lines)
    return "\n".join(_ANY_URL.sub(lambda m: redact_url(m.group()), line) for line in lines)


def _header_line(line: str) -> str:
    name, colon, rest = line.partition(":")
    if not colon:
        return REDACTED  # no name to keep: the whole line may be the value
    shown = rest if name.strip().lower() in PLAIN_HEADERS else " " + REDACTED
    return f"{name}:{shown}"


def _server(text: str) -> str:
    stripped = text.strip()
    if not stripped or "://" in stripped:
        return redact_url(stripped) if stripped else text
    return redact_url("http://" + stripped).removeprefix("http://")
