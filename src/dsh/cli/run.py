"""``dsh run``: headless turns. Each PROMPT (or line of --prompts-file) is one turn."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from dsh.agent.asked_window import keep_reported, window_change
from dsh.agent.loop import Agent, TurnResult
from dsh.agent.mcp_servers import close_mcp_servers
from dsh.agent.mentions import Attachment
from dsh.agent.prompt_commands import BUILT_IN_COMMANDS, expand_prompt, load_prompt_commands
from dsh.agent.runtime import approval_policy, resolve_route
from dsh.agent.stop_signals import cancelled_by
from dsh.agent.text_replies import turn_not_run_warning
from dsh.agent.waiting import POLL_EVERY, waiting_notice
from dsh.agent.wiring import build_agent, wire
from dsh.cli import context, standard_streams, termination
from dsh.cli.held_text import EndpointMemory, HeldText, endpoint_key
from dsh.cli.live import LiveDisplay
from dsh.cli.options import ApprovalFlags, RouteFlags, approval_options, route_options
from dsh.cli.run_input import read_prompts
from dsh.cli.run_stream import RunStream
from dsh.cli.turn_answer import TurnAnswer, turn_answer
from dsh.cli.warning_lines import tapped
from dsh.config import dsh_home, load_settings
from dsh.errors import UsageError, error_line
from dsh.events import AssistantMessageEvent, Event, RequestErrorEvent, encode_event
from dsh.llm.types import StreamEvent
from dsh.store.migrate import remove_kept_session
from dsh.surface import Session
from dsh.tools.terminal_text import terminal_json


@click.command("run")
@click.argument("prompts", nargs=-1)  # "-", or none and stdin not a terminal: stdin's prompt
@click.option("--session", "session_id", help="Continue this session instead of starting one.")
@click.option(
    "--continue",
    "-c",
    "last",
    is_flag=True,
    help="Continue the session used last in this workspace (--cwd, else here).",
)
@click.option(
    "--cwd",
    "workspace_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Run tools in this directory (default: the current one, or a resumed session's own "
    "recorded workspace).",
)
@route_options
@click.option(
    "--prompts-file",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path),
    help="One prompt per line (blank lines skipped); - reads them from stdin.",
)
@click.option("--json", "as_json", is_flag=True, help="Print every event as a JSON line.")
@click.option(
    "--json-stream",
    "as_stream",
    is_flag=True,
    help="Follow each turn live as versioned JSON lines: its text as it streams, tool calls "
    "and results, compaction, warnings, its end with usage and cost (docs/usage.md).",
)
@approval_options
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Steps (model calls) one turn may take before it stops.",
)
def run(
    prompts: tuple[str, ...],
    session_id: str | None,
    last: bool,
    workspace_dir: Path | None,
    route_flags: RouteFlags,
    prompts_file: Path | None,
    as_json: bool,
    as_stream: bool,
    approval_flags: ApprovalFlags,
    max_steps: int,
) -> None:
    """Run prompts headless: each turn's final answer on stdout, the session id on stderr.

    The id is said as "session: ID" before the first turn runs (--json and --json-stream name
    it in their first line instead).

    With no PROMPT, a prompt piped on stdin is read (echo PROMPT | dsh run); a PROMPT of - reads
    one prompt from stdin, and --prompts-file - reads prompts from it, one per line. A PROMPT
    "/NAME ARGS" naming a prompt command ($DSH_HOME/commands/NAME.md, ./.dsh/commands/NAME.md)
    sends its text. With --json the first line names the session
    ({"type":"session","session":ID}), then every event follows as a line. With --json-stream
    each turn is followed live, one JSON line per thing that happens (its text as it streams,
    its tool calls and results, its end with usage and cost), each with "v" (the schema's
    version), "type" and "session". A turn that fails or is stopped mid-reply prints what the
    reply had streamed, then the error on stderr (--json-stream: its turn_end has that text,
    with "partial": true).

    Exit status: 0 every turn completed; 1 a turn failed; 2 refused before it ran (a usage or
    configuration error, a prompt too large); 3 a turn stopped at a limit (--max-steps,
    tools.max_repeated_calls); 4 a reply cut at the model's output limit (its answer may be
    incomplete); 130 Ctrl-C, 128 + N another signal; 141 stdout closed (| head).
    """
    if as_json and as_stream:
        raise UsageError("--json and --json-stream cannot be combined: choose one")
    out = _Output()
    stream = RunStream(out.line) if as_stream else None
    with tapped(stream.told) if stream is not None else contextlib.nullcontext():
        try:
            _run(
                prompts,
                session_id,
                last,
                workspace_dir,
                route_flags,
                prompts_file,
                approval_flags,
                max_steps,
                out=out,
                as_json=as_json,
                stream=stream,
            )
        except Exception as exc:  # said on stderr as ever; in the stream once it has started
            if stream is not None:
                stream.told("error", error_line(str(exc) or type(exc).__name__))
            raise
        finally:
            if stream is not None:
                stream.close()


def _run(
    prompts: tuple[str, ...],
    session_id: str | None,
    last: bool,
    workspace_dir: Path | None,
    route_flags: RouteFlags,
    prompts_file: Path | None,
    approval_flags: ApprovalFlags,
    max_steps: int,
    *,
    out: _Output,
    as_json: bool,
    stream: RunStream | None,
) -> None:
    """``run``'s work; ``stream``: the ``--json-stream`` lines (None: without the flag)."""
    if last and session_id is not None:
        raise UsageError("--continue and --session cannot be combined")
    turns = read_prompts(prompts, prompts_file)
    overrides = route_flags.overrides()
    store = context.store()
    resumed = None
    if session_id is not None:
        resumed = context.resolve_session_id(store, session_id)
    elif last:
        here = (workspace_dir or context.cwd()).resolve()
        resumed = context.last_used_session_id(store, str(here))
    workspace = context.session_workspace(store, resumed, workspace_dir)
    settings = load_settings(cwd=workspace, overrides=overrides, choose_provider=resumed is None)
    commands = load_prompt_commands(dsh_home(), workspace, BUILT_IN_COMMANDS)
    for warning in commands.warnings:
        context.warn(warning)
    turns = [expand_prompt(prompt, commands) for prompt in turns]
    store = context.store(settings)
    replayed = context.replayed_session(store, route_flags)
    # the session's recorded settings win over the config; a flag overrides them (logged, and
    # said as it is logged). A new session replaying a recorded one (--replay) starts from the
    # recorded one's settings.
    resolved = context.session_settings(
        store, context.settings_source(resumed, replayed), settings, overrides, switch=True
    )
    settings = resolved.settings
    route = resolve_route(
        settings,
        script=route_flags.script,
        replay_from=replayed,
        store=store,
        waiting=context.warn,
    )
    if resumed is not None:  # its server's window, asked again: kept if it says none now
        route = keep_reported(route, resolved.recorded)
    if route.notice is not None:
        context.warn(route.notice)
    moved = window_change(resumed, resolved.recorded, route) if resumed is not None else None
    if moved is not None:  # its server's window, asked again, is another
        context.warn(moved)
    wiring = wire(settings, route)  # a summariser's missing key fails before a session
    policy = approval_policy(settings, yes=approval_flags.yes, allow=approval_flags.allow)
    if resumed is not None:
        session = Session.open(store, resumed, writable=True)
    else:
        session = Session.create(store, cwd=workspace)
    for warning in session.warnings:
        context.warn(warning)
    live = LiveDisplay.for_terminal() if not as_json and stream is None else None
    known = EndpointMemory(
        dsh_home(), endpoint_key(route.provider.name, route.base_url, route.model)
    )
    for face in (live, stream):
        if face is not None:
            face.held = HeldText(known)  # text that may be reasoning (a lone </think>)
    try:
        agent = build_agent(
            session,
            settings,
            route,
            workspace=workspace,
            policy=policy,
            on_stream=_stream_listener(live, stream),
            max_steps=max_steps,
            wiring=wiring,
            on_summary_call=live.summary_call_done if live is not None else None,
        )
        first_attached = _check_prompts(agent, turns)
    except BaseException:
        session.close()  # no stale lock file behind a configuration error
        close_mcp_servers()
        if resumed is None:  # a window or a prompt refused: no session of nothing but settings
            remove_kept_session(store, session.id)
        raise
    # the prompts can run: only now is anything logged (a refused one leaves a resumed session
    # as it was, and --json names no session it then removes)
    if as_json:
        out.line(json.dumps({"type": "session", "session": session.id}, separators=(",", ":")))
        session.subscribe(lambda event: out.line(terminal_json(encode_event(event).decode())))
    elif stream is None:  # on stderr, now: a run killed later still leaves its id behind
        click.echo(f"session: {session.id}", err=True)
    if stream is not None:
        stream.start(session, agent.tools.secrets, resumed=resumed is not None)
        session.subscribe(stream.on_event)
    if resumed is not None:
        context.record_workspace(session, workspace)
    changes = resolved.changes if resumed is not None else ()  # not the recording's (--replay)
    said = resolved.said  # the replaced values: said as they were resolved
    context.record_settings(session, settings, route, workspace, changes, said)  # --json: it
    out.agent = agent
    if live is not None:
        session.subscribe(live.on_event)
    status = 0
    termination.install()
    try:
        for n, prompt in enumerate(turns):
            if n > 0 and standard_streams.stdout_is_a_pipe() and standard_streams.reader_gone():
                out.reader_gone()  # gone between two turns: the next one is not started
                break
            if stream is not None:
                stream.prompt = prompt
            attached = first_attached if n == 0 else None
            result = _run_with_interrupt(agent, prompt, attached, live, out)
            answer = turn_answer(session, result)  # a reply cut short: the text it had streamed
            if live is not None:  # nothing more once the reader has gone (out.closed)
                out.call(live.finish_turn, answer.text)
            if out.closed or termination.stopped_by() is not None:
                _turn_end(stream, result, answer)
                break
            ended = _say_how_it_ended(session, result)
            status = ended or status
            _turn_end(stream, result, answer)
            if ended in STOPS_THE_RUN:
                break
    finally:
        session.close()
        close_mcp_servers()  # no MCP server outlives the run
    if resumed is None and never_connected(session.events):
        _discard(store, session.id)
        sys.exit(1)
    if out.closed:
        # stdout was closed by its reader (``dsh run … | head``): stop quietly, as a shell
        # tool does; the session is logged and closed
        standard_streams.leave_quietly()
    if termination.stopped_by() is not None:
        context.warn(f"stopped by {termination.name()}; continue with --session {session.id}")
        sys.exit(termination.exit_status())
    if status:
        sys.exit(status)


