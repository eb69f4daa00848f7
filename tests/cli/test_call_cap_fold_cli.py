"""``dsh sessions show`` and ``dsh sessions export`` as real processes: the calls a reply asked
for past ``tools.max_calls_per_reply`` read as ONE line saying how many did not run, why, and
the tools they named (``dsh.transcript.call_fold``), not a ``TOO_MANY_CALLS`` result each;
``--view surface``, what the model reads, still answers every call."""

from __future__ import annotations

from tests.cli.test_run_cli import dsh, env, write_script
from tests.helpers import run_session_id

__all__ = ["env"]  # the fixture, shared with dsh run's tests

LINE = (
    "5 more calls not run: the reply asked for 7, at most 2 run per reply "
    "(tools.max_calls_per_reply); they named read_file ×3, list_dir ×2"
)
FOLD = f"({LINE})"


def test_sessions_show_and_export_fold_the_calls_past_the_limit(tmp_path, env):
    (tmp_path / "a.txt").write_text("alpha\n")
    ran = [{"name": "read_file", "arguments": {"path": "a.txt"}}] * 2
    unrun = [
        *[{"name": "list_dir", "arguments": {"path": f"d{n}"}} for n in range(2)],
        *[{"name": "read_file", "arguments": {"path": f"f{n}.txt"}} for n in range(3)],
    ]
    script = write_script(tmp_path / "s.json", [{"toolCalls": ran + unrun}, {"text": "Read."}])
    env = {**env, "DSH_TOOLS_MAX_CALLS_PER_REPLY": "2"}
    done = dsh("run", "--script", str(script), "read them", env=env, cwd=tmp_path)
    session_id = run_session_id(done.stderr)
    shown = dsh("sessions", "show", session_id, env=env, cwd=tmp_path).stdout
    blocks = shown.rstrip("\n").split("\n\n")
    assert blocks.count(FOLD) == 1
    assert "TOO_MANY_CALLS" not in shown
    results = [block for block in blocks if block.startswith("Tool result")]
    assert len(results) == 2 and all("alpha" in block for block in results)
    assert blocks.index(FOLD) == 2  # where the first of them was logged: after the reply
    surface = dsh("sessions", "show", session_id, "--view", "surface", env=env, cwd=tmp_path)
    assert surface.stdout.count("[TOO_MANY_CALLS]") == 5  # the model's side: every call answered
    markdown = dsh("sessions", "export", session_id, env=env, cwd=tmp_path).stdout
    assert markdown.count(f"\n\n*{LINE}*\n\n") == 1
    assert "TOO_MANY_CALLS" not in markdown
    assert "no result logged" not in markdown
    assert markdown.count("#### `read_file` `a.txt`") == 2
    assert markdown.index("#### `read_file` `a.txt`") < markdown.index(LINE)  # after those run
