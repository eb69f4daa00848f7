import dsh


def test_public_facade_exports_exactly_the_documented_names():
    assert sorted(dsh.__all__) == [
        "DshError",
        "EventStore",
        "JsonlStore",
        "MemoryStore",
        "Session",
        "SqliteStore",
        "__version__",
        "fold_surface",
        "open_store",
    ]
    for name in dsh.__all__:
        assert hasattr(dsh, name)


def test_events_catalogue_document_is_current():
    from pathlib import Path

    from dsh.events.catalog import render_catalog

    path = Path(__file__).parents[1] / "docs" / "events.md"
    assert path.read_text() == render_catalog(), "run: uv run python -m dsh.events.catalog"
