"""``/model`` in the terminal UI against the models the server offers
(``dsh.agent.model_choice``): ``/model`` names the model in use and opens the picker of the
listed ones (``dsh.tui.model_picker``: the one chosen is used for the next turns); ``/model
NAME`` switches when the server lists NAME, is refused in one line naming the closest it lists
when it does not, and switches with a one-line warning when the list cannot be had.

The list is asked in a worker (``dsh.llm.model_list``: one request, ``LIST_TIMEOUT`` seconds at
most), so the screen, a running turn and the keys go on meanwhile; a ``/model`` typed again
while one is asked replaces it. A provider with no server to ask (the scripted or replayed
model) answers at once, as before."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dsh.agent.model_choice import checked_choice, listing_note
from dsh.agent.model_command import model_note
from dsh.errors import DshError, UsageError, error_line
from dsh.llm.model_list import Listed, ModelList, list_models, lists_models
from dsh.tui.model_picker import ModelPicker
from dsh.tui.route_wait import switch_model

if TYPE_CHECKING:
    from dsh.tui.app import DshApp


def run_model_command(app: DshApp, name: str | None) -> None:
    """``/model [NAME]`` (``name`` as ``model_name`` parsed it)."""
    route = app.controller.route
    if route is None or not lists_models(route.provider):
        answer(app, name, None)
        return

    async def asked() -> None:
        answer(app, name, await list_models(route.provider))

    app.run_worker(asked(), group="model", exclusive=True)


def answer(app: DshApp, name: str | None, listed: ModelList) -> None:
    """Say the model and offer the list (no ``name``), or switch to ``name`` if ``listed``
    lets it."""
    controller = app.controller
    route = controller.route
    provider = route.provider.name if route is not None else "?"
    if name is None:
        if isinstance(listed, Listed) and listed.models:
            app.note(model_note(controller.model, provider, controller.window))
            picker = ModelPicker(listed.models, controller.model, provider)
            app.push_screen(picker, callback=lambda chosen: picked(app, chosen))
        else:
            app.note(listing_note(controller.model, provider, controller.window, listed))
        return
    try:
        warning = checked_choice(name, provider, listed)
    except UsageError as exc:
        app.note(f"error: {error_line(str(exc))}")
        return
    if warning is not None:
        app.note(warning)
    switch(app, name)


def picked(app: DshApp, chosen: str | None) -> None:
    """The picker's choice (None: closed with esc; the model in use: nothing to change)."""
    if chosen is not None and chosen != app.controller.model:
        switch(app, chosen)


def switch(app: DshApp, name: str) -> None:
    """Use ``name`` for the next turns, in the window the session set, else the new model's
    (``Controller.switch_model``): resolved off the loop when it may ask a server
    (``dsh.tui.route_wait``)."""
    if app.controller.resolves_off_the_loop:
        switch_model(app, name)
        return
    try:
        said = app.controller.switch_model(name)
    except DshError as exc:
        app.note(f"error: {error_line(str(exc))}")
        return
    app.note(said)
    app.update_status()
