"""The terminal UI's ``/model NAME`` takes the names ``dsh web``'s composer takes
(``dsh.agent.model_command.model_name``, one parser for both faces): a name with spaces inside
it is one name; one with a character that does not print (a line break, a tab: what the
composer keeps as typed) is refused in one line, and the model stays as it was."""

from __future__ import annotations

import pytest

from dsh.agent.model_command import model_name
from dsh.errors import UsageError
from tests.tui.conftest import Rig, submit
from tests.tui.test_pilot import run, text_of


def test_a_name_keeps_its_inner_spaces_and_none_is_no_name() -> None:
    assert model_name("  Qwen2.5 7B  Instruct \n") == "Qwen2.5 7B  Instruct"
    assert model_name(" \t ") is None


@pytest.mark.parametrize("name", ["bad\x1bname", "two\nlines", "a\tb", "rtl\u202emodel"])
def test_a_name_that_does_not_print_is_refused_in_one_line(name: str) -> None:
    with pytest.raises(UsageError) as refused:
        model_name(name)
    shown = str(refused.value)
    assert shown.startswith("/model takes a model name on one line, not '")
    assert shown.isprintable()


def test_the_ui_switches_to_a_spaced_name_and_refuses_one_that_does_not_print(rig: Rig) -> None:
    app = rig.app([{"text": "ok"}])

    async def body(pilot: object) -> None:
        await submit(pilot, "/model Qwen 7B Instruct")
        assert "Model for the next turns: Qwen 7B Instruct." in text_of(app)
        assert app.status_bar.info.model == "Qwen 7B Instruct"
        # the composer keeps tabs and line breaks (it shows an escape as its text, \x1b)
        for typed, shown in (("two\nlines", "two\\nlines"), ("a\tb", "a\\tb")):
            await submit(pilot, f"/model {typed}")
            refused = f"error: /model takes a model name on one line, not '{shown}'"
            assert refused in text_of(app)
            assert app.status_bar.info.model == "Qwen 7B Instruct"  # unchanged

    run(app, body)
