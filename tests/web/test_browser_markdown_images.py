"""Markdown images in a real browser: one from another site (which the page's CSP refuses to
load) shows as a link to it, made and sanitised as every link, instead of a broken image and a
console error; a data: image still shows as an image."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.surface import Session
from tests.helpers import append_chat_turn
from tests.web.conftest import TOKEN, make_env
from tests.web.pages import first_page_loaded, open_page, serve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DOT = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
REPLY = "\n\n".join(
    [
        'A diagram: ![the *diagram*](https://example.invalid/d.png "its title")',
        "No words: ![](https://example.invalid/bare.png)",
        "A badge: [![build passing](https://img.example.invalid/b.svg)](https://ci.example.invalid/run)",
        'Hostile: ![x" onerror="window.pwned=1](javascript:window.pwned=2)',
        "Markup: ![<img src=x onerror=window.pwned=3>](//example.invalid/p.png)",
        f"A dot: ![a dot]({DOT})",
    ]
)
LINKS = """() => [...document.querySelectorAll('#log .row.assistant .body a')].map((a) => ({
    text: a.textContent, href: a.getAttribute('href'), title: a.getAttribute('title'),
    target: a.target, rel: a.rel }))"""
IMAGES = """() => [...document.querySelectorAll('#log .row img')].map((img) => ({
    src: img.getAttribute('src'), alt: img.alt, loaded: img.complete && img.naturalWidth > 0 }))"""


def test_an_image_from_another_site_shows_as_a_link_and_a_data_image_as_an_image(
    browser: Any, tmp_path: Path
) -> None:
    env = make_env(tmp_path)
    with Session.create(env.store, cwd=env.workspace) as session:
        append_chat_turn(session, "Draw it", REPLY)
        sid = session.id
    with serve(env) as server, open_page(browser) as page:  # fails on a console error
        page.goto(f"{server.base_url}/?token={TOKEN}#s={sid}")
        first_page_loaded(page)
        page.wait_for_function(
            "() => [...document.querySelectorAll('#log img')].every((i) => i.complete)"
        )
        away = {"target": "_blank", "rel": "noopener noreferrer"}
        assert page.evaluate(LINKS) == [
            {
                "text": "the diagram",
                "href": "https://example.invalid/d.png",
                "title": "its title",
                **away,
            },
            {
                "text": "https://example.invalid/bare.png",
                "href": "https://example.invalid/bare.png",
                "title": None,
                **away,
            },
            {
                "text": "build passing",
                "href": "https://ci.example.invalid/run",
                "title": None,
                **away,
            },
            {"text": 'x" onerror="window.pwned=1', "href": None, "title": None, **away},
            {
                "text": "<img src=x onerror=window.pwned=3>",
                "href": "//example.invalid/p.png",
                "title": None,
                **away,
            },
        ]
        assert page.locator("#log .row.assistant .body a em").inner_text() == "diagram"
        assert page.evaluate(IMAGES) == [{"src": DOT, "alt": "a dot", "loaded": True}]
        assert page.evaluate("() => window.pwned") is None