EXIT_FAILED = 1
"""A turn failed (a provider error, a failure inside dsh) or was cancelled: the run stops."""
EXIT_LIMIT = 3
"""A turn stopped at a limit, ``--max-steps`` or ``tools.max_repeated_calls`` (``max-steps``,
``repeated-calls``): the run stops there; the session goes on with ``--session``."""
EXIT_CUT = 4
"""A reply was cut at the model's output limit (``max-tokens``): its answer, printed, may be
incomplete; the run's later prompts still run, and a later status other than 0 wins."""
STOPS_THE_RUN = (EXIT_FAILED, EXIT_LIMIT)


def _say_how_it_ended(session: Session, result: TurnResult) -> int:
    """Warn of what the answer printed does not say (calls written in its text not run, a
    turn stopped or cut, an empty answer); the exit status the turn asks for (0: none;
    ``STOPS_THE_RUN``: the run stops there)."""
    if (not_run := turn_not_run_warning(session, result.turn)) is not None:
        context.warn(not_run)  # the answer may say what those calls would have done
    if result.reason == "error":
        context.error(f"turn {result.turn} failed: {_why(result.error)}")
        return EXIT_FAILED
    if result.reason == "completed":
        if not result.text.strip():
            context.warn(
                f"turn {result.turn} ended without an answer: the model's last reply was empty"
            )
        return 0
    # stopped: cancelled (aborted), at a limit, or cut (the answer may end mid-sentence)
    context.warn(f"turn {result.turn} stopped: {_why(result.error)}")
    if result.reason in ("max-steps", "repeated-calls"):
        return EXIT_LIMIT
    return EXIT_CUT if result.reason == "max-tokens" else EXIT_FAILED


