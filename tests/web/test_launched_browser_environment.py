"""The browser ``dsh web`` opens starts without dsh's secrets in its environment: no API key, no
``DSH_WEB_TOKEN``. A browser that was not already running keeps the environment it starts with
for its whole life, readable by any process of the user's in ``/proc/PID/environ``.

Real processes: the ``dsh`` console script's ``dsh web`` (without ``--no-open``), and for
browser a script named by ``$BROWSER`` (Python's ``webbrowser`` honours it) that writes down
the environment and the arguments it was started with."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.web.real_command import URL_LINE

DSH = str(Path(sys.executable).with_name("dsh"))
KEY = "sk-SNOOPME_deepseek_0123456789"
TOKEN = "SNOOPME_webtoken_0123456789abcdefghijklmnop"
PASSWORD = "SNOOPME_password_0123456789"


def test_the_browser_dsh_web_opens_gets_neither_the_keys_nor_the_web_token(
    tmp_path: Path,
) -> None:
    seen = tmp_path / "seen"
    browser = tmp_path / "browser.sh"
    browser.write_text(
        f'#!/bin/sh\n{{ printf "%s\\n" "$1"; env; }} > "{seen}.part"\nmv "{seen}.part" "{seen}"\n'
    )
    browser.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_")}
    env.update(
        DSH_HOME=str(tmp_path / "home"),
        DSH_WEB_TOKEN=TOKEN,
        DEEPSEEK_API_KEY=KEY,
        DATABASE_PASSWORD=PASSWORD,
        BROWSER=str(browser),
    )
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
        base = match.group(1)
        give_up = time.monotonic() + 120
        while not seen.exists():  # the browser is started half a second after the URL line
            assert process.poll() is None, "dsh web exited"
            assert time.monotonic() < give_up, "the browser was never started"
            time.sleep(0.05)
        url, *variables = seen.read_text().splitlines()
        with httpx.Client(base_url=base) as http:  # the code it got is traded for the token
            code = url.partition("?launch=")[2]
            launched = http.post("/api/launch", json={"code": code})
        assert launched.status_code == 200 and launched.json() == {"token": TOKEN}
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert url.startswith(f"{base}/?launch=")
    environment = dict(line.split("=", 1) for line in variables if "=" in line)
    assert environment.get("BROWSER") == str(browser)  # the user's own environment otherwise
    assert environment.get("PATH") == env["PATH"]
    for secret in (KEY, TOKEN, PASSWORD):
        assert secret not in "\n".join(variables)
    assert not [name for name in environment if name.startswith("DSH_")]
