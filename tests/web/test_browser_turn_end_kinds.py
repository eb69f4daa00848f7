"""The page's transcript notes a turn that a limit stopped (``max-steps``, ``repeated-calls``:
kinds of their own, no longer ``aborted``, a cancel's) as the terminal UI does: stopped, with its
reason (the limit's words when the log gives none), in a real browser's ``Projector``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import TOKEN, make_env
from tests.web.pages import open_page, serve

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_the_page_notes_a_turn_a_limit_stopped(browser: Any, tmp_path: Path) -> None:
    with serve(make_env(tmp_path)) as server, open_page(browser) as page:
        page.goto(f"{server.base_url}/?token={TOKEN}")
        notes: list[list[str]] = page.evaluate(
            """async () => {
                const { Projector } = await import('/s/projection.js');
                const kinds = ['max-steps', 'repeated-calls'];
                const ends = [...kinds.map((kind) => [kind, 'why']), [kinds[0], null]];
                return ends.map(([kind, error], i) => new Projector().feed({
                    type: 'turn/end', seq: 10 + i, time: 0,
                    data: { turn: 2, reason: { kind, error } },
                }).map((op) => `${op.item.kind}|${op.item.tone}|${op.item.text}`));
            }"""
        )
    assert notes == [  # the terminal UI's words (dsh.transcript.projection.turn_end_note)
        ["notice||Turn 2 stopped: why"],
        ["notice||Turn 2 stopped: why"],
        ["notice||Turn 2 stopped: it took every step it is allowed (max_steps)"],
    ]