def _turn_end(stream: RunStream | None, result: TurnResult, answer: TurnAnswer) -> None:
    """The turn's last line of ``--json-stream`` (after the warnings about it): its answer as
    plain ``dsh run`` prints it, cut short or not."""
    if stream is not None:
        stream.turn_end(
            result.turn, result.reason, answer.text, result.error, partial=answer.partial
        )


def _stream_listener(
    live: LiveDisplay | None, stream: RunStream | None
) -> Callable[[StreamEvent], None] | None:
    """Who follows the model's stream: the terminal's live display, or the JSON lines."""
    if stream is not None:
        return stream.on_stream
    return live.on_stream if live is not None else None


def _check_prompts(agent: Agent, turns: Sequence[str]) -> tuple[Attachment, ...]:
    """Refuse the run if one of its prompts is too large (``PromptTooLarge``), before any turn:
    each checked with what its ``@path`` mentions attach now. Returns the first prompt's
    attachments, which its turn sends as read; a later prompt's files are read again at its
    turn (an earlier turn may change them), and checked again there."""
    attached: list[tuple[Attachment, ...]] = []
    for prompt in turns:
        agent.check_prompt(prompt)  # too long on its own: refused before any file is read
        attached.append(agent.attachments(prompt))
        agent.check_prompt(prompt, attached[-1])
    return attached[0]


