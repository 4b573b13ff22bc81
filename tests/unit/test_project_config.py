"""cli/project.py finds the rootdir and config file where pytest does, from any folder of the
project, without pytest's private modules; its path keys are the option table's."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cardprobe.cli.project import (
    BASELINE_KEY,
    DEFAULT_BASELINE,
    JSON_REPORT_KEY,
    REDACT_FIELDS_KEY,
    ConfigProblem,
    find_project,
)
from pytest_cardprobe.glue.option_table import BY_NAME

#: name -> {file: text} of a project; the folder ``a/b`` is where the commands start.
LAYOUTS: dict[str, dict[str, str]] = {
    "pytest.ini": {"pytest.ini": "[pytest]\ncardprobe_baseline = x/b.json\n"},
    "empty pytest.ini": {"pytest.ini": ""},
    ".pytest.ini": {".pytest.ini": "[pytest]\ncardprobe_baseline = x/b.json\n"},
    "pytest.toml": {"pytest.toml": '[pytest]\ncardprobe_baseline = "x/b.json"\n'},
    "pyproject ini_options": {
        "pyproject.toml": '[tool.pytest.ini_options]\ncardprobe_baseline = "x/b.json"\n'
    },
    "pyproject native": {"pyproject.toml": '[tool.pytest]\ncardprobe_baseline = "x/b.json"\n'},
    "tox.ini": {"tox.ini": "[DEFAULT]\nx = 1\n[tox]\n[pytest]\ncardprobe_baseline = x/b.json\n"},
    "setup.cfg": {"setup.cfg": "[metadata]\n[tool:pytest]\ncardprobe_baseline = x/b.json\n"},
    "pytest.ini beats pyproject": {
        "pyproject.toml": '[tool.pytest.ini_options]\ncardprobe_baseline = "no.json"\n',
        "pytest.ini": "[pytest]\ncardprobe_baseline = x/b.json\n",
    },
    "a nearer pyproject without pytest's table is passed": {
        "a/pyproject.toml": "[project]\nname = 'x'\n",
        "tox.ini": "[pytest]\ncardprobe_baseline = x/b.json\n",
    },
    "a nearer setup.cfg without its section is passed": {
        "a/b/setup.cfg": "[metadata]\nname = x\n",
        "setup.cfg": "[tool:pytest]\ncardprobe_baseline = x/b.json\n",
    },
    "pyproject without the table, nothing else": {"a/pyproject.toml": "[project]\n"},
    "setup.py only": {"a/setup.py": ""},
    "nothing": {},
}


def make(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    start = root / "a" / "b"
    start.mkdir(parents=True, exist_ok=True)
    return start


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rootdir_and_configfile_are_pytests_own(
    layout: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = make(pytester.path, LAYOUTS[layout])
    monkeypatch.chdir(start)
    config = pytester.parseconfig()  # pytest's own answer, from the same folder
    project = find_project(start)
    assert (project.rootdir, project.configfile) == (config.rootpath, config.inipath)
    if "cardprobe_baseline" in "".join(LAYOUTS[layout].values()):
        assert project.path(BASELINE_KEY) == project.rootdir / "x" / "b.json"
    else:
        assert project.path(BASELINE_KEY) is None
        assert project.path(BASELINE_KEY, DEFAULT_BASELINE) == project.rootdir / DEFAULT_BASELINE


def test_the_keys_are_the_option_tables() -> None:
    assert BY_NAME["baseline"].ini == BASELINE_KEY
    assert str(BY_NAME["baseline"].default) == DEFAULT_BASELINE
    assert BY_NAME["json_report"].ini == JSON_REPORT_KEY
    assert BY_NAME["redact_fields"].ini == REDACT_FIELDS_KEY


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("pyproject.toml", "[tool.pytest.ini_options\n", "cannot read it as TOML"),
        ("tox.ini", "no section here\n", "cannot read it as an ini file"),
        ("pytest.ini", "[pytest]\ncardprobe_baseline = out/\n", "ini key cardprobe_baseline in"),
        ("pytest.toml", "[pytest]\ncardprobe_baseline = 3\n", "wants a file path, got 3"),
        # tomllib recurses into nested arrays: deep enough, it raises RecursionError.
        ("pyproject.toml", f"[tool.pytest]\nx = {'[' * 5000}{']' * 5000}\n", "as TOML"),
    ],
    ids=["toml", "ini", "folder", "number", "deep"],
)
def test_a_broken_config_file_is_named(tmp_path: Path, name: str, text: str, said: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigProblem, match=said) as caught:
        find_project(tmp_path).path(BASELINE_KEY)
    assert str(tmp_path / name) in str(caught.value)


def test_an_ini_default_section_is_not_read_as_pytests(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text("[DEFAULT]\ncardprobe_baseline = no.json\n[pytest]\n")
    assert find_project(tmp_path).path(BASELINE_KEY) is None
