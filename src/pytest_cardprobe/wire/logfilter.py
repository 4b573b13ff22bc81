"""Keep credentials out of the log records of the libraries the wire uses.

httpx logs every request's URL at INFO (``HTTP Request: POST http://user:pw@host/…?key=…``)
and vcrpy logs requests at DEBUG; with ``--log-level=INFO`` or ``log_cli`` those lines reach
the terminal, a captured-log section or a JUnit file. :func:`install` puts a filter on those
loggers that rewrites each record's text: URLs through :func:`redact.redact_url`, and every
secret the run was configured with (header values, the API key, URL passwords and secret
query values) replaced by ``[redacted]``.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import Iterable, Mapping

from pytest_cardprobe.wire.redact import PLAIN_HEADERS, REDACTED, SECRET_PARAM, redact_url

#: The loggers of httpx, httpcore and vcrpy that write request lines (a filter on a logger
#: sees only the records logged to that logger itself, not to its children).
LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "vcr",
    "vcr.cassette",
    "vcr.matchers",
    "vcr.patch",
    "vcr.request",
    "vcr.stubs",
    "vcr.stubs.httpx_stubs",
)

_URL = re.compile(r"https?://[^\s\"'<>]+", re.IGNORECASE)


def run_secrets(
    headers: Mapping[str, str], api_key: str | None, servers: Iterable[str]
) -> list[str]:
    """What a run was configured with that must never be shown: the header values that
    :func:`redact.redact_headers` hides, the API key, the server URLs' secret parts."""
    found = [v for k, v in headers.items() if k.lower() not in PLAIN_HEADERS]
    found += [api_key] if api_key else []
    for url in servers:
        found += url_secrets(url)
    return found


def url_secrets(url: str) -> list[str]:
    """The secret parts of a server URL: its password (and user), secret query values."""
    try:
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return []
    found = [v for k, v in query if SECRET_PARAM.search(k) and v]
    found += [p for p in (parts.password, parts.username) if p]
    return found


class SecretFilter(logging.Filter):
    """Rewrites a record's message without URLs' credentials and without known secrets."""

    def __init__(self) -> None:
        super().__init__("cardprobe-secrets")
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # a record whose args do not fit its format: leave it to logging
            return True
        clean = _URL.sub(lambda m: redact_url(m.group()), text)
        for secret in sorted(self.secrets, key=len, reverse=True):
            clean = clean.replace(secret, REDACTED)
        if clean != text:
            record.msg, record.args = clean, None
        return True


_FILTER = SecretFilter()


def install(secrets: Iterable[str]) -> SecretFilter:
    """Filter the wire libraries' loggers, adding ``secrets`` (short ones are left out)."""
    # A secret of one or two characters would blank out ordinary text; none is that short.
    _FILTER.secrets.update(s for s in secrets if len(s) >= 3)
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    return _FILTER
