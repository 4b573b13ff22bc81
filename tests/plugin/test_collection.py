"""Collection: one item per case x model x channel x condition, filters, usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_cardprobe.suite.loader import load_suite

SHIPPED = load_suite(Path(__file__).resolve().parents[2] / "cases" / "cards.yaml")
CHANNELS, CONDITIONS = len(SHIPPED.channels), len(SHIPPED.conditions)
# Channel x condition pairs that are tests: seeded and schema exist on the prose channel only.
ARMS = [
    (channel, condition)
    for channel in SHIPPED.channels
    for condition in SHIPPED.conditions
    if channel == "prose" or condition not in ("seeded", "schema")
]
TOOL_ARMS = sum(channel == "tool" for channel, _ in ARMS)
PER_MODEL = 25 * len(ARMS)


def collected_ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line]


def test_one_item_per_case_model_channel_condition(project: pytest.Pytester) -> None:
    result = project.runpytest("--co", "-q", "cases", "--model", "a:1b", "--model", "b")
    ids = collected_ids(result)
    assert len(ids) == PER_MODEL * 2
    assert "cases/cards.yaml::date[a:1b-tool-cold]" in ids
    assert "cases/cards.yaml::control[b-prose-history]" in ids
    assert len(set(ids)) == len(ids)


def test_channel_and_condition_filters(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--co",
        "-q",
        "cases",
        "--model",
        "m",
        "--cardprobe-channel",
        "tool",
        "--cardprobe-condition",
        "cold",
    )
    ids = collected_ids(result)
    assert len(ids) == 25
    assert all(i.endswith("[m-tool-cold]") for i in ids)


@pytest.mark.parametrize(
    ("expr", "count"),
    [
        ("tool", 25 * 2 * TOOL_ARMS),
        ("qwen and cold", 25 * CHANNELS),
        ("date", 2 * len(ARMS)),
        ("choice and prose", 6 * 2 * CONDITIONS),
        ("not m1", PER_MODEL),
    ],
)
def test_k_selects_every_part_of_the_id(project: pytest.Pytester, expr: str, count: int) -> None:
    result = project.runpytest(
        "--co", "-q", "cases", "--model", "m1", "--model", "qwen3:4b", "-k", expr
    )
    assert len(collected_ids(result)) == count


def test_models_from_ini(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ncardprobe_models =\n    x\n    y:7b\n")
    ids = collected_ids(project.runpytest("--co", "-q", "cases"))
    assert len(ids) == PER_MODEL * 2
    assert "cases/cards.yaml::date[y:7b-prose-cold]" in ids


def test_no_model_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("cases")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no model to probe*--model NAME*cardprobe_models*"])


def test_other_yaml_files_are_ignored(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", other="just: data\ncases: []\n")
    result = pytester.runpytest("--co", "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def _edit(key: str, value: object) -> object:
    def edit(doc: dict[str, object]) -> str:
        doc[key] = value
        return yaml.safe_dump(doc, sort_keys=False)

    return edit


BAD_SUITES = {
    "unknown_key": (_edit("colour", "red"), "*bad.yaml:*colour*"),
    "samples_zero": (_edit("samples", 0), "*bad.yaml:*samples*"),
    "samples_string": (_edit("samples", "2"), "*bad.yaml:*samples*"),
    "unknown_judge": (_edit("judge", "vibes"), "*bad.yaml:*judge*vibes*"),
    "unknown_channel": (_edit("channels", ["prose", "smoke"]), "*bad.yaml:*channels*smoke*"),
    "unknown_condition": (_edit("conditions", ["warm"]), "*bad.yaml:*conditions*warm*"),
    "version": (_edit("cardprobe", 2), "*bad.yaml:*cardprobe*"),
    "missing_prompt": (
        _edit("prompts", {"prose": "nowhere.md", "tool": "prompts/tool.md"}),
        "*bad.yaml:*prompts.prose*nowhere.md*",
    ),
    "syntax": (lambda doc: "cardprobe: 1\ncases: [\n", "*bad.yaml:*"),
    "duplicate_key": (
        lambda doc: yaml.safe_dump(doc, sort_keys=False) + "samples: 3\n",
        "*bad.yaml:*samples*",
    ),
    "accept_not_list": (
        lambda doc: yaml.safe_dump(doc, sort_keys=False).replace(
            "accept:\n  - Input.Date", "accept: Input.Date", 1
        ),
        "*bad.yaml:*accept*",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_SUITES))
def test_bad_suite_is_a_usage_error_naming_file_and_key(
    project: pytest.Pytester, name: str
) -> None:
    make, pattern = BAD_SUITES[name]
    doc = yaml.safe_load((project.path / "cases" / "cards.yaml").read_text())
    (project.path / "cases" / "bad.yaml").write_text(make(doc))  # type: ignore[operator]
    result = project.runpytest("--co", "cases/bad.yaml", "--model", "m")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stderr.str()
    result.stderr.fnmatch_lines([pattern])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize(
    ("marker", "shown"),
    [
        ("samples(0)", "samples(0)"),
        ("samples('2')", "samples('2')"),
        ("samples", "samples()"),
        ("samples(True)", "samples(True)"),
        ("samples(2, 3)", "samples(2, 3)"),
    ],
)
def test_bad_samples_marker_is_a_usage_error(
    pytester: pytest.Pytester, marker: str, shown: str
) -> None:
    pytester.makepyfile(f"import pytest\n@pytest.mark.{marker}\ndef test_x():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_x*samples(n) takes one integer n >= 1*got {shown}*"])


def test_samples_marker_runs_body_n_times_and_needs_every_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        RUNS = []

        @pytest.mark.samples(3)
        def test_all_pass():
            RUNS.append(1)

        @pytest.mark.samples(n=3)
        def test_second_run_fails():
            RUNS.append(2)
            assert RUNS.count(2) != 2, "second sample went wrong"

        def test_counts():
            assert RUNS.count(1) == 3 and RUNS.count(2) == 3
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*1 of 3 samples failed*", "*run 2/3*second sample went wrong*"])


def test_samples_option_overrides_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        RUNS = []

        @pytest.mark.samples(5)
        def test_a():
            RUNS.append(1)

        def test_count():
            assert len(RUNS) == 2
        """
    )
    pytester.runpytest("--cardprobe-samples", "2").assert_outcomes(passed=2)


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_samples_option_is_validated(pytester: pytest.Pytester, value: str) -> None:
    result = pytester.runpytest("--cardprobe-samples", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--cardprobe-samples wants an integer >= 1*"])


def test_bad_suite_under_xdist_is_still_a_usage_error(project: pytest.Pytester) -> None:
    suite = project.path / "cases" / "cards.yaml"
    suite.write_text(suite.read_text().replace("samples: 2", "samples: 0"))
    result = project.runpytest("cases", "--model", "m", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cards.yaml:*samples*got 0*"])


def test_no_model_under_xdist_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("cases", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no model to probe*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_channel_no_suite_has_says_so(tools_project: pytest.Pytester, workers: list[str]) -> None:
    # Fails without the note: exit 5 and "no tests ran", not a word about the channel.
    result = tools_project.runpytest("-p", "no:randomly", "--cardprobe-channel", "tool", *workers)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "--cardprobe-channel tool selects no test: the collected suites have channels "
            "call (tools)"
        ]
    )


def test_a_condition_no_suite_has_says_so_while_the_other_selects(
    tools_project: pytest.Pytester,
) -> None:
    result = tools_project.runpytest(
        "--co", "-q", "--cardprobe-condition", "seeded", "--cardprobe-condition", "cold"
    )
    assert len(collected_ids(result)) > 0
    assert "--cardprobe-condition cold" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "--cardprobe-condition seeded selects no test: the collected suites have conditions "
            "cold (tools); history (tools); required (tools)"
        ]
    )


