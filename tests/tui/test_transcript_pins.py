"""The human transcript's pins (docs/architecture.md, "The human transcript"), in the TUI.

After a compaction lands the old prompt is still shown, shadowed tool cards still pair with
their results, there is exactly one marker per pass, and no checkpoint payload, pruned copy,
regenerated message or foreign replacement shows: live (the app watches the pass happen) and
after reopening (the same log opened cold).
"""

from __future__ import annotations

import asyncio

from dsh.compaction.pruner import PRUNE_MARKER
from dsh.events import (
    AssistantMessage,
    AssistantMessageEvent,
    Message,
    PluginSource,
    ReplaceOp,
    TextBlock,
    UserMessageEvent,
    is_append_surface_event,
    is_checkpoint_event,
)
from dsh.surface import Session
from dsh.transcript import COMPACTION_MARKER
from dsh.tui import DshApp
from tests.helpers import assistant_message
from tests.tui import scenarios
from tests.tui.conftest import SIZE, Rig, settle

PAYLOAD_MARKS = ("<compacted-summary>", "</compacted-summary>", "compacted-index-stub")


def card_heads(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("  ▸ ")]


def result_heads(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("    └ ")]


def assert_pins(app: DshApp, events: list, *, passes: int) -> list[str]:
    lines = app.transcript.rendered_lines()
    text = "\n".join(lines)
    # every prompt people typed is still there, in order
    prompts = [f"❯ Show me f{i}.txt" for i in range(scenarios.TURNS)]
    assert [line for line in lines if line.startswith("❯ ")] == prompts
    # every tool card of a shadowed step is still paired with its (original) result
    assert len(card_heads(lines)) == len(result_heads(lines)) == scenarios.TURNS
    assert not any("running…" in line for line in result_heads(lines))
    assert all("(+" in line for line in result_heads(lines))  # the full original result
    # exactly one marker per landed pass
    assert passes >= 2
    assert lines.count(f"  {COMPACTION_MARKER}") == passes
    # no checkpoint payload, no pruned copy
    checkpoints = [e for e in events if is_checkpoint_event(e)]
    assert len(checkpoints) == passes
    for checkpoint in checkpoints:
        assert checkpoint.data.text().splitlines()[0] not in text
    assert not any(mark in text for mark in PAYLOAD_MARKS)
    assert PRUNE_MARKER.strip().split("{")[0] not in text and "characters pruned" not in text
    return lines


def test_pins_hold_live_while_the_app_watches_a_compaction(rig: Rig):
    app = scenarios.compaction_app(rig)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await scenarios.drive(pilot)
            session = app.controller.session
            assert session is not None
            events = list(session.events)
            assert scenarios.prunes(events) >= 1
            assert_pins(app, events, passes=scenarios.passes(events))

    asyncio.run(main())


def test_pins_hold_after_reopening_the_same_log_cold(rig: Rig):
    session_id, live_lines = scenarios.record(rig, SIZE)
    app = scenarios.cold_app(rig, session_id)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert app.controller.session is not None
            events = list(app.controller.session.events)
            cold_lines = assert_pins(app, events, passes=scenarios.passes(events))
            assert cold_lines == live_lines

    asyncio.run(main())


def test_expanded_markers_show_the_pass_details_but_never_the_payload(rig: Rig):
    session_id, _ = scenarios.record(rig, SIZE)
    app = scenarios.cold_app(rig, session_id)

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            view = app.transcript
            markers = [i for i, b in enumerate(view.model.blocks) if b.kind == "marker"]
            for index in markers:
                view.toggle(index)
            await pilot.pause()
            text = "\n".join(view.rendered_lines())
            details = app.controller.projector.details
            assert len(details) == len(markers)
            for info in details.values():
                line = f"Compacted {info.items} history items (~{info.tokens} tokens)"
                assert line in text
                for _, summary in info.summaries:
                    assert summary.splitlines()[0] in text
            assert not any(mark in text for mark in PAYLOAD_MARKS)

    asyncio.run(main())


def replace_everything_but_compaction(session: Session) -> None:
    """A regenerated assistant message and another plugin's replacement of a prompt (the
    pruned copies come from the scenario's own pressure pruning)."""
    events = list(session.events)
    nodes = set(session.nodes)
    reply = next(
        e
        for e in reversed(events)
        if isinstance(e, AssistantMessageEvent)
        and is_append_surface_event(e)
        and e.seq in nodes
        and not e.data.message.tool_calls()
    )
    session.append(
        AssistantMessage(
            turn=reply.data.turn,
            step=reply.data.step,
            message=assistant_message("REGENERATED REPLY TEXT"),
        ),
        surface_op=ReplaceOp(start=reply.seq, end=reply.seq),
        source_event_seqs=[reply.seq],
    )
    prompt = next(
        e
        for e in reversed(events)
        if isinstance(e, UserMessageEvent) and is_append_surface_event(e) and e.seq in nodes
    )
    session.append(
        Message(
            id="foreign-1",
            role="user",
            content=(TextBlock(text="FOREIGN PLUGIN REPLACEMENT"),),
            source=PluginSource(plugin="other-plugin"),
        ),
        surface_op=ReplaceOp(start=prompt.seq, end=prompt.seq),
        source_event_seqs=[prompt.seq],
    )


def test_other_replacements_render_nothing_live_and_cold(rig: Rig):
    app = scenarios.compaction_app(rig)
    seen: dict[str, list[str]] = {}

    async def live() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await scenarios.drive(pilot)
            before = app.transcript.rendered_lines()
            session = app.controller.session
            assert session is not None
            replace_everything_but_compaction(session)
            await pilot.pause()
            after = app.transcript.rendered_lines()
            assert after == before
            seen["live"] = after
            seen["id"] = [session.id]

    asyncio.run(live())
    cold = scenarios.cold_app(rig, seen["id"][0])

    async def reopen() -> None:
        async with cold.run_test(size=SIZE) as pilot:
            await settle(pilot, lambda: cold.ready)
            lines = cold.transcript.rendered_lines()
            assert lines == seen["live"]
            text = "\n".join(lines)
            for gone in (
                "REGENERATED REPLY TEXT",
                "FOREIGN PLUGIN REPLACEMENT",
                "characters pruned",
            ):
                assert gone not in text

    asyncio.run(reopen())
