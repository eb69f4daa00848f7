"""``--script FILE`` answers model calls from the script, whatever provider the config names:
a "keyless" run never reaches a configured server (real processes, a real server that records
whatever reaches it). A provider flag that contradicts it is refused in one line."""

from __future__ import annotations

import pytest

from tests.cli.test_run_cli import dsh, env, write_script  # noqa: F401
from tests.llm.fake_server import FakeServer


@pytest.mark.parametrize("how", ["config", "base-url flag"])
def test_script_wins_over_a_configured_server(tmp_path, env, how):  # noqa: F811
    script = write_script(tmp_path / "s.json", [{"text": "from the script"}])
    with FakeServer() as server:
        home = tmp_path / "home"
        home.mkdir()
        flags: tuple[str, ...] = ()
        if how == "config":
            (home / "config.toml").write_text(
                f'[provider]\nname = "openai-compatible"\nbase_url = "{server.url}/v1"\n'
                'model = "m"\ncontext_window = 32768\n'
            )
        else:
            flags = ("--base-url", f"{server.url}/v1", "--model", "m")
        result = dsh("run", "--script", str(script), *flags, "hi", env=env, cwd=tmp_path)
        assert result.stdout.splitlines()[0] == "from the script"
        assert server.requests == [] and server.fixed_requests == []


@pytest.mark.parametrize("provider", ["deepseek", "openai-compatible"])
def test_script_with_another_provider_flag_is_refused(tmp_path, env, provider):  # noqa: F811
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    result = dsh(
        "run", "--provider", provider, "--script", str(script), "hi",
        env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"dsh: error: --script answers model calls with --provider scripted, not {provider}"
    )


def test_script_with_replay_is_refused(tmp_path, env):  # noqa: F811
    script = write_script(tmp_path / "s.json", [{"text": "x"}])
    result = dsh(
        "run", "--replay", "abc", "--script", str(script), "hi",
        env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--script and --replay both answer model calls" in result.stderr
