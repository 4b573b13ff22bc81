"""One rule for secrets (``wire/redact.py``): what counts as a secret of a run, how short a
secret may be before it is left in text, and how text is scrubbed. Every output that shows
free text — log records of the wire libraries, the report of an unexpected error, the
``repr`` of the objects that hold secrets, an echoed option — applies that one rule, so the
outputs cannot drift apart (they did: two word lists and two minimum lengths)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.glue.internal import internal_report
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.wire import logfilter
from pytest_cardprobe.wire.redact import (
    DEFAULT_REDACT_FIELDS,
    MIN_SECRET_LENGTH,
    REDACTED,
    SECRET_PARAM,
    redact_fields,
    redact_option,
    run_secrets,
    scrub,
    url_secrets,
)

# Upper case and digits after "QZ": a secret never occurs by chance in "[redacted]" or in
# the words around it, so "the secret is absent" is a claim about scrubbing, not about luck.
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"
SECRET = st.text(ALPHABET, min_size=MIN_SECRET_LENGTH - 2, max_size=22).map(lambda s: "QZ" + s)
SHORT = st.text(ALPHABET, min_size=1, max_size=MIN_SECRET_LENGTH - 1)
# Query parameter names the word list calls secret, in the spellings gateways use.
SECRET_NAME = st.sampled_from(
    ["key", "api_key", "access_token", "sig", "auth", "password", "pwd", "session", "Credential"]
)
# Free text of one line (the report's headline is its first line).
WORDS = st.text(st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp")), max_size=40)


def settings_of(user: str, password: str, query: str, name: str, key: str, header: str) -> Settings:
    return Settings(
        models=["m"],
        servers=[f"http://{user}:{password}@gw.test:8443/o?{name}={query}&region=eu"],
        api_key=key,
        headers={"X-Api-Key": header},
    )


def showing(secrets: list[str]) -> str:
    """Free text that carries every secret bare and one URL that carries them too."""
    return "failed: " + " | ".join(secrets) + f" at http://u:{secrets[0]}@h:1/x?key={secrets[-1]}"


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def logged(text: str, secrets: list[str]) -> str:
    """``text`` as httpx's logger lets it through once the run's secrets are installed."""
    logfilter.install(secrets)
    logger = logging.getLogger("httpx")
    handler = Collected()
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        logger.info("%s", text)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logfilter._FILTER.secrets.clear()
    return handler.lines[-1]


def reported(text: str, secrets: list[str]) -> str:
    """The headline of the report of an unexpected error whose message is ``text``."""
    try:
        raise RuntimeError(text)
    except RuntimeError as exc:
        return internal_report(exc, secrets).splitlines()[0]


@settings(max_examples=60, deadline=None)
@given(SECRET, SECRET, SECRET, SECRET_NAME, SECRET, SECRET)
def test_every_secret_of_a_run_is_scrubbed_from_every_output(
    user: str, password: str, query: str, name: str, key: str, header: str
) -> None:
    run = settings_of(user, password, query, name, key, header)
    secrets = run_secrets(run)
    for value in (user, password, query, key, header):
        assert value in secrets
    text = showing([user, password, query, key, header])
    outputs = {
        "scrub": scrub(text, secrets),
        "log record": logged(text, secrets),
        "error report": reported(text, secrets),
        "Settings repr": repr(run),
        "ClientSettings repr": repr(run.client_settings(run.servers[0])),
        "echoed server option": redact_option("cardprobe_servers", run.servers[0]),
        "echoed header option": redact_option("cardprobe_headers", f"X-Api-Key: {header}"),
    }
    for where, shown in outputs.items():
        for value in (user, password, query, key, header):
            assert value not in shown, (where, value, shown)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(SECRET, SHORT), min_size=1, max_size=5), WORDS)
def test_the_log_filter_and_the_error_report_scrub_by_the_same_rule(
    secrets: list[str], words: str
) -> None:
    text = showing(secrets) + " " + words
    expected = scrub(text, secrets)
    assert logged(text, secrets) == expected
    # The test raises from its own frame: the report says the error is the user's.
    assert reported(text, secrets).partition(": RuntimeError: ")[2] == expected


@given(SHORT, SECRET)
def test_only_a_secret_shorter_than_the_minimum_stays_in_text(short: str, long: str) -> None:
    text = f"<{short}> <{long}>"
    assert scrub(text, [short, long]) == f"<{short}> <{REDACTED}>"


@given(SECRET_NAME, SECRET)
def test_a_secret_query_value_is_found_as_written_and_decoded(name: str, value: str) -> None:
    assert SECRET_PARAM.search(name)
    encoded = value[:1] + "%2F" + value[1:]
    found = url_secrets(f"http://h:1/?{name}={encoded}&region=eu")
    assert encoded in found and value[:1] + "/" + value[1:] in found
    assert "eu" not in found


@pytest.mark.parametrize(
    ("url", "found"),
    [
        ("http://alice:pw%40x@h:1/", ["alice", "pw%40x", "pw@x"]),
        ("http://h:1/?key=K1&x=2", ["K1"]),
        ("http://h:1/?region=eu", []),
        ("http://[::1/", []),
    ],
)
def test_url_secrets(url: str, found: list[str]) -> None:
    assert url_secrets(url) == found


def test_every_header_value_counts_as_a_secret_of_the_run() -> None:
    """The stricter of the two old rules: a harmless-looking header's value is scrubbed too
    (replacing ``application/json`` in an error message costs nothing; missing a secret
    sent under a name thought harmless would leak it)."""
    run: Any = Settings(models=["m"], headers={"Accept": "text/x-S3CRET", "X-K": "V4LUE"})
    assert run_secrets(run) == ["text/x-S3CRET", "V4LUE"]


@pytest.mark.parametrize(
    "key", ["Api-Key", "authorization", "Authorization", "client_secret", "refresh_token"]
)
def test_a_credential_key_in_a_request_body_is_redacted_by_default(key: str) -> None:
    body = {"model": "m", "messages": [], "options": {key: "S3CRET-123456"}}
    assert redact_fields(body, DEFAULT_REDACT_FIELDS)["options"][key] == REDACTED
