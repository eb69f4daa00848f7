"""A model name from the config file or a ``DSH_*`` variable (``provider.model``,
``compaction.summarizer``) with a character that does not
print (a line break, a tab, a terminal escape) is refused at load in one line, as ``--model``
and ``/model`` refuse it: one rule (``dsh.config.model_name_problem``), the name is recorded,
sent to the server and shown on every face."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from dsh.agent.model_command import model_name
from dsh.config import load_settings, model_name_problem
from dsh.errors import ConfigError, UsageError
from tests.cli.conftest import DSH

NAMES = [("qwen\nrm -rf", "qwen\\nrm -rf"), ("a\tb", "a\\tb"), ("m\x1b[31m", "m\\x1b[31m")]


def _home(tmp_path: Path, toml: str = "") -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(toml)
    return {"DSH_HOME": str(home)}


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_model_name_from_the_environment_that_does_not_print_is_refused(tmp_path, name, shown):
    environ = _home(tmp_path) | {"DSH_PROVIDER_MODEL": name}
    with pytest.raises(ConfigError) as refused:
        load_settings(environ=environ, cwd=tmp_path)
    assert str(refused.value) == (
        f"config key provider.model takes a model name on one line, not '{shown}' "
        "(set in environment variable DSH_PROVIDER_MODEL)"
    )


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[provider]\nmodel = "{}"\n', "provider.model"),
        ('[compaction]\nsummarizer = "{}"\n', "compaction.summarizer"),
    ],
)
@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_model_name_in_the_config_file_that_does_not_print_is_refused(
    tmp_path, toml, key, name, shown
):
    escaped = json.dumps(name)[1:-1]  # a TOML basic string takes JSON's escapes
    environ = _home(tmp_path, toml.format(escaped))
    with pytest.raises(ConfigError) as refused:
        load_settings(environ=environ, cwd=tmp_path)
    said = str(refused.value)
    assert said.startswith(f"config key {key} takes a model name on one line, not '{shown}'")
    assert said.isprintable()


def test_names_that_print_are_still_taken(tmp_path):
    toml = '[provider]\nmodel = "Qwen2.5 7B Instruct"\n[compaction]\nsummarizer = "ollama:q:7b"\n'
    settings = load_settings(environ=_home(tmp_path, toml), cwd=tmp_path)
    assert settings.provider.model == "Qwen2.5 7B Instruct"
    assert settings.compaction.summarizer == "ollama:q:7b"


@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_the_config_the_flag_and_model_say_one_rule(name, shown):
    rule = f"takes a model name on one line, not '{shown}'"
    assert model_name_problem(name) == rule
    with pytest.raises(UsageError) as refused:
        model_name(name)
    assert str(refused.value) == f"/model {rule}"


def test_a_summarizer_flag_that_does_not_print_is_refused_before_anything_is_written(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env["DSH_HOME"] = str(tmp_path / "home")
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"text": "never"}]))
    done = subprocess.run(
        [DSH, "run", "--script", str(script), "--summarizer", "a\tb", "hi"],
        env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "dsh: error: Invalid value for '--summarizer': takes a model name on one line, not "
        "'a\\tb' (see `dsh run --help`)\n"
    )
    assert not (tmp_path / "home" / "sessions").exists()
