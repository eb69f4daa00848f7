"""A base URL (``provider.base_url``, ``compaction.summarizer_base_url``) must be an http(s) URL
with a host: one that is not is refused at load, naming its key and showing it escaped; the
URLs people use are kept as given."""

from __future__ import annotations

import pytest

from dsh.config import base_url_problem, load_settings
from dsh.errors import ConfigError

GOOD = [
    "http://localhost:11434/v1",
    "https://api.deepseek.com",
    "HTTPS://Example.com:8443/v1/",
    "http://127.0.0.1:8080",
    "http://[::1]:8000/v1",
    "https://user:secret@llm.internal/v1",
    "http://bücher.example/v1",
]
BAD = {
    "bad\x1b[31m": "holds a control character",
    "http://host\u202e/v1": "holds a control character",  # a bidi override
    "http://localhost:11434/v1\n": "holds white space",
    "not a url": "holds white space",
    "ftp://x": "has the scheme 'ftp'",
    "localhost:11434": "has no scheme (did you mean 'http://localhost:11434'?)",
    "//localhost/v1": "has no scheme (did you mean 'http://localhost/v1'?)",
    "http://": "has no host",
    "https:///v1": "has no host",
    "http://:8080/v1": "has no host",
    "http://localhost:99999/v1": "does not parse",
    "http://[::1/v1": "does not parse",
}


def load(tmp_path, **environ):
    return load_settings(environ={"DSH_HOME": str(tmp_path / "home"), **environ}, cwd=tmp_path)


@pytest.mark.parametrize("url", GOOD)
def test_an_http_or_https_url_with_a_host_passes_the_rule_and_is_kept_as_given(tmp_path, url):
    assert base_url_problem(url) is None
    settings = load(tmp_path, DSH_PROVIDER_BASE_URL=url, DSH_COMPACTION_SUMMARIZER_BASE_URL=url)
    assert settings.provider.base_url == settings.compaction.summarizer_base_url == url


@pytest.mark.parametrize(("url", "why"), BAD.items())
@pytest.mark.parametrize("key", ["provider.base_url", "compaction.summarizer_base_url"])
def test_a_malformed_base_url_is_refused_naming_its_key_and_showing_it_escaped(
    tmp_path, url, why, key
):
    variable = "DSH_" + key.replace(".", "_").upper()
    with pytest.raises(ConfigError) as info:
        load(tmp_path, **{variable: url})
    message = str(info.value)
    assert message.startswith(f"config key {key} must be an http:// or https:// URL with a host")
    assert f"{url!r} {why}" in message and f"(set in environment variable {variable})" in message
    assert message.isprintable()
