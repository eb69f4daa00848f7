"""Files under the dsh home that several processes read, change and replace — the user
config's ``[trust]`` tables, ``cache/lone-think.json`` — keep every process's update when they
run at the same moment (``dsh.config.file_update``).

Real processes, forced into the interleaving that loses an update without the lock: each waits
at a barrier on its way to writing, after reading the file, so all of them read before any of
them writes. Under the lock each reads again and the updates land one after another."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh.config.trust import trust_records

USER_CONFIG = '# mine\n[provider]\nmodel = "x"  # my model\n'
_context = multiprocessing.get_context("fork")


def _meet_then(barrier: Any, real: Callable[[Path], None]) -> Callable[[Path], None]:
    """``make_private_directory``, called on the way to the write: first wait for the others."""

    def meet(path: Path) -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=120)
        real(path)

    return meet


def _trust(barrier: Any, directory: str, trusted: bool, env: dict[str, str], out: Any) -> None:
    from dsh.config import trust as trust_module

    trust_module.make_private_directory = _meet_then(barrier, trust_module.make_private_directory)  # type: ignore[assignment]
    out.put((directory, trust_module.set_trust(Path(directory), trusted, env)))


def _learn(barrier: Any, home: str, key: str) -> None:
    from dsh.cli import held_text

    memory = held_text.EndpointMemory(Path(home), key)
    held_text.make_private_directory = _meet_then(barrier, held_text.make_private_directory)  # type: ignore[assignment]
    memory.learn()


def _run_all(jobs: list[tuple[Callable[..., None], tuple[Any, ...]]], barrier: Any) -> None:
    processes = [_context.Process(target=target, args=(barrier, *args)) for target, args in jobs]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=300)
    assert [p.exitcode for p in processes] == [0] * len(processes)


def test_concurrent_trust_and_trust_removal_all_land(tmp_path: Path) -> None:
    """A ``dsh trust --remove`` run beside two ``dsh trust`` of other directories: the removed
    trust does not come back, both new ones are recorded, and the user's config is kept."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(USER_CONFIG)
    env = {"DSH_HOME": str(home)}
    directories = []
    for name in ("removed", "one", "two"):
        (tmp_path / name / ".dsh").mkdir(parents=True)
        (tmp_path / name / ".dsh" / "config.toml").write_text('[tools]\napproval = "auto"\n')
        directories.append(str((tmp_path / name).resolve()))
    removed, one, two = directories
    from dsh.config.trust import set_trust

    assert set_trust(Path(removed), True, env)
    barrier, out = _context.Barrier(3), _context.Queue()
    jobs = [(_trust, (d, d != removed, env, out)) for d in directories]
    _run_all(jobs, barrier)
    said = dict(out.get(timeout=60) for _ in directories)
    assert said == {removed: True, one: True, two: True}  # each told its change was made
    assert sorted(trust_records(env)) == [one, two]  # and each change is on disk
    text = (home / "config.toml").read_text()
    assert text.startswith(USER_CONFIG.rstrip("\n"))
    assert sorted(p.name for p in home.iterdir()) == [".config.toml.lock", "config.toml"]


def test_concurrent_learners_of_lone_think_endpoints_are_all_remembered(tmp_path: Path) -> None:
    home = tmp_path / "home"
    keys = [f"http://127.0.0.1:{8000 + n}/v1 model{n}" for n in range(4)]
    barrier = _context.Barrier(len(keys))
    _run_all([(_learn, (str(home), key)) for key in keys], barrier)
    from dsh.cli.held_text import MEMORY_FILE

    remembered = json.loads((home / "cache" / MEMORY_FILE).read_text())["endpoints"]
    assert sorted(remembered) == sorted(keys)
    assert sorted(p.name for p in (home / "cache").iterdir()) == [
        f".{MEMORY_FILE}.lock",
        MEMORY_FILE,
    ]
