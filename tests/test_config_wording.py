"""A configuration mistake is said in one line naming its key and where it was set, with the
way out (``dsh.config.wording``): the choices of a setting that takes one of a few words, the
closest known name of a misspelt key or section, the section of a key written outside one. In
the user file, a project file and ``DSH_*`` variables alike."""

from __future__ import annotations

import logging
import typing
from pathlib import Path
from typing import Literal

import pytest

from dsh.config import SECTIONS, environment, load_settings, set_trust
from dsh.errors import ConfigError


def _word_settings() -> list[tuple[str, str, tuple[str, ...]]]:
    """Every ``[section] key`` that takes one of a few words, with its words, read off the
    sections' types (so a setting added later is covered)."""
    found = []
    for section, struct in SECTIONS.items():
        for key, kind in typing.get_type_hints(struct).items():
            words = [a for a in (kind, *typing.get_args(kind)) if typing.get_origin(a) is Literal]
            if words:
                found.append((section, key, typing.get_args(words[0])))
    return found


WORD_SETTINGS = _word_settings()


def home_with(tmp_path: Path, toml: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(toml)
    return {"DSH_HOME": str(home)}


def refusal(environ: dict[str, str], cwd: Path) -> str:
    with pytest.raises(ConfigError) as refused:
        load_settings(environ=environ, cwd=cwd)
    text = str(refused.value)
    assert "\n" not in text
    return text


def test_the_word_settings_are_found():
    assert ("tools", "approval", ("ask", "auto", "read-only")) in WORD_SETTINGS
    assert ("compaction", "backend", ("recallable", "basic", "off")) in WORD_SETTINGS
    assert ("provider", "tool_choice", ("auto", "required", "none")) in WORD_SETTINGS


@pytest.mark.parametrize(("section", "key", "words"), WORD_SETTINGS)
def test_every_word_setting_in_the_user_file_lists_its_choices(tmp_path, section, key, words):
    environ = home_with(tmp_path, f'[{section}]\n{key} = "yes"\n')
    assert refusal(environ, tmp_path) == (
        f"config key {section}.{key} must be one of {', '.join(words)}; got 'yes' "
        f"(set in {tmp_path / 'home' / 'config.toml'})"
    )


@pytest.mark.parametrize(("section", "key", "words"), WORD_SETTINGS)
def test_every_word_setting_from_the_environment_lists_its_choices(tmp_path, section, key, words):
    variable = f"DSH_{section}_{key}".upper()
    environ = {"DSH_HOME": str(tmp_path / "home"), variable: "yes"}
    assert refusal(environ, tmp_path) == (
        f"config key {section}.{key} must be one of {', '.join(words)}; got 'yes' "
        f"(set in environment variable {variable})"
    )


def ignored(environ: dict[str, str], cwd: Path, caplog: pytest.LogCaptureFixture) -> str:
    """What the one warning of an untrusted project file ignored whole says of why."""
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dsh"):
        load_settings(environ=environ, cwd=cwd)
    (said,) = [r.getMessage() for r in caplog.records]
    project_file = cwd / ".dsh" / "config.toml"
    start = f"{project_file}: ignored this untrusted project config, which does not load: "
    end = " (dsh runs without it until it is fixed)"
    assert said.startswith(start) and said.endswith(end)
    return said.removeprefix(start).removesuffix(end)


def test_a_word_setting_in_a_project_file_lists_its_choices_naming_the_file(tmp_path, caplog):
    """Said in the warning of an untrusted file (which names it once), refused in a trusted
    one (naming it where the key was set)."""
    (tmp_path / ".dsh").mkdir()
    (tmp_path / ".dsh" / "config.toml").write_text('[tools]\napproval = "yes"\n')
    environ = {"DSH_HOME": str(tmp_path / "home")}
    words = "config key tools.approval must be one of ask, auto, read-only; got 'yes'"
    assert ignored(environ, tmp_path, caplog) == words
    set_trust(tmp_path, True, environ)
    assert refusal(environ, tmp_path) == (f"{words} (set in {tmp_path / '.dsh' / 'config.toml'})")


def test_a_word_of_the_wrong_type_and_one_in_a_route_override_list_the_choices(tmp_path):
    environ = home_with(tmp_path, "[store]\nbackend = 3\n")
    assert refusal(environ, tmp_path).startswith(
        "config key store.backend must be one of jsonl, sqlite; got a value of type int"
    )
    environ = home_with(tmp_path, '[provider.overrides."ollama:qwen"]\ntool_choice = "any"\n')
    assert refusal(environ, tmp_path).startswith(
        'config key provider.overrides."ollama:qwen".tool_choice must be one of auto, '
        "required, none; got 'any'"
    )


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        (
            "[provider]\ntemprature = 0.2\n",
            "unknown config key provider.temprature in {file} (did you mean provider.temperature?)",
        ),
        (
            "[compaction]\nchunk_tokenz = 800\n",
            "unknown config key compaction.chunk_tokenz in {file} (did you mean "
            "compaction.chunk_tokens?)",
        ),
        (  # the right key in the wrong section
            '[provider]\napproval = "auto"\n',
            "unknown config key provider.approval in {file} (did you mean tools.approval?)",
        ),
        (
            "[providers]\nmodel = 1\n",
            "unknown config section [providers] in {file} (did you mean [provider]?)",
        ),
        (
            'model = "qwen"\n',
            "config key model in {file} belongs in a section (did you mean provider.model?)",
        ),
        (
            'backend = "sqlite"\n',
            "config key backend in {file} belongs in a section (did you mean "
            "compaction.backend or store.backend?)",
        ),
        (
            '[provider.overrides."m"]\ntemprature = 0.2\n',
            'unknown config key provider.overrides."m".temprature (did you mean '
            'provider.overrides."m".temperature?) (set in {file})',
        ),
        (
            '[mcp.servers.docs]\ncommand = ["x"]\nenabeld = false\n',
            "unknown config key mcp.servers.docs.enabeld (did you mean "
            "mcp.servers.docs.enabled?) (set in {file})",
        ),
        # nothing close enough: no guess
        ("[provider]\nxyzzy = 1\n", "unknown config key provider.xyzzy in {file}"),
        ("[xyzzy]\nx = 1\n", "unknown config section [xyzzy] in {file}"),
        (
            "xyzzy = 1\n",
            "unknown config key xyzzy in {file}: keys belong in a section ([provider], "
            "[compaction], [recall], [tools], [store], [mcp], [trust], [ui])",
        ),
    ],
)
def test_an_unknown_name_in_the_user_file_is_said_with_the_closest_known_one(tmp_path, toml, said):
    environ = home_with(tmp_path, toml)
    assert refusal(environ, tmp_path) == said.format(file=tmp_path / "home" / "config.toml")


