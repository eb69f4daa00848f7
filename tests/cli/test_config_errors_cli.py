"""A ``dsh run`` that stops on a configuration error touches no session (real processes)."""

from __future__ import annotations

import json

from tests.cli.test_run_cli import dsh, env, write_script  # noqa: F401
from tests.helpers import run_session_id


def session_files(home):
    sessions = home / "sessions"
    return sorted(p.relative_to(home) for p in sessions.rglob("*")) if sessions.exists() else []


def test_a_summariser_without_its_key_creates_no_session_and_no_lock(tmp_path, env):  # noqa: F811
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    result = dsh(
        "run", "--script", str(script), "--summarizer", "deepseek:deepseek-chat", "hello",
        env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "DEEPSEEK_API_KEY" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert session_files(tmp_path / "home") == []


def test_an_unknown_summariser_provider_creates_no_session(tmp_path, env):  # noqa: F811
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    env = {**env, "DSH_COMPACTION_SUMMARIZER_PROVIDER": "nowhere"}
    result = dsh(
        "run", "--script", str(script), "--summarizer", "m", "hello",
        env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and "unknown provider 'nowhere'" in result.stderr
    assert session_files(tmp_path / "home") == []


def test_a_config_error_on_resume_appends_nothing_and_holds_no_lock(tmp_path, env):  # noqa: F811
    script = write_script(tmp_path / "s.json", [{"text": "first"}, {"text": "second"}])
    first = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path)
    session_id = run_session_id(first.stderr)
    log = next((tmp_path / "home" / "sessions").rglob("session.jsonl"))
    before = log.read_bytes()
    failed = dsh(
        "run", "--script", str(script), "--session", session_id,
        "--summarizer", "deepseek:deepseek-chat", "again", env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert failed.returncode == 2 and log.read_bytes() == before
    lock = log.with_name("session.lock")
    assert not lock.exists() or lock.read_text() == ""  # no pid left behind
    again = dsh(
        "run", "--script", str(script), "--session", session_id, "again", env=env, cwd=tmp_path
    )
    assert again.stdout.splitlines()[0] == "second"
    types = [json.loads(line)["type"] for line in log.read_text().splitlines()]
    assert types.count("turn/start") == 2


def test_an_unknown_dsh_variable_warns_by_name_and_the_command_still_runs(tmp_path, env):  # noqa: F811
    result = dsh("sessions", "list", env={**env, "DSH_NO_SUCH_THING": "1"}, cwd=tmp_path)
    assert result.returncode == 0 and "no sessions" in result.stdout
    assert result.stderr.count("DSH_NO_SUCH_THING") == 1
    assert result.stderr.startswith("dsh: warning: ignored environment variable DSH_NO_SUCH_THING")


def test_config_mistakes_are_one_line_with_the_way_out_and_create_no_session(tmp_path, env):  # noqa: F811
    config = tmp_path / "home" / "config.toml"
    config.parent.mkdir()
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    said = {
        '[tools]\napproval = "yes"\n': "dsh: error: config key tools.approval must be one of "
        f"ask, auto, read-only; got 'yes' (set in {config})",
        "[provider]\ntemprature = 0.2\n": f"dsh: error: unknown config key provider.temprature "
        f"in {config} (did you mean provider.temperature?)",
        'model = "qwen"\n': f"dsh: error: config key model in {config} belongs in a section "
        "(did you mean provider.model?)",
    }
    for toml, line in said.items():
        config.write_text(toml)
        result = dsh("run", "--script", str(script), "hello", env=env, cwd=tmp_path, check=False)
        assert (result.returncode, result.stderr.splitlines()) == (2, [line])
    assert session_files(tmp_path / "home") == []


def test_an_openai_compatible_route_without_a_model_names_every_way_to_give_one(tmp_path, env):  # noqa: F811
    """No server to ask and no model: the flag, the variable and the config key are all
    named; then the same for the base URL."""
    argv = ["run", "--provider", "openai-compatible", "hello"]
    result = dsh(*argv, env=env, cwd=tmp_path, check=False)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "dsh: error: provider 'openai-compatible' needs a model: pass --model, or set "
        "DSH_PROVIDER_MODEL or provider.model"
    ]
    result = dsh(*argv, "--model", "m", env=env, cwd=tmp_path, check=False)
    assert result.stderr.splitlines() == [
        "dsh: error: provider 'openai-compatible' needs a base URL: pass --base-url, or set "
        "DSH_PROVIDER_BASE_URL or provider.base_url"
    ]
