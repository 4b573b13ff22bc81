"""Hostile input, end to end: a bad suite, tool declaration, cassette, option, ini key,
baseline or report path ends in a clear message naming the file (and the key or line), with
no traceback, nothing written outside the project, and the user's cassettes and baseline
left byte for byte as they were.

Each row of ``HOSTILE`` is one input run through pytest. The project is a copy of the
shipped suite, cassettes and baseline in ``<tmp>/proj``; ``<tmp>/outside`` stands for the
rest of the disk. Inputs whose whole story is one reader refusing one value are unit tests
of that reader instead (an option or ini value: tests/unit/test_option_value_limits.py; a
number in a suite: tests/unit/test_suite_finite_numbers.py; a cassette file:
tests/unit/test_cassette_reading.py; a baseline file: tests/unit/test_baseline_reading.py),
built by the same arrangers (tests/hostile_inputs.py). ``ROWS`` names them beside the rows
kept here; every guide row keeps at least one whole run when it has any, and every input
whose point is a secret kept out of the output runs whole.
"""

from __future__ import annotations

import ast
import codecs
import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hostile_inputs import (  # tests/ is on sys.path (rootdir-relative)
    ARM,
    BIG,
    ROOT,
    UTF16,
    Arrange,
    arm,
    baseline,
    both,
    cassette,
    cassette_file,
    deep,
    edit,
    fifo,
    ini,
    mkdir,
    prompt_path,
    replace_prompt,
    reply,
    reply_text,
    second_suite,
    set_in,
    suite,
    symlink,
    write,
)

ONE = ("cases", "-k", "date and prose and cold")
TOOLS = ("cases", "-k", "readme and cold")
USAGE = pytest.ExitCode.USAGE_ERROR
FAILED = pytest.ExitCode.TESTS_FAILED
OK = pytest.ExitCode.OK


@dataclass(frozen=True)
class Hostile:
    """One bad input: how to make it, how to run, and what the user must see."""

    id: str
    arrange: Arrange
    exit: int
    said: tuple[str, ...]
    args: tuple[str, ...] = ONE
    env: dict[str, str] = field(default_factory=dict)
    #: What must not be in the output (a planted secret).
    absent: tuple[str, ...] = ()


