"""What a run repeats of its options (the re-record hint in the terminal, the JSON and HTML
reports and JUnit XML) carries no secret: one redaction, ``wire.redact.redact_option``."""

from __future__ import annotations

from pathlib import Path

import pytest

PASSWORD = "PW9xSECRET"
TOKEN = "T0KxSECRET"
QUERY_KEY = "K3YxSECRET"


def test_the_rerecord_hint_in_every_output_carries_no_header_value_or_url_password(
    recorded: pytest.Pytester,
) -> None:
    (recorded.path / "cassettes/cards/smollm2%3A135m/date-prose-cold.yaml").unlink()
    result = recorded.runpytest(
        "-p", "no:cacheprovider",
        "-k", "date and prose and cold",
        "-o", f"cardprobe_headers=X-Api-Key: {TOKEN}",
        "-o", f"cardprobe_servers=http://alice:{PASSWORD}@127.0.0.1:9/?key={QUERY_KEY}",
        "--cardprobe-json", "r.json", "--cardprobe-html", "r.html", "--junitxml", "j.xml",
    )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert "not recorded" in out, out
    assert "-o 'cardprobe_headers=X-Api-Key: [redacted]'" in out, out
    assert "-o cardprobe_servers=http://127.0.0.1:9/" in out, out
    shown = [out] + [(recorded.path / f).read_text("utf-8") for f in ("r.json", "r.html", "j.xml")]
    # The terminal and the two reports carry the command (JUnit XML has the short reason).
    for text in shown[:3]:
        assert "--cardprobe-record-mode once" in text
    for text in shown:
        for secret in (PASSWORD, TOKEN, QUERY_KEY, "alice:"):
            assert secret not in text


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("cardprobe_headers", f"X-Api-Key: {TOKEN}", "X-Api-Key: [redacted]"),
        ("cardprobe_headers", f"Accept: json\nX-T: {TOKEN}", "Accept: json\nX-T: [redacted]"),
        ("cardprobe_headers", f"no colon {TOKEN}", "[redacted]"),
        ("cardprobe_servers", f"http://a:{PASSWORD}@h:1/p?key={QUERY_KEY}&x=1", "http://h:1/p?x=1"),
        ("cardprobe_servers", f"a:{PASSWORD}@h:1", "h:1"),
        ("--cardprobe-server", f"https://a:{PASSWORD}@h", "https://h"),
        ("cardprobe_cassette_dir", f"see http://a:{PASSWORD}@h/x", "see http://h/x"),
        ("cardprobe_api_token", TOKEN, "[redacted]"),
        ("cardprobe_keep_alive", "5m", "5m"),
        ("--cardprobe-samples", "3", "3"),
    ],
)
def test_redact_option(name: str, value: str, shown: str) -> None:
    from pytest_cardprobe.wire.redact import redact_option

    assert redact_option(name, value) == shown


def test_no_option_value_is_echoed_with_its_secret(tmp_path: Path) -> None:
    from pytest_cardprobe.glue.hints import carried_options

    carried = carried_options(
        ["-o", f"cardprobe_headers=Authorization: Bearer {TOKEN}",
         f"-ocardprobe_servers=u:{PASSWORD}@h:1", "--cardprobe-samples=3"]
    )  # fmt: skip
    assert carried == [
        "-o", "cardprobe_headers=Authorization: [redacted]",
        "-o", "cardprobe_servers=h:1",
        "--cardprobe-samples", "3",
    ]  # fmt: skip


def test_an_option_value_that_is_not_utf8_is_a_usage_error(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(
        "-p", "no:cacheprovider", "-k", "date and prose and cold",
        "-o", "cardprobe_keep_alive=caf\udce9",
    )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "ini key cardprobe_keep_alive 'caf\\udce9' holds bytes that are not UTF-8 text" in out
