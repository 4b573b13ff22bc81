"""Keep secrets out of what the wire records and shows: URLs, headers, request fields.

Every URL the plugin records or shows goes through :func:`redact_url`; recorded request
bodies go through :func:`redact_fields`; objects that hold a URL or headers show them
through these in their ``repr``, so a traceback or a log line never carries a credential.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

# Query parameters that carry credentials (``?key=``, ``api_key``, ``access_token``, ``sig``).
SECRET_PARAM = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential|session", re.I)


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