HOSTILE: list[Hostile] = [
    # ------------------------------------------------------------------ call suites and tools files
    Hostile(
        "tools-json-dangling-ref",
        edit("cases/tools/tools.json", '"minimum": 1,', '"$ref": "#/$defs/nope",'),
        USAGE,
        ("tools.json:16: $[0].function.parameters.properties.start_line.$ref:", "does not resolve"),
        TOOLS,
    ),
    Hostile(
        "args-typo",
        edit(
            "cases/tools.yaml",
            "args: {path: {regex: '(\\./)?README",
            "args: {pth: {regex: '(\\./)?README",
        ),
        USAGE,
        (
            "tools.yaml:46: cases[0].expect.args.pth: case 'readme': tool 'read_file' has no "
            "argument 'pth'; did you mean 'path'?",
        ),
        TOOLS,
    ),
    Hostile(
        "sequence-longer-than-max-turns",
        edit("cases/tools.yaml", "max_turns: 4", "max_turns: 2"),
        USAGE,
        ("the suite's max_turns: 2 (line 27)", "leaves no turn for the answer"),
        TOOLS,
    ),
    Hostile(
        "tools-json-lone-surrogate",
        edit("cases/tools/tools.json", '"Read a text file', '"\\udfff Read a text file'),
        USAGE,
        ("tools.json:6: $[0].function.description: holds a lone surrogate",),
        TOOLS,
    ),
    # ----------------------------------------- suites: names and paths that would leave the project
    # A renamed suite has nothing recorded: --cardprobe-strict-baseline fails its tests (they
    # are skipped otherwise) and -vv prints each one's paragraph, which names its cassette.
    Hostile(
        "suite-name-traversal",
        suite("name: cards", "name: ../../outside/x"),
        FAILED,
        ("not recorded", "%2E.%2F..%2Foutside%2Fx"),
        (*ONE, "--cardprobe-strict-baseline", "-vv"),
    ),
    Hostile(
        "suite-name-absolute",
        suite("name: cards", "name: /tmp/cardprobe-hostile"),
        FAILED,
        ("not recorded", "%2Ftmp%2Fcardprobe-hostile"),
        (*ONE, "--cardprobe-strict-baseline", "-vv"),
    ),
    Hostile(
        "suite-name-dotdot",
        suite("name: cards", "name: '..'"),
        FAILED,
        ("%2E.",),
        (*ONE, "--cardprobe-strict-baseline", "-vv"),
    ),
    Hostile(
        "suite-name-empty",
        suite("name: cards", "name: ''"),
        USAGE,
        ("cards.yaml:7: name:", "non-empty"),
    ),
    Hostile(
        "two-suites-one-name",
        second_suite("name: cards"),
        USAGE,
        ("other.yaml", "cards.yaml", "already used"),
    ),
    Hostile(
        "case-id-too-long",
        suite("- id: date", "- id: " + "x" * 300),
        USAGE,
        ("the case id makes a cassette file name of 330 bytes",),
        ("cases", "-k", "prose and cold"),
    ),
    Hostile(
        "suite-name-too-long",
        suite("name: cards", "name: " + "ü" * 130),
        USAGE,
        ("the suite name makes a cassette file name of 780 bytes",),
    ),
    Hostile(
        "prompt-etc-passwd",
        prompt_path("../../../../../../../../etc/passwd"),
        USAGE,
        ("cards.yaml:19: prompts.prose", "outside the project"),
    ),
    Hostile(
        "prompt-absolute",
        prompt_path("/etc/hostname"),
        USAGE,
        ("prompts.prose", "outside the project"),
    ),
    Hostile(
        "prompt-outside-sibling",
        prompt_path("../../outside/secret.txt"),
        USAGE,
        ("prompts.prose", "outside the project"),
    ),
    Hostile(
        "prompt-symlink-outside",
        replace_prompt(symlink("/etc/hostname")),
        USAGE,
        ("prompts.prose", "outside the project"),
    ),
    Hostile(
        "prompt-dev-zero",
        replace_prompt(symlink("/dev/zero")),
        USAGE,
        ("prompts.prose", "outside the project"),
    ),
    Hostile(
        "prompt-fifo", replace_prompt(os.mkfifo), USAGE, ("prompts.prose", "prose.md is a FIFO")
    ),
    Hostile(
        "prompt-directory",
        replace_prompt(lambda t: t.mkdir()),
        USAGE,
        ("prompts.prose", "prose.md is a directory"),
    ),
    Hostile(
        "prompt-dangling-symlink",
        replace_prompt(symlink("gone.md")),
        USAGE,
        ("prompts.prose", "prose.md is a dangling symbolic link"),
    ),
    Hostile(
        "prompt-too-large",
        write("cases/prompts/prose.md", b"a" * BIG),
        USAGE,
        ("prompts.prose", "prose.md is larger than the 10 MB cap", "cardprobe_max_file_mb"),
    ),
    Hostile(
        "prompt-utf16",
        write("cases/prompts/prose.md", codecs.BOM_UTF16_LE + "hi".encode("utf-16-le")),
        USAGE,
        ("prompts.prose", "prose.md", "UTF-16"),
    ),
    Hostile(
        "prompt-latin1",
        write("cases/prompts/prose.md", "caf\xe9".encode("latin-1")),
        USAGE,
        ("prompts.prose", "prose.md", "not UTF-8"),
    ),
    Hostile("prompt-empty", write("cases/prompts/prose.md", ""), USAGE, ("prompts.prose", "empty")),
    Hostile("prompt-nul", prompt_path("prose.md\x00x"), USAGE, ("prompts.prose",)),
    # ----------------------------------------------------------------- suites: not silently skipped
    Hostile(
        "suite-yaml-syntax",
        suite("channels: [prose, tool, retry]", "channels: [prose, tool, retry"),
        USAGE,
        ("cards.yaml:", "invalid YAML"),
    ),
    Hostile(
        "suite-top-level-list",
        write("cases/list.yaml", "- cardprobe: 1\n  name: x\n"),
        USAGE,
        ("list.yaml:1", "expected a mapping"),
    ),
    Hostile(
        "suite-utf16-bom",
        write("cases/wide.yaml", UTF16),
        USAGE,
        ("wide.yaml", "UTF-16", "save it as UTF-8"),
    ),
    Hostile(
        "suite-utf16-no-bom",
        write("cases/wide.yaml", "cardprobe: 1\n".encode("utf-16-le")),
        USAGE,
        ("wide.yaml", "not UTF-8", "NUL bytes", "UTF-16"),
    ),
    Hostile(
        "suite-latin1",
        write("cases/latin.yaml", "cardprobe: 1\nname: caf\xe9\n".encode("latin-1")),
        USAGE,
        ("latin.yaml:2", "not UTF-8"),
    ),
    Hostile(
        "suite-upper-suffix",
        write("cases/suite.YAML", "cardprobe: 1\nname: [\n"),
        USAGE,
        ("suite.YAML", "invalid YAML"),
    ),
    Hostile(
        "suite-yml-mixed-case",
        write("cases/suite.Yml", "cardprobe: 2\n"),
        USAGE,
        ("suite.Yml:1: cardprobe", "unsupported suite format version"),
    ),
    Hostile(
        "suite-tab-indent",
        write("cases/tab.yaml", "cardprobe: 1\ncases:\n\t- id: x\n"),
        USAGE,
        ("tab.yaml:3", "invalid YAML"),
    ),
    Hostile(
        "suite-flow-broken",
        write("cases/flow.yaml", "{cardprobe: 1, name: flow,\n cases: [{id: a, prompt: q}\n"),
        USAGE,
        ("flow.yaml:3: invalid YAML",),
    ),
    Hostile(
        "suite-bom-accepted",
        lambda root: (root / "cases" / "cards.yaml").write_bytes(
            codecs.BOM_UTF8 + (root / "cases" / "cards.yaml").read_bytes()
        ),
        OK,
        (),
    ),
    Hostile(
        "suite-python-tag",
        write("cases/tag.yaml", "cardprobe: 1\nname: !!python/object:os.system x\n"),
        USAGE,
        ("tag.yaml:2", "name"),
    ),
    Hostile(
        "suite-alias-bomb",
        write(
            "cases/bomb.yaml",
            "cardprobe: 1\n"
            + "".join(
                f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9 if i else ["x"] * 9) + "]\n"
                for i in range(9)
            ),
        ),
        USAGE,
        ("bomb.yaml", "alias bomb"),
    ),
    Hostile(
        "suite-deep-nesting",
        write("cases/deep.yaml", "cardprobe: 1\noptions: " + deep(5000) + "\n"),
        USAGE,
        ("deep.yaml",),
    ),
    Hostile(
        "suite-too-large",
        write("cases/big.yaml", "cardprobe: 1\n" + "# x\n" * (BIG // 4)),
        USAGE,
        ("big.yaml", "larger than the 10 MB cap"),
    ),
    # ------------------------------------------------------------------------------- suites: bounds
    Hostile(
        "samples-billion",
        suite("samples: 2", "samples: 1000000000"),
        USAGE,
        ("cards.yaml:14: samples", "more than the limit of 100"),
    ),
    Hostile(
        "samples-101",
        suite("samples: 2", "samples: 101"),
        USAGE,
        ("cards.yaml:14: samples", "cardprobe_max_samples"),
    ),
    Hostile("samples-zero", suite("samples: 2", "samples: 0"), USAGE, ("cards.yaml:14: samples",)),
    Hostile(
        "options-nan",
        suite("num_predict: 512", "num_predict: .nan"),
        USAGE,
        ("cards.yaml:24: options.num_predict", "not a finite number"),
    ),
    Hostile(
        "tool-name-traversal",
        suite("name: render_adaptive_card", "name: ../../x"),
        USAGE,
        ("tool.function.name",),
    ),
    Hostile(
        "case-id-dotdot",
        suite("- id: date", "- id: '..'"),
        FAILED,
        ("%2E.-prose-cold",),
        ("cases", "-k", "prose and cold", "-vv"),
    ),
    # ---------------------------------------------------------- cassettes and the replies they hold
    Hostile(
        "cassette-dev-zero",
        both(
            lambda r: (r / cassette_file()).unlink(),
            lambda r: (r / cassette_file()).symlink_to("/dev/zero"),
        ),
        FAILED,
        ("date-prose-cold.yaml", "is a symbolic link to /dev/zero"),
    ),
    Hostile(
        "cassette-link-outside",
        both(
            lambda r: (r / cassette_file()).unlink(),
            lambda r: (r / cassette_file()).symlink_to(r.parent / "outside" / "secret.txt"),
        ),
        FAILED,
        ("date-prose-cold.yaml", "outside the cassette folder"),
        absent=("OUTSIDE-SECRET",),
    ),
    Hostile(
        "cassette-metadata-list",
        cassette(lambda d: d["metadata"]["cardprobe"].update(suite_file=["x"] * 3)),
        FAILED,
        ("corrupt cassette", "metadata cardprobe.suite_file is list, not text"),
    ),
    Hostile(
        "cassette-reply-overflow",
        reply_text('"eval_count":', '"eval_count":1e999,"x":'),
        FAILED,
        ("date-prose-cold.yaml: interaction 1: reply is not JSON: 1e999 overflows a float",),
    ),
    Hostile(
        "tool-arguments-nan",
        both(
            reply(
                set_in(
                    ("message", "tool_calls"),
                    [{"function": {"name": "read_file", "arguments": '{"path": NaN}'}}],
                ),
                "cassettes/tools/smollm2%3A135m/readme-call-cold.yaml",
            ),
            # A pass in the baseline, so the failure is a flip and pytest shows its label.
            baseline(
                lambda d: d["arms"]["tools/smollm2:135m/call/cold"]["verdicts"]["readme"].update(
                    passed=True
                )
            ),
        ),
        OK,  # one flip, within the ±1 floor: the test fails, the gate warns, the run passes
        ("malformed read_file: arguments are not valid JSON: NaN is not a JSON number",),
        TOOLS,
    ),
    # -------------------------------------------------------------------------------------- options
    Hostile("model-empty", ini(), USAGE, ("--model", "empty"), ("cases", "--model", "")),
    Hostile("model-dotdot", ini(), USAGE, ("--model", "'..'"), ("cases", "--model", "..")),
    Hostile(
        "model-absolute",
        ini(),
        USAGE,
        ("--model", "'/etc/passwd'"),
        ("cases", "--model", "/etc/passwd"),
    ),
    Hostile(
        "model-traversal",
        ini(),
        USAGE,
        ("--model", "'a/../../b'"),
        ("cases", "--model", "a/../../b"),
    ),
    Hostile("model-control-char", ini(), USAGE, ("--model",), ("cases", "--model", "a\x1bb")),
    Hostile(
        "model-not-utf8",
        ini(),
        USAGE,
        ("holds bytes that are not UTF-8 text",),
        ("cases", "--model", "caf\udce9"),
    ),
    Hostile(
        "model-bidi-override",
        ini(),
        USAGE,
        ("holds U+202E RIGHT-TO-LEFT OVERRIDE",),
        ("cases", "--model", "qwen\u202e3"),
        absent=("qwen\u202e3",),
    ),
    Hostile(
        "samples-option-101",
        ini(),
        USAGE,
        ("--cardprobe-samples", "100"),
        (*ONE, "--cardprobe-samples", "101"),
    ),
    Hostile(
        "cassette-dir-is-a-file",
        write("notadir", "x"),
        USAGE,
        ("notadir", "not a folder"),
        (*ONE, "--cardprobe-cassette-dir", "notadir"),
    ),
    Hostile(
        "server-one-slash",
        ini(),
        USAGE,
        ("has one slash after http:; write http://",),
        (*ONE, "--cardprobe-server", "http:/alice:S3CRET" + "PW@localhost:11434"),
        absent=("S3CRET" + "PW",),
    ),
    # ------------------------------------------------------------------------------------- ini keys
    Hostile(
        "ini-model-dotdot",
        write("pytest.ini", "[pytest]\ncardprobe_models = ..\n"),
        USAGE,
        ("cardprobe_models", "'..'"),
    ),
    Hostile(
        "ini-cassette-dir-outside",
        ini("cardprobe_cassette_dir = ../outside"),
        USAGE,
        ("ini key cardprobe_cassette_dir", "outside the project"),
    ),
    Hostile(
        "ini-baseline-outside",
        ini("cardprobe_baseline = /tmp/cardprobe-hostile.json"),
        USAGE,
        ("ini key cardprobe_baseline", "outside the project"),
    ),
    Hostile(
        "header-not-ascii",
        ini("cardprobe_headers =\n    X-Token: café"),
        USAGE,
        ("ini key cardprobe_headers the value of X-Token holds a character that is not printable",),
        absent=("café",),
    ),
    Hostile(
        "header-no-colon",
        ini("cardprobe_headers =\n    X-Key S3CRET" + "PW"),
        USAGE,
        ("ini key cardprobe_headers has a line with no ':' in it",),
        absent=("S3CRET" + "PW",),
    ),
    # ------------------------------------------------------------------------------------ baselines
    Hostile(
        "baseline-binary",
        write("cardprobe-baseline.json", b"\x00\xff\xfe" * 10),
        USAGE,
        ("cardprobe-baseline.json", "not UTF-8"),
    ),
    Hostile(
        "baseline-nan",
        edit("cardprobe-baseline.json", '"calls": 50', '"calls": NaN'),
        USAGE,
        ("cardprobe-baseline.json is not valid JSON: NaN is not a JSON number",),
    ),
    Hostile(
        "baseline-option-directory",
        mkdir("dir"),
        USAGE,
        ("dir", "is a directory"),
        (*ONE, "--cardprobe-baseline", "dir", "--cardprobe-update-baseline"),
    ),
    Hostile(
        "baseline-update-below-file",
        write("file", "x"),
        USAGE,
        ("file", "is a file, not a folder"),
        (*ONE, "--cardprobe-baseline", "file/b.json", "--cardprobe-update-baseline"),
    ),
    # --------------------------------------------------------------------------------- report paths
    Hostile(
        "json-report-directory",
        mkdir("out"),
        USAGE,
        ("--cardprobe-json", "out", "is a directory"),
        (*ONE, "--cardprobe-json", "out"),
    ),
    Hostile(
        "md-report-directory",
        mkdir("out"),
        USAGE,
        ("--cardprobe-md", "is a directory"),
        (*ONE, "--cardprobe-md", "out"),
    ),
    Hostile(
        "json-report-below-file",
        write("file", "x"),
        USAGE,
        ("--cardprobe-json", "is a file, not a folder"),
        (*ONE, "--cardprobe-json", "file/r.json"),
    ),
    Hostile(
        "md-report-unwritable",
        ini(),
        USAGE,
        ("--cardprobe-md", "/proc/cardprobe.md"),
        (*ONE, "--cardprobe-md", "/proc/cardprobe.md"),
    ),
    Hostile(
        "report-is-baseline",
        lambda root: None,
        USAGE,
        ("resolves to the baseline",),
        (*ONE, "--cardprobe-update-baseline", "--cardprobe-json", "cardprobe-baseline.json"),
    ),
    Hostile(
        "report-is-suite",
        lambda root: None,
        USAGE,
        ("is a cardprobe suite",),
        (*ONE, "--cardprobe-md", "cases/cards.yaml"),
    ),
    Hostile(
        "step-summary-directory",
        mkdir("summary"),
        OK,
        ("warning: cannot write the $GITHUB_STEP_SUMMARY", "summary"),
        env={"GITHUB_STEP_SUMMARY": "summary"},
    ),
    Hostile(
        "step-summary-fifo",
        fifo("summary.fifo"),
        OK,
        ("warning: cannot write the $GITHUB_STEP_SUMMARY", "not a regular file"),
        env={"GITHUB_STEP_SUMMARY": "summary.fifo"},
    ),
    # -------------------------------------------------- errors of the plugin and of the user's hook
    Hostile(
        "internal-error",
        both(
            ini("cardprobe_headers =\n    X-Auth: T0KEN" + "VALUE"),
            write(
                "conftest.py",
                "import pytest_cardprobe.run.asking as asking\n"
                "KEPT = asking.answer_of\n\n"
                "def pytest_configure(config):\n    asking.answer_of = None  # a forced bug\n\n"
                "def pytest_unconfigure(config):\n    asking.answer_of = KEPT\n",
            ),
        ),
        FAILED,
        ("cardprobe internal error: TypeError: 'NoneType' object is not callable (please report)",),
        (*ONE, "--cardprobe-server", "http://alice:S3CRET" + "PW@127.0.0.1:9/?key=K3Y" + "VALUE"),
        absent=("T0KEN" + "VALUE", "S3CRET" + "PW", "K3Y" + "VALUE", "Traceback"),
    ),
    Hostile(
        "hook-error",
        write(
            "conftest.py",
            "def pytest_cardprobe_adjust_request(request, probe, config):\n"
            "    raise RuntimeError('boom at http://alice:' + 'S3CRETPW@host/')\n",
        ),
        FAILED,
        ("cardprobe: error in", "in pytest_cardprobe_adjust_request, called while running the"),
        absent=("S3CRET" + "PW",),
    ),
]


# --------------------------------------------------------------------------- the guide's table


@dataclass(frozen=True)
class Row:
    """One row of the guide's "What happens when…" table (docs/guide/what-happens-when.md) and
    the examples that show it.

    ``input`` is a phrase of the row's first cell; every one of ``quotes`` is in the row as
    the guide writes it, and the output of each of its ``hostile`` examples (run by
    ``test_hostile_input``) shows at least one of them. ``tests`` are other tests showing the
    row (``file::function``): live ones, ones this table's machinery cannot arrange, or the
    unit test of the reader whose message is the whole story of an input (its rows are built
    by the same arrangers and hold the message to the row's words).
    """

    input: str
    quotes: tuple[str, ...]
    hostile: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()


INTERNAL = "tests/plugin/test_internal_errors.py"
NONFINITE = "tests/plugin/test_non_finite_numbers.py"
NAME_LENGTHS = "tests/plugin/test_cassette_name_lengths.py"
TEXT = "tests/unit/test_invalid_text.py"
ARGUMENTS = "tests/unit/test_unsendable_arguments.py"
REPORTS = "tests/unit/test_report_reading.py"
PREFIXED = "tests/unit/test_prefixed_server.py"
LIMITS = "tests/unit/test_option_value_limits.py"
HERE = "tests/plugin/test_hostile.py"
OPTIONS = "tests/plugin/test_option_values.py"
FAULTS = "tests/live/test_faults_live.py"
WIRE = "tests/plugin/test_wire_inputs.py"
REPLIES = "tests/plugin/test_hostile_replies.py"
UNPARSED = "tests/plugin/test_unparsed_recording.py"
CAPS = "tests/unit/test_reply_caps.py"
#: The readers' own rows: hostile files whose whole message is the reader's.
CASSETTE_READER = "tests/unit/test_cassette_reading.py::test_hostile_input"
BASELINE_READER = "tests/unit/test_baseline_reading.py::test_hostile_input"
ROWS: tuple[Row, ...] = (
    Row("a suite `name`, model name or case id with `..`", ("%2E.", "%2Ftmp"),
        ("suite-name-traversal", "suite-name-absolute", "suite-name-dotdot", "case-id-dotdot")),
    Row("an empty suite `name`", ("name: expected a non-empty string",), ("suite-name-empty",)),
    Row("makes a cassette file name longer than the file system allows",
        ("makes a cassette file name of",), ("case-id-too-long", "suite-name-too-long"),
        (f"{NAME_LENGTHS}::test_a_case_id_too_long_for_a_file_name_is_refused_at_collection",)),
    Row("two suites with the same `name`", ("is already used by",), ("two-suites-one-name",)),
    Row("a prompt path outside the project", ("outside the project",),
        ("prompt-etc-passwd", "prompt-absolute", "prompt-outside-sibling",
         "prompt-symlink-outside", "prompt-dev-zero")),
    Row("a prompt that is a FIFO", ("is a FIFO (named pipe), not a regular file", "is a directory",
                                    "is a dangling symbolic link", "path contains a NUL character",
                                    "file is empty"),
        ("prompt-fifo", "prompt-directory", "prompt-dangling-symlink", "prompt-nul",
         "prompt-empty")),
    Row("a file larger than `cardprobe_max_file_mb`", ("is larger than the 10 MB cap",),
        ("prompt-too-large", "suite-too-large"), (CASSETTE_READER, BASELINE_READER)),
    Row("with `cardprobe:` at the start of a line that does not load",
        ("invalid YAML: ", "expected a mapping of suite keys",
         "cannot read value: could not determine a constructor",
         "unsupported suite format version"),
        ("suite-yaml-syntax", "suite-top-level-list", "suite-upper-suffix", "suite-yml-mixed-case",
         "suite-tab-indent", "suite-python-tag")),
    Row("a suite or prompt in UTF-16/UTF-32 or Latin-1",
        ("encoded as UTF-16; save it as UTF-8", "not UTF-8 text"),
        ("prompt-utf16", "prompt-latin1", "suite-utf16-bom", "suite-utf16-no-bom", "suite-latin1")),
    Row("a suite that starts with a UTF-8 byte-order mark", (), ("suite-bom-accepted",)),
    Row("`samples` above 100 or below 1, alias bombs, deep nesting",
        ("is more than the limit of 100", "expected an integer >= 1", "alias bomb",
         "nested too deeply"),
        ("samples-billion", "samples-101", "samples-zero", "suite-alias-bomb",
         "suite-deep-nesting")),
    Row("NaN, `.inf`/`Infinity` or a number that overflows a float (`1e999`) anywhere in a suite",
        ("is not a finite number",),
        ("options-nan",),
        ("tests/unit/test_suite_finite_numbers.py::test_a_number_no_request_can_carry_is_"
         "refused_by_the_suite_reader",)),
    Row("a string that is no text (a lone surrogate", ("lone surrogate",),
        ("tools-json-lone-surrogate",),
        (CASSETTE_READER, BASELINE_READER,
         f"{TEXT}::test_a_reply_whose_text_holds_a_lone_surrogate_is_malformed_not_a_crash_"
         "at_the_end",
         f"{TEXT}::test_a_card_whose_type_is_a_lone_surrogate_is_broken_json")),
    Row("`args:` naming an argument the tool does not declare", ("did you mean 'path'?",),
        ("args-typo",)),
    Row("a tool schema that is not valid JSON Schema",
        ("does not resolve", "is not a JSON Schema draft cardprobe knows"),
        ("tools-json-dangling-ref",),
        ("tests/unit/test_call_usage.py::test_a_schema_draft_nobody_knows_is_refused_at_load",)),
    Row("a tool `name` that is no function name", ("must be letters, digits, _ or - (max 64)",),
        ("tool-name-traversal",)),
    Row("a `sequence` of N calls with `max_turns`", ("leaves no turn for the answer",),
        ("sequence-longer-than-max-turns",)),
    Row("`--model \"\"`, `--model ..`", ("--model", "cardprobe_models"),
        ("model-empty", "model-dotdot", "model-absolute", "model-traversal", "model-control-char",
         "model-not-utf8", "ini-model-dotdot", "model-bidi-override")),
    Row("the same model twice", ("a warning",), (),
        (f"{HERE}::test_a_model_given_twice_runs_once_with_a_warning",)),
    Row("`--cardprobe-samples 101`", ("--cardprobe-", "cardprobe_"),
        ("samples-option-101",),
        (f"{HERE}::test_more_samples_than_the_limit_need_the_ini_key",
         f"{LIMITS}::test_an_option_or_ini_value_out_of_range_is_a_usage_error_naming_it")),
    Row("`cardprobe_cassette_dir`, `cardprobe_baseline` or a report key",
        ("is outside the project",), ("ini-cassette-dir-outside", "ini-baseline-outside")),
    Row("a cassette that is not a server reply", ("corrupt cassette",),
        ("cassette-metadata-list",), (CASSETTE_READER,)),
    Row("a cassette that is a symbolic link out of the cassette folder",
        ("outside the cassette folder",), ("cassette-dev-zero", "cassette-link-outside"),
        ("tests/plugin/test_cassette_links.py::test_live_never_overwrites_a_file_outside_"
         "through_a_linked_cassette",
         "tests/plugin/test_cassette_links.py::test_record_mode_stale_never_creates_a_file_"
         "outside_through_a_dangling_link")),
    Row("a recorded reply with a number no float can hold", ("1e999 overflows a float",),
        ("cassette-reply-overflow",),
        (f"{NONFINITE}::test_a_recorded_number_that_overflows_a_float_is_a_corrupt_cassette",)),
    Row("a tool call whose arguments no request could carry back",
        ("malformed read_file: arguments are not valid JSON",), ("tool-arguments-nan",),
        (f"{ARGUMENTS}::test_a_tool_loop_refuses_arguments_no_request_can_carry",
         f"{ARGUMENTS}::test_arguments_nested_thousands_deep_are_refused_not_a_recursion_error")),
    Row("a baseline that is binary, not JSON", ("baseline ",),
        ("baseline-binary",), (BASELINE_READER,)),
    Row("a `diff` report whose test has a field of the wrong type",
        ("error: new.json: tests[0].condition: expected a string, got a list",), (),
        (f"{REPORTS}::test_diff_refuses_a_report_whose_test_has_a_field_of_the_wrong_type",
         f"{REPORTS}::test_diff_refuses_a_report_with_a_figure_of_400_digits")),
    Row("a baseline or a `diff` report with `NaN`", ("NaN is not a JSON number",),
        ("baseline-nan",),
        (f"{NONFINITE}::test_a_baseline_number_that_is_not_finite_is_a_usage_error",
         f"{NONFINITE}::test_diff_refuses_a_report_with_a_number_that_is_not_finite")),
    Row("`--cardprobe-server` / `cardprobe_servers` / `$OLLAMA_HOST` that is not",
        ("--cardprobe-server",), ("server-one-slash",),
        (f"{OPTIONS}::test_a_server_that_is_not_an_http_url_is_a_usage_error",
         f"{LIMITS}::test_an_option_or_ini_value_out_of_range_is_a_usage_error_naming_it",
         f"{OPTIONS}::test_a_bad_ini_server_names_the_key_and_hides_credentials",
         f"{OPTIONS}::test_a_bad_ollama_host_is_a_usage_error",
         f"{WIRE}::test_a_host_httpx_would_refuse_when_sending_is_refused_at_configure_time")),
    Row("a server URL with a path of its own", ("/api/chat",), (),
        (f"{PREFIXED}::test_a_recording_through_a_server_url_with_a_path_replays",)),
    Row("a `cardprobe_headers` line that is not `Name: value`", ("cardprobe_headers",),
        ("header-not-ascii", "header-no-colon"),
        (f"{OPTIONS}::test_a_header_that_cannot_be_sent_is_a_usage_error_that_hides_its_value",
         f"{OPTIONS}::test_an_api_key_that_cannot_be_sent_is_a_usage_error",
         f"{WIRE}::test_a_header_the_client_owns_or_an_unset_variable_is_a_usage_error")),
    Row("a server behind a gateway that wants a header", ("the preflight sends",), (),
        ("tests/plugin/test_preflight.py::test_the_preflight_sends_the_headers_and_token_of_every_"
         "request",)),
    Row("an empty path", ("wants a path, got an empty one",), (),
        (f"{OPTIONS}::test_an_empty_report_path_is_a_usage_error",
         f"{OPTIONS}::test_an_empty_ini_path_is_a_usage_error")),
    Row("naming a directory, a path below a file",
        ("is a directory", "is a file, not a folder", "is not a folder",
         "cannot be written in /proc"),
        ("baseline-option-directory", "baseline-update-below-file", "json-report-directory",
         "md-report-directory", "json-report-below-file", "md-report-unwritable",
         "cassette-dir-is-a-file")),
    Row("a report that still cannot be written at the end",
        ("ERROR: cannot write the JSON report",),
        (), (f"{HERE}::test_a_report_that_cannot_be_written_at_the_end_is_one_line_and_the_"
             "others_are_written",)),
    Row("`GITHUB_STEP_SUMMARY` pointing at a directory", ("warning:",),
        ("step-summary-directory", "step-summary-fifo"),
        ("tests/plugin/test_step_summary.py::test_a_step_summary_that_is_a_fifo_is_a_warning_"
         "not_a_hang",)),
    Row("a flow-style suite (`{cardprobe: 1, …`) with a YAML syntax error", ("invalid YAML",),
        ("suite-flow-broken",),
        ("tests/plugin/test_suite_files.py::test_a_flow_style_suite_with_a_syntax_error_is_a_"
         "usage_error_naming_file_and_line",)),
    Row("a report path (pytest's `--junitxml` included) that is the baseline",
        ("resolves to the baseline", "is a cardprobe suite"),
        ("report-is-baseline", "report-is-suite"),
        ("tests/plugin/test_output_paths.py::test_an_output_that_would_replace_an_input_is_a_"
         "usage_error",)),
    Row("two `--cardprobe-update-baseline` runs at once", ("take turns",), (),
        ("tests/plugin/test_concurrent_updates.py::test_two_sessions_updating_the_baseline_at_"
         "once_keep_both_arms",
         "tests/unit/test_baseline_updates.py::test_overlapping_updates_keep_every_runs_arm")),
    Row("a full disk or a read-only cassette folder during `--live`",
        ("cannot write the cassette",), (),
        ("tests/plugin/test_recording_failures.py::test_a_cassette_that_cannot_be_written_is_an_"
         "error_naming_it_and_the_old_one_stays",)),
    Row("a regular expression that backtracks", ("RE2 cannot run it",), (),
        ("tests/unit/test_regex_engine.py::test_a_catastrophic_regex_matcher_is_judged_at_once",
         "tests/unit/test_regex_engine.py::test_a_catastrophic_schema_pattern_is_judged_at_once",
         "tests/unit/test_regex_engine.py::test_a_pattern_re2_cannot_run_as_meant_is_refused_"
         "naming_it")),
    Row("a `max_turns` of a million", ("cardprobe_max_turns",), (),
        ("tests/unit/test_turn_limit.py::test_max_turns_past_the_limit_is_refused_naming_the_"
         "ini_key",)),
    Row("a `$ref` cycle in a tool schema", ("$ref cycle",), (),
        ("tests/unit/test_schema_refs.py::test_a_ref_cycle_is_refused_at_load_naming_the_chain",
         "tests/unit/test_schema_refs.py::test_a_suite_with_a_ref_cycle_stops_the_run_with_a_"
         "usage_error")),
    Row("credentials in `-o cardprobe_headers` or `-o cardprobe_servers`", ("[redacted]",), (),
        ("tests/plugin/test_echoed_options.py::test_the_rerecord_hint_in_every_output_carries_"
         "no_header_value_or_url_password",)),
    Row("a URL, `www.` host, `@mention` or `#123`", ("code span",), (),
        ("tests/unit/test_markdown_links.py::test_links_mentions_and_references_become_code",
         "tests/unit/test_markdown_links.py::test_no_generated_text_leaves_a_live_link_or_"
         "mention_outside_code")),
    Row("a suite name or a tool name holding U+202E", ("U+202E",), (),
        ("tests/unit/test_names.py::test_a_suite_name_with_a_bidi_override_is_refused_naming_key_"
         "and_line",
         "tests/unit/test_names.py::test_a_call_tool_name_with_a_bidi_override_is_refused")),
    Row("a server answering 500/503", ("`infra`",), (),
        (f"{FAULTS}::test_a_server_fault_is_infra_retried_unrecorded_and_unscored",
         f"{FAULTS}::test_a_fault_then_a_good_reply_is_retried_and_recorded",
         "tests/plugin/test_breaker.py::test_breaker_stops_asking_a_failing_server")),
    Row("a tool call the server's parser cannot read",
        ("unparsed: the server could not parse the tool call",), (),
        ("tests/live/test_unparsed_live.py::test_a_real_parse_error_is_the_models_plain_and_streamed",
         f"{UNPARSED}::test_a_parse_error_is_recorded_judged_malformed_and_replayed_so",
         "tests/unit/test_unparsed_calls.py::test_a_stream_is_unparsed_exactly_when_shape_and_message_agree")),
    Row("a stream that goes on after `done: true`", ("up to the first `done`",), (),
        (f"{REPLIES}::test_a_stream_that_goes_on_after_done_is_judged_up_to_done_and_replays_so",
         "tests/unit/test_stream_done.py::test_the_reply_is_the_stream_cut_at_its_first_done")),
    Row("a compressed reply (a gzip bomb", ("reply refused: compressed (gzip)",
                                            "reply refused: larger than the 10 MB cap",
                                            "stream of more than 100000 chunks",
                                            "replay reads"), (),
        (f"{REPLIES}::test_a_gzip_bomb_is_infra_named_and_not_recorded",
         f"{REPLIES}::test_a_reply_cap_above_the_cassette_cap_is_a_usage_error",
         f"{REPLIES}::test_a_recording_larger_than_the_cassette_cap_is_not_written",
         f"{CAPS}::test_a_reply_of_the_default_cap_is_read_and_one_byte_more_is_refused",
         f"{CAPS}::test_the_stream_limits_at_their_defaults_and_one_past",
         f"{CAPS}::test_replay_holds_a_recorded_stream_to_the_same_limits")),
    Row("a server that drips one byte", ("request deadline",), (),
        ("tests/unit/test_deadline.py::test_a_reply_that_keeps_dripping_fails_as_infra_at_the_deadline",)),
    Row("`--live` against a server that refuses connections", ("does not answer",), (),
        (f"{HERE}::test_a_refused_server_ends_a_live_suite_in_seconds",)),
    Row("killed with SIGKILL while writing", ("the old file stays whole",), (),
        (f"{HERE}::test_sigkill_during_update_baseline_leaves_the_old_baseline_then_a_new_one",
         f"{FAULTS}::test_sigkill_during_a_live_recording_leaves_the_old_cassette_then_a_new_one")),
    Row("an exception escaping the probe path", ("cardprobe internal error", "cardprobe: error in"),
        ("internal-error", "hook-error"),
        (f"{INTERNAL}::test_a_bug_of_the_plugin_is_reported_as_one_without_frame_arguments",
         f"{INTERNAL}::test_an_error_in_the_users_hook_is_theirs_and_carries_no_secret")),
    Row("credentials in headers, the server URL or the request body", ("never in cassettes",), (),
        ("tests/live/test_secrets_live.py::test_no_secret_reaches_a_cassette_the_terminal_or_a_"
         "report",
         f"{LIMITS}::test_the_settings_show_no_secret_in_a_traceback",
         "tests/unit/test_wire_repr.py::test_no_secret_reaches_a_repr_or_a_traceback",
         f"{WIRE}::test_no_credential_in_httpx_or_vcrpy_log_lines")),
    Row("model replies with ANSI escapes", ("\\x1b[2J",), (),
        (f"{HERE}::test_model_text_with_escape_sequences_is_shown_escaped",)),
)  # fmt: skip
ROW_OF = {name: row for row in ROWS for name in row.hostile}


GUIDE_PAGE = ROOT / "docs" / "guide" / "what-happens-when.md"


def guide_rows() -> list[tuple[str, str]]:
    """The (input, outcome) cells of every row of the guide's "What happens when…" table."""
    text = GUIDE_PAGE.read_text(encoding="utf-8")
    section = text.split("# What happens when…", 1)[1].split("\n# ", 1)[0]
    cells = []
    for line in section.splitlines():
        if line.startswith("| ") and not line.startswith(("| input |", "|---")):
            # A cell ends at " | " (a "|" inside backticks is written "\|" nowhere here).
            first, _, rest = line[2:].rstrip(" |").partition(" | ")
            cells.append((first, rest))
    return cells


# --------------------------------------------------------------------------- the run


def _snapshot(root: Path) -> dict[str, str]:
    """Digest of every file of the user's recordings: cassettes and baseline."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink() or not path.is_file():
            found[str(path.relative_to(root))] = "not a file"
            continue
        found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _recordings(project: Path) -> dict[str, str]:
    found = _snapshot(project / "cassettes")
    base = project / "cardprobe-baseline.json"
    if base.is_file() and not base.is_symlink():
        found["baseline"] = hashlib.sha256(base.read_bytes()).hexdigest()
    return found


def _outside(tmp: Path) -> set[str]:
    return {
        str(p.relative_to(tmp))
        for p in tmp.rglob("*")
        if p.relative_to(tmp).parts[0] not in ("proj", "basetemp")
        and not p.relative_to(tmp).parts[0].startswith("runpytest-")
    }


@pytest.fixture
def hostile_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped suite, cassettes and baseline in ``proj``, and a folder beside it."""
    proj = pytester.path / "proj"
    shutil.copytree(ROOT / "cases", proj / "cases")
    shutil.copytree(ROOT / "cassettes", proj / "cassettes")
    shutil.copy(ROOT / "cardprobe-baseline.json", proj / "cardprobe-baseline.json")
    (proj / "pytest.ini").write_text("[pytest]\ncardprobe_models = smollm2:135m\n")
    (pytester.path / "outside").mkdir()
    (pytester.path / "outside" / "secret.txt").write_text("OUTSIDE-SECRET\n")
    monkeypatch.chdir(proj)
    return proj


@pytest.mark.parametrize("case", HOSTILE, ids=[h.id for h in HOSTILE])
def test_hostile_input(
    case: Hostile, hostile_project: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    if "GITHUB_STEP_SUMMARY" not in case.env:
        monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    case.arrange(hostile_project)
    before = _recordings(hostile_project)
    around = _outside(pytester.path)
    started = time.monotonic()
    result = pytester.runpytest("-p", "no:cacheprovider", *case.args)
    took = time.monotonic() - started
    out = result.stdout.str() + "\n" + result.stderr.str()

    assert result.ret == case.exit, out[-3000:]
    for said in case.said:
        assert said in out, f"{said!r} not in output:\n{out[-3000:]}"
    for secret in case.absent:
        assert secret not in out, f"{secret!r} in output:\n{out[-3000:]}"
    row = ROW_OF[case.id]  # the guide's row of this input: its outcome, in its words
    assert not row.quotes or any(q in out for q in row.quotes), (row.input, row.quotes, out[-3000:])
    assert "Traceback" not in out, out[-3000:]
    assert "INTERNALERROR" not in out, out[-3000:]
    assert _recordings(hostile_project) == before, "the user's cassettes or baseline changed"
    assert _outside(pytester.path) == around, "a file was written outside the project"
    assert not Path("/tmp/cardprobe-hostile").exists()
    assert not Path("/tmp/cardprobe-hostile.json").exists()
    assert took < 60, f"took {took:.0f}s"


# --------------------------------------------------------------------------- table and examples

BY_ID = {h.id: h for h in HOSTILE}


def _defined(reference: str) -> bool:
    """Whether ``file::function`` names a test function defined at the top of that file."""

    path, _, name = reference.partition("::")
    file = ROOT / path
    if not file.is_file():
        return False
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


@pytest.mark.parametrize(("first", "outcome"), guide_rows(), ids=lambda cell: cell[:48])
def test_every_row_of_the_guide_table_has_examples_that_show_it(first: str, outcome: str) -> None:
    found = [row for row in ROWS if row.input in first]
    assert len(found) == 1, f"guide row {first!r} matches {len(found)} entries of ROWS"
    row = found[0]
    for quote in row.quotes:
        assert quote in first + outcome, f"{quote!r} is not in the guide row {first!r}"
    assert row.hostile or row.tests, f"guide row {first!r} has no example"
    for name in row.hostile:
        assert name in BY_ID, f"{name!r} (guide row {first!r}) is no entry of HOSTILE"
    for reference in row.tests:
        assert _defined(reference), f"{reference} (guide row {first!r}) does not exist"
    exits = {BY_ID[name].exit for name in row.hostile}
    if exits:
        # The row says "usage error" exactly when one of its examples is one.
        assert (USAGE in exits) == ("usage error" in outcome), (first, exits)


def test_every_example_and_every_entry_belongs_to_a_guide_row() -> None:
    cells = [first for first, _ in guide_rows()]
    assert sorted(BY_ID) == sorted(ROW_OF), set(BY_ID) ^ set(ROW_OF)
    assert len(BY_ID) == len(HOSTILE), "two entries of HOSTILE share an id"
    for row in ROWS:
        assert any(row.input in first for first in cells), f"no guide row for {row.input!r}"


# --------------------------------------------------------------------------- beyond the table


def test_sigkill_during_update_baseline_leaves_the_old_baseline_then_a_new_one(
    hostile_project: Path, pytester: pytest.Pytester
) -> None:
    from killing import BLOCKING_CONFTEST, kill_during_write

    # An edited verdict, so that updating really changes the file.
    arm(set_in(("verdicts", "date", "label"), "edited by hand"))(hostile_project)
    (hostile_project / "conftest.py").write_text(BLOCKING_CONFTEST)
    baseline_file = hostile_project / "cardprobe-baseline.json"
    old = baseline_file.read_bytes()
    kill_during_write(hostile_project, *ONE, "--cardprobe-update-baseline")
    assert baseline_file.read_bytes() == old, "the baseline is not the old one after the kill"
    assert len(list(hostile_project.glob(".cardprobe-baseline.json.*.tmp"))) == 1
    result = pytester.runpytest("-p", "no:cacheprovider", *ONE, "--cardprobe-update-baseline")
    assert result.ret == OK, result.stdout.str()
    new = baseline_file.read_bytes()
    assert new != old
    assert json.loads(new)["arms"][ARM]["verdicts"]["date"]["label"] == "prose"
    assert list(hostile_project.glob(".cardprobe-baseline.json.*.tmp")) == []


def test_a_model_given_twice_runs_once_with_a_warning(
    hostile_project: Path, pytester: pytest.Pytester
) -> None:
    result = pytester.runpytest(
        "-p", "no:cacheprovider", *ONE, "--model", "smollm2:135m", "--model", "smollm2:135m"
    )
    out = result.stdout.str()
    assert "'smollm2:135m' is given twice; its tests run once" in out
    assert "/ 1 selected" in out and re.search(r"\b1 (failed|passed|xfailed)\b", out), out


def test_more_samples_than_the_limit_need_the_ini_key(
    hostile_project: Path, pytester: pytest.Pytester
) -> None:
    suite("samples: 2", "samples: 150")(hostile_project)
    assert pytester.runpytest("-p", "no:cacheprovider", *ONE).ret == USAGE
    ini("cardprobe_max_samples = 200")(hostile_project)
    result = pytester.runpytest("-p", "no:cacheprovider", *ONE)
    # The cassette holds 2 replies, the suite now wants 150: stale, not a usage error.
    assert result.ret == FAILED
    assert "asked for more" in result.stdout.str()


def test_a_samples_marker_above_the_limit_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncardprobe_models = smollm2:135m\n")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.samples(1000)
        def test_many():
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == USAGE
    assert "samples(1000) is more than the limit of 100" in result.stderr.str()


def test_a_report_that_cannot_be_written_at_the_end_is_one_line_and_the_others_are_written(
    hostile_project: Path, pytester: pytest.Pytester
) -> None:
    # The path is fine when the run starts; a directory takes its place while tests run.
    (hostile_project / "conftest.py").write_text(
        "import os\n\ndef pytest_sessionstart(session):\n    os.mkdir('out.json')\n"
    )
    result = pytester.runpytest(
        "-p", "no:cacheprovider", *ONE, "--cardprobe-json", "out.json", "--cardprobe-md", "out.md"
    )
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == FAILED, out
    lines = [line for line in out.splitlines() if "cannot write the JSON report" in line]
    assert len(lines) == 1 and "out.json" in lines[0], out
    assert "Traceback" not in out
    md = (hostile_project / "out.md").read_text()
    assert md.startswith("<!-- cardprobe-report -->\n## cardprobe")


def test_model_text_with_escape_sequences_is_shown_escaped(
    hostile_project: Path, pytester: pytest.Pytester
) -> None:
    reply(set_in(("message", "content"), "plain \x1b[2J\x1b[31mred\x07 text\r"))(hostile_project)
    # A baseline pass, so the failure is a flip and pytest shows it (a known failure xfails).
    arm(set_in(("verdicts", "date", "passed"), True))(hostile_project)
    result = pytester.runpytest("-p", "no:cacheprovider", *ONE)
    out = result.stdout.str()
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    assert "plain \\x1b[2J\\x1b[31mred\\x07 text\\x0d" in out


def test_a_refused_server_ends_a_live_suite_in_seconds(
    hostile_project: Path, pytester: pytest.Pytester
) -> None:
    before = _recordings(hostile_project)
    started = time.monotonic()
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "cases",
        "-k",
        "prose",
        "--live",
        "--cardprobe-server",
        "127.0.0.1:9",
    )
    took = time.monotonic() - started
    said = result.stdout.str() + result.stderr.str()
    # The live preflight finds the closed port before any test starts: one usage error.
    assert result.ret == USAGE
    assert "server http://127.0.0.1:9 does not answer" in said
    assert "Traceback" not in said
    assert took < 30, f"a live run against a closed port took {took:.0f}s"
    assert _recordings(hostile_project) == before
