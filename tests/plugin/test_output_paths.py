"""Where a run writes never destroys what it reads: a report that resolves to the baseline, a
suite or a file in the cassette folder is a usage error before any test runs, and so is one
report path given twice."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--cardprobe-update-baseline", "--cardprobe-json", "cardprobe-baseline.json"),
         "cardprobe-baseline.json: resolves to the baseline"),
        (("--cardprobe-md", "cardprobe-baseline.json"),
         "cardprobe-baseline.json: resolves to the baseline"),
        (("--cardprobe-html", "link-to-baseline.html"),
         "link-to-baseline.html: resolves to the baseline"),
        (("--cardprobe-json", "cases/cards.yaml"),
         "cases/cards.yaml: is a cardprobe suite"),
        (("--cardprobe-md", "cassettes/cards/smollm2%3A135m/date-prose-cold.yaml"),
         "is inside the cassette folder"),
        (("--cardprobe-json", "cassettes/report.json"), "is inside the cassette folder"),
        (("--cardprobe-json", "r.out", "--cardprobe-md", "r.out"),
         "r.out: is the file --cardprobe-json writes too"),
        (("--cardprobe-update-baseline", "--cardprobe-baseline", "cases/cards.yaml"),
         "cases/cards.yaml (--cardprobe-update-baseline): is a cardprobe suite"),
        (("--cardprobe-md", "tox.ini"),
         "tox.ini: is the pytest configuration file"),
        (("--cardprobe-update-baseline", "--cardprobe-baseline", "tox.ini"),
         "(--cardprobe-update-baseline): is the pytest configuration file"),
        (("--junitxml", "cardprobe-baseline.json"),
         "--junitxml cardprobe-baseline.json: resolves to the baseline"),
        (("--junitxml", "cassettes/j.xml"), "--junitxml cassettes/j.xml: is inside the cassette"),
        (("--junitxml", "tox.ini"), "--junitxml tox.ini: is the pytest configuration"),
        (("--junitxml", "r.out", "--cardprobe-json", "r.out"),
         "--junitxml r.out: is the file --cardprobe-json writes too"),
    ],
    ids=["json-is-baseline", "md-is-baseline", "html-links-to-baseline", "json-is-suite",
         "md-is-cassette", "json-in-cassette-folder", "two-reports-one-file",
         "baseline-is-suite", "md-is-config", "baseline-is-config", "junit-is-baseline",
         "junit-in-cassette-folder", "junit-is-config", "junit-and-json-one-file"],
)  # fmt: skip
def test_an_output_that_would_replace_an_input_is_a_usage_error(
    recorded: pytest.Pytester, args: tuple[str, ...], said: str
) -> None:
    (recorded.path / "link-to-baseline.html").symlink_to("cardprobe-baseline.json")
    before = _digests(recorded.path)
    result = recorded.runpytest("-p", "no:cacheprovider", "-k", "date and prose and cold", *args)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert said in out, out
    assert _digests(recorded.path) == before


def test_reports_beside_the_baseline_are_written(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(
        "-p", "no:cacheprovider", "-k", "date and prose and cold", "--cardprobe-update-baseline",
        "--cardprobe-json", "r.json", "--cardprobe-md", "r.md",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert (recorded.path / "r.json").is_file() and (recorded.path / "r.md").is_file()


@pytest.mark.parametrize(
    "args",
    [("--cardprobe-md", "cases/prompts/prose.md"),
     ("--cardprobe-json", "cases/prompts/tool.md"),
     ("--cardprobe-html", "cases/prompts/prose.md")],
    ids=["md-is-prompt", "json-is-prompt", "html-is-prompt"],
)  # fmt: skip
def test_a_report_over_a_file_a_suite_reads_is_a_usage_error_before_any_test(
    recorded: pytest.Pytester, args: tuple[str, ...]
) -> None:
    before = _digests(recorded.path)
    result = recorded.runpytest("-p", "no:cacheprovider", "-k", "date and prose and cold", *args)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "which the suite 'cards' reads, and the file would replace it" in out, out
    assert _digests(recorded.path) == before


def test_report_paths_from_ini_keys_are_relative_to_the_rootdir(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded.makeini(
        "[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_json = out/run.json\n"
        "cardprobe_md = out/run.md\ncardprobe_html = out/run.html\n"
    )
    (recorded.path / "out").mkdir()
    sub = recorded.path / "cases"
    monkeypatch.chdir(sub)  # started in a subfolder: the paths still land under the rootdir
    result = recorded.runpytest("-p", "no:cacheprovider", "-k", "date and prose and cold", ".")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    for name in ("run.json", "run.md", "run.html"):
        assert (recorded.path / "out" / name).is_file(), name
    assert not (sub / "out").exists()
    # The flag wins over the key (relative to the folder pytest was started in); an empty key
    # writes no report.
    recorded.makeini("[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_json = out/a.json\n")
    flag = recorded.runpytest(
        "-p", "no:cacheprovider", "-k", "date and prose and cold", ".", "--cardprobe-json", "b.json"
    )  # fmt: skip
    assert flag.ret == pytest.ExitCode.OK and (sub / "b.json").is_file()
    assert not (recorded.path / "out" / "a.json").exists()
    recorded.makeini("[pytest]\ncardprobe_models = smollm2:135m\ncardprobe_json =\n")
    empty = recorded.runpytest("-p", "no:cacheprovider", "-k", "date and prose and cold", ".")
    assert empty.ret == pytest.ExitCode.OK, empty.stdout.str()


@pytest.mark.parametrize(
    ("ini", "said"),
    [
        ("cardprobe_json = ../outside.json", "ini key cardprobe_json: "),
        ("cardprobe_html = /tmp/elsewhere.html", "ini key cardprobe_html: /tmp/elsewhere.html "),
        ("cardprobe_md = cardprobe-baseline.json", "ini key cardprobe_md "),
    ],
    ids=["json-above-the-project", "html-absolute", "md-is-baseline"],
)
def test_a_report_ini_key_stays_inside_the_project_and_is_named(
    recorded: pytest.Pytester, ini: str, said: str
) -> None:
    # A cloned project's config cannot make a run write outside it (a flag can: it is typed).
    recorded.makeini(f"[pytest]\ncardprobe_models = smollm2:135m\n{ini}\n")
    before = _digests(recorded.path)
    result = recorded.runpytest("-p", "no:cacheprovider", "-k", "date and prose and cold")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert said in out, out
    assert not (recorded.path.parent / "outside.json").exists()
    assert _digests(recorded.path) == before
