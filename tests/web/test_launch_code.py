"""The browser ``dsh web`` starts is not given the access token on its command line, where
every local user sees it in ``ps`` for the browser's whole life: it gets a one-use launch code,
which the page's script trades for the token by a ``fetch`` once, in time (a redirect to
``/?token=…`` made the token a visited URL, kept in the browser's history on disk). The real
``dsh web`` process with ``$BROWSER`` a script that records its arguments."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx

from dsh.web.auth import LAUNCH_CODE_SECONDS, LaunchCodes
from tests.web.real_command import DSH, URL_LINE


def test_the_browser_gets_a_one_use_code_and_never_the_token(tmp_path: Path) -> None:
    seen = tmp_path / "browser-argv"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {seen}.tmp && mv {seen}.tmp {seen}\n')
    browser.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(DSH_HOME=str(tmp_path / "home"), BROWSER=f"{browser} %s")
    process = subprocess.Popen(
        [DSH, "web", "--port", "0", "--provider", "scripted"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        match = URL_LINE.search(process.stdout.readline())
        assert match, "no URL line"
        base, _, token = match.groups()
        deadline = time.monotonic() + 120  # the browser is started half a second in
        while not seen.exists():
            assert time.monotonic() < deadline, "the browser was never started"
            time.sleep(0.05)
        argv = seen.read_text()
        assert token not in argv
        (url,) = argv.split()
        assert url.startswith(f"{base}/?launch=")
        page = httpx.get(url, follow_redirects=False)  # the page, the code unspent
        assert page.status_code == 200 and token not in page.text
        assert page.headers["cache-control"] == "no-store"
        code = url.partition("?launch=")[2]
        traded = httpx.post(f"{base}/api/launch", json={"code": code})
        assert traded.status_code == 200 and traded.json() == {"token": token}
        assert traded.headers["cache-control"] == "no-store"
        again = httpx.post(f"{base}/api/launch", json={"code": code})
        assert again.status_code == 403
        assert again.json()["error"]["code"] == "LAUNCH_CODE_SPENT" and token not in again.text
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)


def test_a_launch_code_opens_once_and_only_in_time() -> None:
    now = [100.0]
    codes = LaunchCodes(clock=lambda: now[0])
    first, late = codes.new(), codes.new()
    assert first != late and len(first) >= 43
    assert codes.redeem(first)
    assert not codes.redeem(first)
    assert not codes.redeem("not-a-code")
    now[0] += LAUNCH_CODE_SECONDS + 1
    assert not codes.redeem(late)