def test_an_unknown_name_in_a_project_file_is_said_naming_that_file(tmp_path, caplog):
    (tmp_path / ".dsh").mkdir()
    project_file = tmp_path / ".dsh" / "config.toml"
    environ = {"DSH_HOME": str(tmp_path / "home")}
    cases = [
        (
            'model = "qwen"\n',
            "config key model{file} belongs in a section (did you mean provider.model?)",
        ),
        (
            "[provider]\ntemprature = 0.2\n",
            "unknown config key provider.temprature{file} (did you mean provider.temperature?)",
        ),
    ]
    for text, said in cases:
        project_file.write_text(text)
        assert ignored(environ, tmp_path, caplog) == said.format(file="")
        set_trust(tmp_path, True, environ)
        assert refusal(environ, tmp_path) == said.format(file=f" in {project_file}")
        set_trust(tmp_path, False, environ)


@pytest.mark.parametrize(
    ("variable", "meant"),
    [
        (
            "DSH_PROVIDER_TEMPRATURE",
            "[provider] has no such key (did you mean DSH_PROVIDER_TEMPERATURE?)",
        ),
        ("DSH_MODEL", "no config section matches (did you mean DSH_PROVIDER_MODEL?)"),
        ("DSH_PROVIDR_MODEL", "no config section matches (did you mean DSH_PROVIDER_MODEL?)"),
        ("DSH_PROVIDER_APPROVAL", "[provider] has no such key (did you mean DSH_TOOLS_APPROVAL?)"),
        ("DSH_XYZZY", "no config section matches"),
    ],
)
def test_an_unknown_variable_is_ignored_with_the_closest_known_one(
    tmp_path, caplog, monkeypatch, variable, meant
):
    monkeypatch.setattr(environment, "_warned_variables", set())  # said once per process
    environ = {"DSH_HOME": str(tmp_path / "home"), variable: "1"}
    with caplog.at_level(logging.WARNING, logger="dsh.config"):
        load_settings(environ=environ, cwd=tmp_path)
    assert [r.getMessage() for r in caplog.records] == [
        f"ignored environment variable {variable}: {meant} (see docs/config.md)"
    ]


