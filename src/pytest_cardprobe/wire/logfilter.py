"""Keep credentials out of the log records of the libraries the wire uses.

httpx logs every request's URL at INFO (``HTTP Request: POST http://user:pw@host/…?key=…``)
and vcrpy logs requests at DEBUG; with ``--log-level=INFO`` or ``log_cli`` those lines reach
the terminal, a captured-log section or a JUnit file. :func:`install` puts a filter on those
loggers that rewrites each record's text through :func:`redact.scrub`: URLs redacted, and
every secret the run was configured with (:func:`redact.run_secrets`) replaced by
``[redacted]`` — the same rule as the report of an unexpected error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from pytest_cardprobe.wire.redact import scrub

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
        clean = scrub(text, self.secrets)
        if clean != text:
            record.msg, record.args = clean, None
        return True


_FILTER = SecretFilter()


def install(secrets: Iterable[str]) -> SecretFilter:
    """Filter the wire libraries' loggers, adding ``secrets`` (``redact.scrub`` leaves out
    the short ones)."""
    _FILTER.secrets.update(secrets)
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    return _FILTER
