"""``GET /api/sessions/{id}/paths?prefix=``: what the composer's ``@partial`` may name in the
session's recorded workspace, as the terminal UI completes it; capped with ``truncated``, and
``quoted`` counting the names a mention must quote (the ones left out too); a
prefix leaving the workspace lists nothing; bad input is a one-line 400; the token and the
``Host`` check guard it as every route."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from dsh.surface import Session
from dsh.web import create_app
from dsh.web.auth import loopback_hosts
from dsh.web.path_completion import MAX_PATH_CANDIDATES, MAX_PREFIX_CHARS
from tests.web.conftest import AUTH, TOKEN, WebEnv, error_of, new_session


def paths(client: TestClient, sid: str, prefix: str | None) -> dict[str, object]:
    params = {} if prefix is None else {"prefix": prefix}
    answer = client.get(f"/api/sessions/{sid}/paths", params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def candidates(client: TestClient, sid: str, prefix: str | None) -> object:
    return paths(client, sid, prefix)["candidates"]


@pytest.fixture
def tree(env: WebEnv) -> Path:
    """The workspace with a tree, a hidden file, and a secret folder beside it."""
    ws = env.workspace
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "main.py").write_text("")
    (ws / "notes-old.txt").write_text("")
    (ws / ".env").write_text("")
    (env.root / "secret").mkdir()
    (env.root / "secret" / "key.pem").write_text("")
    return ws


def test_paths_name_what_an_at_partial_completes_to(client: TestClient, tree: Path) -> None:
    sid = new_session(client)
    assert paths(client, sid, "sr") == {
        "prefix": "sr",
        "candidates": ["src/"],
        "common": "src/",
        "total": 1,
        "truncated": False,
        "quoted": 0,
    }
    assert paths(client, sid, "no") == {
        "prefix": "no",
        "candidates": ["notes-old.txt", "notes.txt"],
        "common": "notes",
        "total": 2,
        "truncated": False,
        "quoted": 0,
    }
    assert candidates(client, sid, "src/") == ["src/main.py", "src/pkg/"]
    assert candidates(client, sid, "") == ["notes-old.txt", "notes.txt", "src/"]
    assert candidates(client, sid, None) == ["notes-old.txt", "notes.txt", "src/"]
    assert candidates(client, sid, ".") == [".env"]
    assert paths(client, sid, "zz") == {
        "prefix": "zz",
        "candidates": [],
        "common": "",
        "total": 0,
        "truncated": False,
        "quoted": 0,
    }


def test_paths_come_from_the_session_recorded_workspace(
    client: TestClient, env: WebEnv, tree: Path
) -> None:
    other = env.root / "other"
    (other / "docs").mkdir(parents=True)
    created = client.post("/api/sessions", json={"cwd": str(other)})
    sid = created.json()["session"]["id"]
    assert candidates(client, sid, "") == ["docs/"]
    with Session.create(env.store, cwd=other) as stored:  # a stored session: its header's cwd
        assert candidates(client, stored.id, "d") == ["docs/"]
    assert candidates(client, new_session(client), "") == ["notes-old.txt", "notes.txt", "src/"]


def test_a_prefix_leaving_the_workspace_lists_nothing(
    client: TestClient, env: WebEnv, tree: Path
) -> None:
    (tree / "out").symlink_to(env.root / "secret")
    sid = new_session(client)
    for prefix in (
        "../",
        "../secret/",
        "src/../../",
        "src/../../secret/k",
        f"{env.root}/",
        f"{env.root}/secret/",
        "/etc/",
        "//",
        "out/",
        "out/k",
    ):
        assert candidates(client, sid, prefix) == [], prefix
    # "/" names the workspace's top with the slash dropped, as the terminal UI completes it
    assert candidates(client, sid, "/") == ["notes-old.txt", "notes.txt", "out/", "src/"]


def test_paths_are_capped_and_common_covers_the_ones_left_out(
    client: TestClient, tree: Path
) -> None:
    bulk = tree / "bulk"
    bulk.mkdir()
    for i in range(MAX_PATH_CANDIDATES + 50):
        (bulk / f"a{i:04d}.txt").write_text("")
    (bulk / "b c.txt").write_text("")
    sid = new_session(client)
    body = paths(client, sid, "bulk/")
    assert len(body["candidates"]) == MAX_PATH_CANDIDATES  # type: ignore[arg-type]
    assert body["candidates"][:2] == ["bulk/a0000.txt", "bulk/a0001.txt"]  # type: ignore[index]
    assert body["total"] == MAX_PATH_CANDIDATES + 51 and body["truncated"] is True
    # all sent begin with bulk/a, but "b c.txt" was left out: completing to "bulk/a" would lose
    # it; and its mention is quoted (@"bulk/b c.txt"), which the page learns from the count
    assert body["common"] == "bulk/"
    assert body["quoted"] == 1
    narrowed = paths(client, sid, "bulk/a")
    assert narrowed["common"] == "bulk/a0" and narrowed["truncated"] is True


def test_names_with_any_characters_are_sent_and_non_utf8_ones_left_out(
    client: TestClient, tree: Path
) -> None:
    odd = "n\u202egnp.exe <b>&\x1b[31m"
    (tree / odd).write_text("")
    fd = os.open(os.fsencode(tree) + b"/n\xffbad", os.O_CREAT | os.O_WRONLY)
    os.close(fd)
    sid = new_session(client)
    assert candidates(client, sid, "n") == ["notes-old.txt", "notes.txt", odd]


def test_a_bad_prefix_or_session_is_refused_in_one_line(client: TestClient, tree: Path) -> None:
    sid = new_session(client)
    for prefix in ("src\x00/", "\x00", "x" * (MAX_PREFIX_CHARS + 1)):
        refused = client.get(f"/api/sessions/{sid}/paths", params={"prefix": prefix})
        assert error_of(refused) == (400, "INVALID_ARGUMENT")
        assert "\n" not in refused.json()["error"]["message"]
    assert candidates(client, sid, "x" * MAX_PREFIX_CHARS) == []
    assert error_of(client.get("/api/sessions/nosuch/paths")) == (404, "SESSION_NOT_FOUND")
    assert error_of(client.get("/api/sessions/a%20b/paths")) == (400, "INVALID_ARGUMENT")
    assert error_of(client.post(f"/api/sessions/{sid}/paths", json={})) == (
        405,
        "METHOD_NOT_ALLOWED",
    )


def test_paths_need_the_token_and_one_of_the_server_host_names(env: WebEnv, tree: Path) -> None:
    hosts = loopback_hosts("127.0.0.1", 3080)
    app = create_app(env.registry(), token=TOKEN, allowed_hosts=hosts)
    with TestClient(app, base_url="http://127.0.0.1:3080") as client:
        sid = client.post("/api/sessions", json={}, headers=AUTH).json()["session"]["id"]
        route = f"/api/sessions/{sid}/paths?prefix=sr"
        assert client.get(route, headers=AUTH).json()["candidates"] == ["src/"]
        assert error_of(client.get(route)) == (401, "UNAUTHORIZED")
        wrong = {"Authorization": "Bearer wrong-token"}
        assert error_of(client.get(route, headers=wrong)) == (401, "UNAUTHORIZED")
        rebound = client.get(route, headers={**AUTH, "Host": "evil.example:3080"})
        assert error_of(rebound) == (403, "FORBIDDEN")
        assert "src" not in rebound.text
