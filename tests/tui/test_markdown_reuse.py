"""Markdown replies are rendered with a parser, lexers and a code theme made once
(``dsh.tui.markdown``): the rows are those Rich's own ``Markdown``, which makes them anew for
every document, renders, whatever was rendered before."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
import rich.markdown
import rich.syntax
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.markdown import Markdown, MarkdownElement

from dsh.tui.markdown import (
    CODE_THEME,
    TAB_SIZE,
    ReusingMarkdown,
    check_task_boxes,
    code_lexer,
    document_rows,
    markdown_rows,
)
from dsh.tui.markdown_table import WrappingTableElement

LANGUAGES = (
    "python",
    "py",
    "bash",
    "sh",
    "json",
    "rust",
    "js",
    "diff",
    "yaml",
    "c++",
    "text",
    "",
    "no-such-language",
)
CODE_LINES = (
    "def add(a, b):",
    "    return a + b  # sum",
    'print("héllo", {"k": [1, 2.5, None]})',
    "for i in $(seq 3); do echo $i; done",
    "\tif x:\t# tabbed",
    "fn main() { let s = String::new(); }",
    "- removed line",
    "+ added line",
    "key: [a, b]",
    "",
)
words = st.text(st.sampled_from(list("ab cd*_`[]()#|>-+1.~\\\t中文é")), max_size=50)
code = st.lists(st.sampled_from(CODE_LINES) | st.text(max_size=30), max_size=8).map("\n".join)
language = st.sampled_from(LANGUAGES) | st.text(st.sampled_from(list("abcxyz+#-1")), max_size=8)
block = st.one_of(
    words,
    st.builds(lambda level, text: f"{'#' * level} {text}", st.integers(1, 6), words),
    st.builds(lambda items: "\n".join(f"- {i}" for i in items), st.lists(words, max_size=4)),
    st.builds(lambda items: "\n".join(f"1. {i}" for i in items), st.lists(words, max_size=4)),
    st.builds(lambda lang, body: f"```{lang}\n{body}\n```", language, code),
    st.builds(lambda body: "    " + body.replace("\n", "\n    "), code),  # indented code
    st.builds(lambda text: f"> {text}", words),
    st.builds(lambda a, b: f"| {a} | {b} |\n|---|---|\n| `x` | **{b}** |", words, words),
    st.builds(
        lambda items: "\n".join(f"- [{box}] {text}" for box, text in items),
        st.lists(st.tuples(st.sampled_from(" xX"), words), max_size=4),
    ),
    st.builds(lambda text, url: f"see [{text}](https://e.org/{url}) and ~~old~~", words, words),
)
documents = st.lists(block, min_size=1, max_size=6).map("\n\n".join)


class FreshMarkdown(Markdown):
    """Rich's ``Markdown`` with what the TUI changes in it: wide tables as records
    (``dsh.tui.markdown_table``), task-list boxes as ☐ / ☑."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "table_open": WrappingTableElement,
    }

    def __init__(self, markup: str) -> None:
        super().__init__(markup, code_theme=CODE_THEME, hyperlinks=False)
        check_task_boxes(self.parsed)


def fresh_rows(text: str, width: int) -> list[Any]:
    """What the TUI rendered before the reuse: a new Rich ``Markdown`` per document."""
    return document_rows(FreshMarkdown(text), width)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(documents, st.integers(1, 140)), min_size=1, max_size=4))
def test_rows_are_those_of_a_fresh_rich_markdown_one_document_after_another(
    batch: list[tuple[str, int]],
):
    for text, width in batch:
        assert markdown_rows(text, width) == fresh_rows(text, width)


@settings(max_examples=60, deadline=None)
@given(documents)
def test_the_document_is_what_rich_markdown_would_build(text: str):
    assert vars(ReusingMarkdown(text)) == vars(FreshMarkdown(text))


@settings(max_examples=80, deadline=None)
@given(language, code)
def test_a_kept_lexer_tokenizes_as_a_fresh_one(name: str, body: str):
    fresh = rich.syntax.Syntax(body, name, tab_size=TAB_SIZE)
    lexer = fresh.lexer or fresh.default_lexer
    assert list(code_lexer(name).get_tokens(body)) == list(lexer.get_tokens(body))


def test_rendering_builds_no_parser_and_looks_each_language_up_once(
    monkeypatch: pytest.MonkeyPatch,
):
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("built again for this document")

    markdown_rows("```python\nx = 1\n```", 40)  # the shared parser exists from here on
    monkeypatch.setattr(rich.markdown, "MarkdownIt", refuse)
    looked_up: list[str] = []
    look_up = rich.syntax.get_lexer_by_name

    def counting(name: str, **options: Any) -> Any:
        looked_up.append(name)
        return look_up(name, **options)

    monkeypatch.setattr(rich.syntax, "get_lexer_by_name", counting)
    code_lexer.cache_clear()
    for n in range(5):
        rows = markdown_rows(
            f"# step {n}\n\n```python\nx = {n}\n```\n\n```rust\nlet y = {n};\n```", 40
        )
        assert any("x = " in "".join(s.text for s in row) for row in rows)
    assert looked_up == ["python", "rust"]