def test_a_channel_and_condition_never_asked_together_say_so(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ncardprobe_models = m\n")
    result = project.runpytest(
        "--co", "--cardprobe-channel", "tool", "--cardprobe-condition", "seeded", "cases"
    )
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "--cardprobe-channel tool with --cardprobe-condition seeded selects no test: the "
            "collected suites ask channel/condition *prose/seeded*"
        ]
    )


@pytest.mark.parametrize("dist", [[], ["-n", "2"]])
def test_an_arm_the_filters_leave_out_is_not_checked_before_the_run(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    """The xdist controller's preflight runs the collector's own pipeline: an arm that
    ``--cardprobe-channel``/``--cardprobe-condition`` leave out is not collected, so its
    cassette path cannot stop the run (the preflight used to check every arm)."""
    pytester.makeini("[pytest]\ncardprobe_models = m\n")
    (pytester.path / "p.md").write_text("Answer with a card.\n")
    # 224 characters: "<id>-prose-cold.yaml" fits a 255-byte file name (with the
    # temporary file's extra), "<id>-prose-schema.yaml" does not.
    case = "d" * 224
    (pytester.path / "s.yaml").write_text(
        "cardprobe: 1\nname: s\nchannels: [prose]\nconditions: [cold, schema]\n"
        f"prompts: {{prose: p.md}}\ncases:\n  - id: {case}\n"
        "    prompt: pick a day\n    accept: [Input.Date]\n"
    )
    everything = pytester.runpytest("-p", "no:cacheprovider", "s.yaml", *dist)
    assert everything.ret == pytest.ExitCode.USAGE_ERROR
    everything.stderr.fnmatch_lines(["*file system allows*"])
    chosen = pytester.runpytest(
        "-p", "no:cacheprovider", "s.yaml", *dist,
        "--cardprobe-channel", "prose", "--cardprobe-condition", "cold",
    )  # fmt: skip
    out = chosen.stdout.str() + chosen.stderr.str()
    assert "file system allows" not in out, out
    assert chosen.ret == pytest.ExitCode.OK, out  # replay of a suite never recorded: skipped
    chosen.stdout.fnmatch_lines(["*1 skipped*"])