def test_dshs_own_variables_are_not_warned_of_but_a_mistyped_key_is(tmp_path, caplog, monkeypatch):
    """``DSH_HYPOTHESIS_EXPLORE=1 uv run pytest`` (as the README says) and the benchmarks'
    ``DSH_LLAMA_*`` warned as unknown config variables; ``DSH_PROVIDER_MODLE`` still does."""
    monkeypatch.setattr(environment, "_warned_variables", set())
    environ = {
        "DSH_HOME": str(tmp_path / "home"),
        "DSH_WEB_TOKEN": "t" * 32,
        "DSH_HYPOTHESIS_EXPLORE": "1",
        "DSH_LLAMA_SERVER": "/opt/llama-server",
        "DSH_LLAMA_MODEL": "/opt/model.gguf",
        "DSH_LLAMA_EXTRA_ARGS": "--no-repack",
        "DSH_PROVIDER_MODLE": "m",
    }
    with caplog.at_level(logging.WARNING, logger="dsh.config"):
        load_settings(environ=environ, cwd=tmp_path)
        load_settings(environ=environ, cwd=tmp_path)  # once per process
    assert [r.getMessage() for r in caplog.records] == [
        "ignored environment variable DSH_PROVIDER_MODLE: [provider] has no such key "
        "(did you mean DSH_PROVIDER_MODEL?) (see docs/config.md)"
    ]


def test_every_dsh_variable_the_code_names_is_a_config_variable_or_on_the_allow_list():
    """The allow-list (``ENVIRONMENT_NAMES``) kept to what dsh's code, tests and benchmarks
    read: a ``"DSH_…"`` name quoted there is a config variable or on it."""
    import re

    from dsh.config import ENVIRONMENT_NAMES

    root = Path(__file__).resolve().parents[1]
    config_variables = {
        f"DSH_{section}_{key}".upper()
        for section, kind in SECTIONS.items()
        for key in kind.__struct_fields__
    }
    examples = {"DSH_SECTION_KEY", "DSH_MODEL"}  # how the config docstrings name a mistake
    files = [
        *(root / "src").rglob("*.py"),
        *(root / "benchmarks").rglob("*.py"),
        root / "tests" / "conftest.py",
        root / "README.md",
    ]
    named: dict[str, str] = {}
    for path in files:
        for name in re.findall(r"[\"'`](DSH_[A-Z0-9_]+)(?![A-Z0-9_*])", path.read_text()):
            named.setdefault(name, str(path.relative_to(root)))
    unknown = {
        name: where
        for name, where in named.items()
        if name not in config_variables | ENVIRONMENT_NAMES | examples
    }
    assert unknown == {}
    assert {"DSH_HYPOTHESIS_EXPLORE", "DSH_LLAMA_SERVER"} <= set(named)  # the scan found them
