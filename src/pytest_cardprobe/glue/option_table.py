"""Every command-line option and ini key of the plugin, as data.

One row per setting: its flag (and the deprecated spelling it replaced), its ini key, how a
value is read and checked, and its help text. ``options.py`` registers and resolves them from
this table, and the documentation test checks ``pytest --help``, the Options reference's
table (docs/reference/options.md) and docs/design.md §3 against it. Defaults are not
written here: they are read from the class that owns them (:class:`Settings`,
:class:`GateSettings`), so each is written once.

``--model`` and ``--live`` are the plugin's well-known names; every other flag starts with
``--cardprobe-`` so it cannot collide with another plugin's (pytest-recording owns
``--record-mode``), and every ini key with ``cardprobe_``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from pytest_cardprobe.run.settings import DEFAULT_SERVER, Settings
from pytest_cardprobe.score.gate import GATE_MODES, GateSettings
from pytest_cardprobe.source import CHECK_MODES
from pytest_cardprobe.suite.loader import ALL_CHANNELS, ALL_CONDITIONS, THINK_LEVELS
from pytest_cardprobe.wire import values
from pytest_cardprobe.wire.cassettes.modes import RECORD_MODES
from pytest_cardprobe.wire.client import APIS

#: value: ``--flag X``; list: repeatable ``--flag X``; on: ``--flag`` sets True; off: False.
Kind = Literal["value", "list", "on", "off"]

_SETTINGS = Settings(models=[])
_GATE = GateSettings()
GATE_FIELDS = frozenset(f.name for f in dataclasses.fields(GateSettings))
#: Prefix of every flag but the two well-known ones.
PREFIX = "--cardprobe-"


@dataclass(frozen=True)
class Spec:
    """One setting: where it can be given, how its value is read, what it means."""

    #: The Settings (or GateSettings) field the value goes to; also names the option's dest.
    name: str
    help: str
    flag: str | None = None
    #: The spelling the flag had before it was namespaced: still read, with a warning.
    old: str | None = None
    ini: str | None = None
    kind: Kind = "value"
    read: values.Reader = values.text
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    #: Relative paths: to the invocation folder from the command line, to rootdir from ini.
    path: bool = False
    #: When the ini value does not merge with the option's: the field it goes to instead.
    ini_field: str | None = None
    #: The default as the documentation shows it, when the field's value does not say it.
    shown: str | None = None

    @property
    def dest(self) -> str:
        """The ``config.option`` attribute of the flag."""
        return f"cardprobe_{self.name}"

    @property
    def old_dest(self) -> str:
        """The ``config.option`` attribute of the deprecated spelling."""
        return f"cardprobe_old_{self.name}"

    @property
    def ini_type(self) -> str:
        """How pytest reads the ini key: a list of lines, a boolean or a string."""
        return (
            {"list": "linelist", "on": "bool", "off": "bool"}[self.kind]
            if (self.kind != "value")
            else "string"
        )

    @property
    def default(self) -> Any:
        """The value when neither the flag nor the ini key is given, from its owning class."""
        field = self.ini_field or self.name
        if field in GATE_FIELDS:
            return getattr(_GATE, field)
        return getattr(_SETTINGS, field, False if self.kind == "on" else None)

    @property
    def shown_default(self) -> str:
        """The default as the Options reference and ``--help`` show it."""
        if self.shown is not None:
            return self.shown
        value = self.default
        if isinstance(value, bool):
            return "on" if value else "off"
        if value is None or (isinstance(value, list | tuple | dict) and not value):
            return "—"
        if isinstance(value, int | float):
            return f"{value:g}"
        return f"`{value}`"

    @property
    def shown_flag(self) -> str:
        """``--cardprobe-server URL`` (repeatable): the flag as the Options reference writes it."""
        if self.flag is None:
            return ""
        if self.kind in ("on", "off"):
            return f"`{self.flag}`"
        word = self.metavar or "{" + ",".join(self.choices or ()) + "}"
        return f"`{self.flag} {word}`" + (" (repeatable)" if self.kind == "list" else "")


def _int(name: str, **rest: Any) -> Spec:
    return Spec(name, read=values.positive_int, **rest)


SPECS: tuple[Spec, ...] = (
    Spec("models", "models to probe; one is required when suites are collected", flag="--model",
         ini="cardprobe_models", kind="list", read=values.model_name, metavar="NAME"),
    Spec("suites", "add a built-in suite to the run; `list` prints them and exits",
         flag="--cardprobe-suite", ini="cardprobe_suites", kind="list", metavar="NAME"),
    Spec("live", "ask the real server and re-record every selected test (short for "
         "`--cardprobe-record-mode rewrite`)", flag="--live", kind="on"),
    Spec("record_mode", "which tests ask the server: `none` (replay only), `once`, `stale` or "
         "`rewrite`; see \"Record modes\"", flag="--cardprobe-record-mode", old="--record-mode",
         choices=RECORD_MODES, metavar="MODE"),
    Spec("think", "reasoning level: `off`, `on`, `low`, `medium`, `high` (Ollama `think`, "
         "OpenAI `reasoning_effort`); the flag beats a suite's `think`, the ini key does not",
         flag="--cardprobe-think", old="--think", ini="cardprobe_think", choices=THINK_LEVELS,
         read=values.one_of(THINK_LEVELS), metavar="LEVEL", ini_field="think_default"),
    Spec("warmup", "live runs: skip the unrecorded warm-up request before each model's first "
         "recorded one", flag="--cardprobe-no-warmup", old="--no-warmup", kind="off",
         shown="warm-up on"),
    Spec("api", "wire API: `ollama` (`/api/chat`) or `openai` (`/v1/chat/completions`)",
         flag="--cardprobe-api", old="--api", ini="cardprobe_api", choices=APIS,
         read=values.one_of(APIS)),
    Spec("servers", "server base URL (absolute http(s), host and port checked); repeat to "
         "spread xdist workers over servers", flag="--cardprobe-server", old="--server",
         ini="cardprobe_servers", kind="list", read=values.server_url, metavar="URL",
         shown=f"`$OLLAMA_HOST`, else `{DEFAULT_SERVER}`"),
    _int("samples", help="samples per test; overrides suites and `samples(n)` markers (a "
         "k-of-n rule is capped at N)",
         flag="--cardprobe-samples", old="--samples", metavar="N", shown="suite's `samples`"),
    Spec("channels", "keep only this channel",
         flag="--cardprobe-channel", old="--channel", kind="list", choices=ALL_CHANNELS,
         shown="all"),
    Spec("conditions", "keep only this condition",
         flag="--cardprobe-condition", old="--condition", kind="list", choices=ALL_CONDITIONS,
         shown="all"),
    Spec("stream", "ask with `stream:true` and assemble the streamed reply",
         flag="--cardprobe-stream", old="--stream", ini="cardprobe_stream", kind="on"),
    Spec("cassette_dir", "where cassettes live", flag="--cardprobe-cassette-dir",
         old="--cassette-dir", ini="cardprobe_cassette_dir", read=values.path_text,
         metavar="DIR", path=True),
    Spec("timeout", "deadline of one request in seconds (at most a day): connecting (at most "
         "10 s), sending and the whole reply or stream, however slowly its bytes arrive; each "
         "retry gets its own",
         flag="--cardprobe-request-timeout", old="--request-timeout", ini="cardprobe_timeout",
         read=values.seconds, metavar="SECONDS"),
    Spec("retries", "retries of an infra failure (with backoff)", ini="cardprobe_retries",
         read=values.non_negative_int),
    _int("num_ctx", help="`options.num_ctx` of every request", ini="cardprobe_num_ctx"),
    Spec("keep_alive", "Ollama `keep_alive` of every request", ini="cardprobe_keep_alive"),
    _int("breaker", help="consecutive infra failures on one server before its remaining "
         "tests fail at once", ini="cardprobe_breaker"),
    _int("parallel", help="requests in flight per server across all xdist workers",
         ini="cardprobe_parallel"),
    Spec("noise_floor", "cases an arm may lose before it counts as a regression",
         flag="--cardprobe-noise-floor", old="--noise-floor", ini="cardprobe_noise_floor",
         read=values.non_negative_int, metavar="K"),
    Spec("baseline", "baseline file", flag="--cardprobe-baseline", old="--baseline",
         ini="cardprobe_baseline", read=values.file_path_text, metavar="PATH", path=True),
    Spec("baseline_ref", "also gate against the baseline at the same path in this git "
         "revision (a pull request's base: `origin/main`); this run's own baseline must then "
         "match it exactly, and a regression counts unless the change accepted it",
         flag="--cardprobe-baseline-ref", ini="cardprobe_baseline_ref", read=values.git_ref,
         metavar="REF"),
    Spec("update_baseline", "merge this run's verdicts into the baseline instead of gating "
         "(cases that did not run keep their entries); regressions need "
         "`--cardprobe-accept-reason`",
         flag="--cardprobe-update-baseline", old="--update-baseline", kind="on"),
    Spec("accept_reason", "why `--cardprobe-update-baseline` accepts the regressions it "
         "finds (against the base ref, else the old baseline); written with each accepted "
         "flip into the baseline", flag="--cardprobe-accept-reason", read=values.reason,
         metavar="TEXT"),
    Spec("accepted", "a regression the change accepted (for this base): `pass` (exit 0, "
         "listed first in every report) or `fail` (until a person approves)",
         ini="cardprobe_accepted_regressions", choices=("pass", "fail"),
         read=values.one_of(("pass", "fail"))),
    Spec("prune_baseline", "as `--cardprobe-update-baseline`, and drop the cases and arms the "
         "collected suites no longer have", flag="--cardprobe-prune-baseline", kind="on"),
    Spec("strict_baseline", "fail when an arm has no baseline",
         flag="--cardprobe-strict-baseline", old="--strict-baseline", kind="on"),
    Spec("strict_tools", "tool-definition lint findings of call suites are usage errors, "
         "not warnings", flag="--cardprobe-strict-tools", old="--strict-tools",
         ini="cardprobe_strict_tools", kind="on"),
    Spec("strict_review", "unreviewed drafted cases (`reviewed: false`) fail instead of being "
         "reported apart from the gate", flag="--cardprobe-strict-review",
         ini="cardprobe_strict_review", kind="on"),
    Spec("mode", "how an arm regresses: `floor` (it lost more than the noise floor's cases) or "
         "`significance` (the paired test finds its loss significant at the alpha)",
         flag="--cardprobe-gate", ini="cardprobe_gate", choices=GATE_MODES,
         read=values.one_of(GATE_MODES), metavar="MODE"),
    Spec("alpha", "significance level of `--cardprobe-gate significance`",
         flag="--cardprobe-alpha", ini="cardprobe_alpha", read=values.level, metavar="ALPHA"),
    Spec("max_unscored", "share of cases (0-1) that may be unscored before the gate is "
         "inconclusive", ini="cardprobe_max_unscored", read=values.share),
    _int("max_samples", help="upper bound of samples (suite key, `samples(n)` marker, "
         "`--cardprobe-samples`)", ini="cardprobe_max_samples"),
    _int("max_turns", help="upper bound of a tool loop's `max_turns` (call suites: suite and "
         "case key); each turn is one request", ini="cardprobe_max_turns"),
    Spec("source_check", "what to do with the sources suites read (`python:`, `mcp:`): `auto` "
         "(read and compare each with its recorded snapshot when it can be read), `always` (a "
         "source that cannot be read is a usage error; for CI), `never` (replay the snapshot, "
         "start nothing)", flag="--cardprobe-source-check", ini="cardprobe_source_check",
         choices=CHECK_MODES, read=values.one_of(CHECK_MODES), metavar="MODE"),
    Spec("source_timeout", "seconds reading one source may take (importing the module, "
         "listing the MCP server's tools) before it is stopped", ini="cardprobe_source_timeout",
         read=values.seconds),
    Spec("max_file_mb", "size cap in MB (at least one byte, at most 1000000) of every file "
         "the plugin reads (suites, prompts, cassettes, baseline)", ini="cardprobe_max_file_mb",
         read=values.megabytes),
    Spec("max_reply_mb", "size cap in MB of one reply, whole or streamed, as it arrives "
         "(compressed replies are refused); at most `cardprobe_max_file_mb`, the cap of the "
         "cassette it is recorded in", ini="cardprobe_max_reply_mb", read=values.megabytes,
         shown="`cardprobe_max_file_mb` (10)"),
    _int("max_stream_lines", help="most lines of one streamed reply (blank lines and SSE "
         "comments too)", ini="cardprobe_max_stream_lines"),
    _int("max_stream_chunks", help="most chunks of one streamed reply (NDJSON objects, SSE "
         "`data:` events)", ini="cardprobe_max_stream_chunks"),
    Spec("redact_fields", "request-body keys (any depth) recorded as `[redacted]`, added to "
         "the built-in ones", ini="cardprobe_redact_fields", kind="list",
         shown="`" + "`, `".join(_SETTINGS.redact_fields) + "`"),
    Spec("headers", "extra request headers, one `Name: value` a line (`$VAR` expanded; "
         "printable ASCII); sent with every request, the preflight's too; never recorded",
         ini="cardprobe_headers", kind="list", read=values.header_line),
    Spec("json_report", "write the JSON report (every sample's verdict, route and label) here",
         flag="--cardprobe-json", ini="cardprobe_json", read=values.file_path_text,
         metavar="PATH", path=True),
    Spec("md_report", "write a Markdown report here (also appended to "
         "`$GITHUB_STEP_SUMMARY`)", flag="--cardprobe-md", ini="cardprobe_md",
         read=values.file_path_text, metavar="PATH", path=True),
    Spec("html_report", "write a self-contained HTML report (charts, case x arm grid, whole "
         "replies) here", flag="--cardprobe-html", ini="cardprobe_html",
         read=values.file_path_text, metavar="PATH", path=True),
)  # fmt: skip

BY_NAME = {spec.name: spec for spec in SPECS}
#: Deprecated spelling -> its spec.
RENAMED = {spec.old: spec for spec in SPECS if spec.old}
