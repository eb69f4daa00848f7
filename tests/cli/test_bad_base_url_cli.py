"""A malformed base URL, from a flag, the config file or the environment, stops the command
with one ``dsh: error:`` line naming where it came from: no traceback, no session, no request
(real processes)."""

from __future__ import annotations

import pytest

from tests.cli.test_config_errors_cli import session_files
from tests.cli.test_run_cli import dsh, env, write_script  # noqa: F401

BAD_URLS = ["bad\x1b[31m", "ftp://x", "http://", "not a url"]


def assert_one_error_line(result, *naming: str) -> None:
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dsh: error: "), result.stderr
    assert "Traceback" not in result.stderr and "\x1b" not in result.stderr
    for name in naming:
        assert name in lines[0]


@pytest.mark.parametrize("url", BAD_URLS)
def test_dsh_run_with_a_bad_base_url_flag_says_one_line_and_creates_no_session(tmp_path, env, url):  # noqa: F811
    result = dsh(
        "run", "--provider", "openai-compatible", "--base-url", url, "--model", "m", "hi",
        env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert_one_error_line(result, "'--base-url'", "must be an http:// or https:// URL", repr(url))
    assert session_files(tmp_path / "home") == []


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["--base-url", "ftp://x"], "`dsh --help`"),  # the terminal UI's flag
        (["bench", "run", "--online", "--base-url", "http://"], "`dsh bench run --help`"),
        (["compact", "any-id", "--summarizer-base-url", "not a url"], "`dsh compact --help`"),
    ],
)
def test_the_other_base_url_flags_refuse_a_bad_url_in_one_line(tmp_path, env, argv, where):  # noqa: F811
    result = dsh(*argv, env=env, cwd=tmp_path, check=False)
    flag = next(arg for arg in argv if arg.endswith("base-url"))
    assert_one_error_line(result, f"'{flag}'", "must be an http:// or https:// URL", where)
    assert session_files(tmp_path / "home") == []


@pytest.mark.parametrize(
    ("toml", "shown"),
    [
        ('base_url = "bad\\u001b[31m"', "'bad\\x1b[31m'"),
        ('base_url = "ftp://x"', "'ftp://x'"),
        ('base_url = "http://"', "'http://'"),
        ('base_url = "not a url"', "'not a url'"),
    ],
)
def test_a_bad_provider_base_url_in_the_config_file_says_one_line_and_creates_no_session(
    tmp_path,
    env,  # noqa: F811
    toml,
    shown,
):
    config = tmp_path / "home" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'[provider]\nname = "openai-compatible"\nmodel = "m"\n{toml}\n')
    result = dsh("run", "hi", env=env, cwd=tmp_path, check=False)
    assert_one_error_line(result, "config key provider.base_url", shown, f"(set in {config})")
    assert session_files(tmp_path / "home") == []


@pytest.mark.parametrize(
    "argv", [["run", "--script", "s.json", "hi"], ["web", "--no-open", "--port", "0"]]
)
def test_a_bad_summariser_base_url_in_the_environment_stops_the_command_in_one_line(
    tmp_path,
    env,  # noqa: F811
    argv,
):
    write_script(tmp_path / "s.json", [{"text": "hi"}])
    env = {**env, "DSH_COMPACTION_SUMMARIZER_BASE_URL": "ftp://x"}
    result = dsh(*argv, env=env, cwd=tmp_path, check=False)
    assert_one_error_line(
        result,
        "config key compaction.summarizer_base_url",
        "'ftp://x' has the scheme 'ftp'",
        "(set in environment variable DSH_COMPACTION_SUMMARIZER_BASE_URL)",
    )
    assert session_files(tmp_path / "home") == []