def _why(error: str | None) -> str:
    """Why a turn did not complete, as every face shows it (``error_line``: one line, escaped,
    bounded; the log's ``turn/end`` keeps the whole text)."""
    return error_line(error) if error else "unknown error"


def never_connected(events: Sequence[Event]) -> bool:
    """True if the provider was never reached: model calls were made and every one failed
    with a connection error (so the session holds nothing but the prompts). A reply that
    streamed before its server failed was an answer: that session is kept (an audit saw 34
    streamed words deleted with their session, said to be "never reached")."""
    errors = [e for e in events if isinstance(e, RequestErrorEvent)]
    answered = any(
        isinstance(e, AssistantMessageEvent)
        and (e.data.error_code is None or bool(e.data.message.content))
        for e in events
    )
    return bool(errors) and not answered and all(e.data.code == "CONNECTION" for e in errors)


def _discard(store: Any, session_id: str) -> None:
    """Remove a session the provider never answered: a retry starts clean, not beside it."""
    if remove_kept_session(store, session_id):
        context.error(f"the provider was never reached; session {session_id} was not kept")


class _Output:
    """Writes to stdout; once the reader has gone (a broken pipe) it stops writing and
    cancels the running turn (``CANCELLED_OUTPUT_CLOSED`` says why), so tools stop and no event
    reports an error."""

    def __init__(self) -> None:
        self.closed = False
        self.agent: Any = None

    def line(self, text: str) -> None:
        self.call(click.echo, text)

    def call(self, write: Callable[..., object], *args: Any) -> None:
        if self.closed:
            return
        try:
            write(*args)
            sys.stdout.flush()
        except BrokenPipeError:
            self.reader_gone()

    def reader_gone(self) -> None:
        """Stdout's reader has gone: nothing more is written, and the running turn is
        cancelled (the next one never starts)."""
        self.closed = True
        if self.agent is not None:
            self.agent.cancel(standard_streams.CANCELLED_OUTPUT_CLOSED)


def _run_with_interrupt(
    agent: Any,
    prompt: str,
    attached: Sequence[Attachment] | None,
    live: LiveDisplay | None,
    out: _Output,
) -> Any:
    """Run one turn; the first Ctrl-C cancels the turn cleanly, a second one exits at once.
    While it runs, ``live`` shows how long a silent model call has been waiting, and a reader
    of stdout that goes away cancels it at once (``standard_streams.watch_reader``), not at
    the next line it would have written."""

    async def notices(display: LiveDisplay) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(POLL_EVERY)
            display.show_waiting(waiting_notice(agent.waiting_since, loop.time()))

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        presses = 0
        ticker = None
        if live is not None and live.notices:
            ticker = asyncio.create_task(notices(live))
        watcher = asyncio.create_task(standard_streams.watch_reader(out.reader_gone))

        def on_sigint() -> None:
            nonlocal presses
            presses += 1
            stopping = termination.stopped_by()
            if presses > 1:
                raise SystemExit(termination.exit_status() if stopping else 130)
            if stopping:
                click.echo(
                    f"\ndsh: {termination.name()}: cancelling the turn; the session is kept",
                    err=True,
                )
            else:
                click.echo("\ndsh: cancelling the turn (Ctrl-C again to quit at once)", err=True)
                termination.note_interrupt()  # the run stops there and exits 130
            agent.cancel(cancelled_by(termination.stopped_by() or signal.SIGINT))

        with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread
            loop.add_signal_handler(signal.SIGINT, on_sigint)
        try:
            return await agent.run_turn(prompt, attached)
        finally:
            watcher.cancel()
            if ticker is not None and live is not None:
                ticker.cancel()
                live.show_waiting(None)
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)

    return asyncio.run(main())
