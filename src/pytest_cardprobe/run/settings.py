"""What a run was configured with: one object, built once from options and ini keys.

``options.resolve_settings`` builds it in ``pytest_configure``; everything later reads it
from the session state and never looks at ``config.option`` again. Each default is written
once: the wire's in :class:`ClientSettings`, the gate's in :class:`GateSettings`, the file
cap in ``files``, the sample limit in the suite loader, the rest here; the option table
(``glue/option_table.py``) reads them from these classes for the documented defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_cardprobe.files import DEFAULT_MAX_FILE_MB, MB
from pytest_cardprobe.gatesettings import GateSettings
from pytest_cardprobe.suite.context import MAX_SAMPLES, MAX_TURNS
from pytest_cardprobe.wire.client import ClientSettings
from pytest_cardprobe.wire.redact import DEFAULT_REDACT_FIELDS, redacted_repr
from pytest_cardprobe.wire.shapes import StreamLimits
from pytest_cardprobe.wire.values import DEFAULT_PORT

DEFAULT_SERVER = f"http://127.0.0.1:{DEFAULT_PORT}"
_WIRE = ClientSettings(base_url=DEFAULT_SERVER)


@dataclass(repr=False)
class Settings:
    """Everything a run was configured with (options win over ini keys, ini over defaults).

    Its ``repr`` (a traceback's frame argument, a debugger) carries no credential: server
    URLs go through ``redact_url``, the API key and header values are redacted.
    """

    models: list[str]
    #: Built-in suites added to the run (names from ``--cardprobe-suite`` / ``cardprobe_suites``).
    suites: list[str] = field(default_factory=list)
    # none (replay only), once, stale or rewrite (--live); see wire/cassettes/modes.py.
    record_mode: str = "none"
    api: str = _WIRE.api
    servers: list[str] = field(default_factory=lambda: [DEFAULT_SERVER])
    samples: int | None = None
    channels: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    num_ctx: int = 16384
    timeout: float = _WIRE.timeout
    retries: int = _WIRE.retries
    keep_alive: str = _WIRE.keep_alive
    stream: bool = _WIRE.stream
    cassette_dir: Path = Path("cassettes")
    api_key: str | None = None
    strict_tools: bool = False  # tool-lint findings are usage errors (--cardprobe-strict-tools)
    # Unreviewed drafted cases fail instead of being reported apart (--cardprobe-strict-review).
    strict_review: bool = False
    gate: GateSettings = field(default_factory=GateSettings)
    baseline: Path = Path("cardprobe-baseline.json")
    # --cardprobe-baseline-ref: the git revision whose baseline (the same repository path)
    # the run is gated against too; None: the committed baseline alone.
    baseline_ref: str | None = None
    update_baseline: bool = False
    # --cardprobe-accept-reason: why an update accepts the regressions it finds.
    accept_reason: str | None = None
    # --prune-baseline: also drop cases and arms the collected suites no longer have.
    prune_baseline: bool = False
    json_report: Path | None = None
    md_report: Path | None = None
    html_report: Path | None = None
    max_file_mb: float = DEFAULT_MAX_FILE_MB
    # The most one reply may bring (None: max_file_mb, the cap of the cassette it goes in).
    max_reply_mb: float | None = None
    max_stream_lines: int = _WIRE.limits.lines
    max_stream_chunks: int = _WIRE.limits.chunks
    max_samples: int = MAX_SAMPLES
    max_turns: int = MAX_TURNS
    redact_fields: list[str] = field(default_factory=lambda: list(DEFAULT_REDACT_FIELDS))
    headers: dict[str, str] = field(default_factory=dict)
    # --cardprobe-think when given (it beats a suite's `think:`); else the suite's, else
    # think_default (ini cardprobe_think).
    think: str | None = None
    think_default: str = "off"
    # One unrecorded request before a model's first recorded one (--cardprobe-no-warmup: none).
    warmup: bool = True
    # Requests in flight per server across all workers (ini cardprobe_parallel).
    parallel: int = 1
    # Consecutive infra failures on one server before its remaining tests fail at once.
    breaker: int = 5
    # What a run does with the sources suites name (python:, mcp:): auto, always or never
    # (--cardprobe-source-check), and how long reading one may take (ini).
    source_check: str = "auto"
    source_timeout: float = 60.0
    #: Settings given on the command line (a flag or its old spelling), by field name.
    command_line: frozenset[str] = frozenset()

    __repr__ = redacted_repr

    @property
    def live(self) -> bool:
        """True when the run talks to servers (any record mode but ``none``)."""
        return self.record_mode != "none"

    def base_options(self) -> dict[str, Any]:
        """Model options every request carries (the reference request)."""
        return {"temperature": 0, "num_ctx": self.num_ctx}

    @property
    def stream_limits(self) -> StreamLimits:
        """What a streamed reply may hold, live and in replay."""
        return StreamLimits(lines=self.max_stream_lines, chunks=self.max_stream_chunks)

    def client_settings(self, server: str) -> ClientSettings:
        """How the wire reaches ``server`` with these settings."""
        return ClientSettings(
            base_url=server,
            api=self.api,
            stream=self.stream,
            timeout=self.timeout,
            retries=self.retries,
            keep_alive=self.keep_alive,
            api_key=self.api_key,
            headers=dict(self.headers),
            max_reply_bytes=int((self.max_reply_mb or self.max_file_mb) * MB),
            limits=self.stream_limits,
        )
