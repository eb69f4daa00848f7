"""The anchor extractor: literal anchors, rarity, and keyword lines (docs/compaction.md, "Layout"
and "Checkpoints hold only what the conversation said")."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.compaction.anchors import (
    KEYWORD_PREFIX,
    KINDS,
    Anchor,
    extract_anchors,
    keyword_line,
    merge_keyword_lines,
    parse_keyword_line,
    rarest_anchors,
    split_config,
)

TRACEBACK = """\
Traceback (most recent call last):
  File "/work/app/src/app/server.py", line 42, in start
    bind(port)
  File "/usr/lib/python3.11/socket.py", line 12, in bind
ValueError: port must be > 0"""

PYTEST = """\
FAILED tests/test_server.py::test_bind_port - ValueError: port must be > 0
E       assert 3 == 5
src/app/server.py:12:1: E501 Line too long (120 > 100)
=== 1 failed, 12 passed in 0.42s ==="""

DIFF = """\
diff --git a/src/app/config.py b/src/app/config.py
--- a/src/app/config.py
+++ b/src/app/config.py
@@ -10,7 +10,7 @@
-MAX_RETRIES = 3
+MAX_RETRIES = 5
     raise ValueError("port must be > 0")
 # see ZEBRA-7731, commit 3f9c2ab7e1"""

CONFIG = """\
[server]
host = "0.0.0.0"
port = 8080
timeout: 30s
log_file = /var/log/app.log
memory_limit = 512 MiB
"retries": 5,"""

SHELL = """\
$ PORT=8080 uvicorn app.main:api --host 0.0.0.0 --port 8443 --timeout 30s
$ docker run -p 8080:80 nginx && curl http://localhost:8080/health
bash: foo: command not found
cpu at 93.5%"""

PROSE = """\
I think we should refactor the module so that it reads better, and/or rename a few things.
Let's do it tomorrow; don't you think the tests will still pass? It's the user's call, really."""


def of_kind(text: str, kind: str) -> list[str]:
    return [a.text for a in extract_anchors(text) if a.kind == kind]


# ---- extraction -----------------------------------------------------------------------------


def test_kinds_are_one_tuple_in_display_order():
    assert KINDS == ("error", "path", "id", "value", "config", "quoted")


def test_python_traceback_yields_its_exact_error_line_and_file_paths():
    assert of_kind(TRACEBACK, "error") == ["ValueError: port must be > 0"]
    assert of_kind(TRACEBACK, "path") == [
        "/work/app/src/app/server.py",
        "/usr/lib/python3.11/socket.py",
    ]


def test_pytest_failure_yields_the_failed_node_the_assertion_and_the_lint_code():
    errors = of_kind(PYTEST, "error")
    assert "FAILED tests/test_server.py::test_bind_port" in errors
    assert "ValueError: port must be > 0" in errors
    assert "assert 3 == 5" in errors
    assert "E501 Line too long (120 > 100)" in errors
    assert of_kind(PYTEST, "path") == ["tests/test_server.py", "src/app/server.py:12:1"]
    assert "0.42s" in of_kind(PYTEST, "value")


def test_diff_yields_paths_without_git_prefixes_config_changes_and_ids():
    assert of_kind(DIFF, "path") == ["src/app/config.py"]
    assert of_kind(DIFF, "config") == ["MAX_RETRIES = 3", "MAX_RETRIES = 5"]
    assert of_kind(DIFF, "error") == ['ValueError("port must be > 0")']
    assert of_kind(DIFF, "id") == ["ZEBRA-7731", "3f9c2ab7e1"]


def test_config_file_yields_whole_key_value_literals():
    assert of_kind(CONFIG, "config") == [
        'host = "0.0.0.0"',
        "port = 8080",
        "timeout: 30s",
        "log_file = /var/log/app.log",
        "memory_limit = 512 MiB",
        '"retries": 5',
    ]
    assert of_kind(CONFIG, "path") == ["/var/log/app.log"]


def test_shell_command_yields_settings_ports_durations_urls_and_errors():
    assert of_kind(SHELL, "config") == ["PORT=8080"]
    assert of_kind(SHELL, "value") == ["0.0.0.0", "8443", "30s", "8080:80", "93.5%"]
    assert of_kind(SHELL, "path") == ["http://localhost:8080/health"]
    assert of_kind(SHELL, "error") == ["bash: foo: command not found"]


def test_ids_cover_snake_case_mixed_hex_versions_and_uuids():
    text = "user_id_42 abc123def v1.2.3 release 2.4.1 550e8400-e29b-41d4-a716-446655440000"
    assert of_kind(text, "id") == [
        "user_id_42",
        "abc123def",
        "v1.2.3",
        "2.4.1",
        "550e8400-e29b-41d4-a716-446655440000",
    ]


def test_a_ticket_id_with_a_hyphenated_tail_is_kept_whole_never_cut():
    """A real model answered "QX-7731" after a stub's keyword line cut QX-7731-LAMBDA there:
    a stub must not carry a literal the conversation never said as a whole."""
    text = "The deploy token prefix is QX-7731-LAMBDA. Fix ABC-123-hotfix; see JIRA-42, PROJ-7."
    assert of_kind(text, "id") == ["QX-7731-LAMBDA", "ABC-123-hotfix", "JIRA-42", "PROJ-7"]


def test_values_need_a_unit_a_port_context_or_a_percent_sign():
    text = "limit 512 MiB, wait 30s, listen on :8080, expose 8080/tcp, 12 apples, at 12:30"
    assert of_kind(text, "value") == ["512 MiB", "30s", "8080", "8080/tcp"]


def test_quoted_strings_are_anchors_but_json_keys_and_common_words_are_not():
    text = 'The message was "port must be > 0"; args {"path": "x"} and `make check` and "the"'
    assert of_kind(text, "quoted") == ["port must be > 0", "make check"]


def test_plain_prose_yields_no_anchors():
    assert extract_anchors(PROSE) == []


def test_anchors_come_in_first_occurrence_order_each_text_once():
    text = "see conf/x.toml then ZEBRA-7731, again conf/x.toml and ZEBRA-7731"
    assert extract_anchors(text) == [Anchor("path", "conf/x.toml"), Anchor("id", "ZEBRA-7731")]


@given(st.text(alphabet=st.sampled_from(list("aZ_-09./:= \"'`,;()\nEv%")), max_size=80))
def test_every_anchor_is_a_verbatim_substring(text):
    for anchor in extract_anchors(text):
        assert anchor.text and anchor.text in text


def test_extraction_can_be_restricted_to_some_kinds():
    assert extract_anchors(CONFIG + "\nZEBRA-7731", kinds=("config",)) == [
        a for a in extract_anchors(CONFIG) if a.kind == "config"
    ]


def test_edge_punctuation_is_trimmed():
    assert of_kind("Edit (src/app.py).", "path") == ["src/app.py"]


def test_split_config_reads_key_and_value_of_every_config_form():
    assert split_config("retries = 5") == ("retries", "5")
    assert split_config("PORT=8080") == ("PORT", "8080")
    assert split_config("timeout: 30s") == ("timeout", "30s")
    assert split_config('"host": "db"') == ("host", "db")
    assert split_config("no config here") is None


# ---- rarity ---------------------------------------------------------------------------------


def test_rarity_prefers_a_literal_seen_once_over_one_seen_twenty_times():
    slice_text = "edited src/common.py and fixed ZEBRA-7731"
    corpus = [f"turn {i}: touched src/common.py" for i in range(20)] + [slice_text]
    ranked = rarest_anchors(slice_text, corpus)
    assert ranked[0] == Anchor("id", "ZEBRA-7731")
    assert ranked[-1] == Anchor("path", "src/common.py")


def test_rarity_ties_go_by_kind_order_then_first_occurrence():
    slice_text = "id ZEBRA-1 then conf/b.toml then conf/a.toml"
    assert rarest_anchors(slice_text, [slice_text]) == [
        Anchor("path", "conf/b.toml"),
        Anchor("path", "conf/a.toml"),
        Anchor("id", "ZEBRA-1"),
    ]


def test_rarity_does_not_depend_on_corpus_order_and_honours_the_limit():
    slice_text = "conf/a.toml conf/b.toml ZEBRA-1 ZEBRA-2 retries=5"
    corpus = ["conf/a.toml conf/a.toml", "ZEBRA-2", slice_text]
    forward = rarest_anchors(slice_text, corpus, limit=3)
    assert forward == rarest_anchors(slice_text, list(reversed(corpus)), limit=3)
    assert len(forward) == 3


def test_rarity_without_a_corpus_counts_in_the_slice():
    assert rarest_anchors("conf/a.toml conf/a.toml ZEBRA-1", [])[0] == Anchor("id", "ZEBRA-1")


# ---- keyword lines --------------------------------------------------------------------------

ANCHORS = [
    Anchor("config", "retries=5"),
    Anchor("path", "src/app.py"),
    Anchor("error", "ValueError: bad port"),
    Anchor("id", "ZEBRA-7731"),
    Anchor("path", "conf/x.toml"),
    Anchor("value", "8080"),
]


def test_keyword_line_groups_by_kind_in_kind_order():
    assert keyword_line(ANCHORS) == (
        'Keywords — error: "ValueError: bad port"; path: src/app.py, conf/x.toml; '
        "id: ZEBRA-7731; value: 8080; config: retries=5"
    )


def test_keyword_line_fits_max_chars_by_dropping_whole_anchors():
    full = keyword_line(ANCHORS)
    for limit in range(len(KEYWORD_PREFIX), len(full) + 1):
        line = keyword_line(ANCHORS, max_chars=limit)
        assert len(line) <= limit
        for anchor in parse_keyword_line(line):
            assert anchor in ANCHORS  # never a cut anchor
    # retries=5 and src/app.py fit, the error does not, conf/x.toml still does
    assert keyword_line(ANCHORS, max_chars=60) == (
        "Keywords — path: src/app.py, conf/x.toml; config: retries=5"
    )


def test_keyword_line_is_empty_without_anchors():
    assert keyword_line([]) == ""
    assert keyword_line(ANCHORS, max_chars=5) == ""


def test_parse_keyword_line_round_trips_including_separators_and_quotes():
    anchors = [
        Anchor("error", 'KeyError: "a; b"'),
        Anchor("path", "src/a, b.py"),
        Anchor("config", "timeout: 30s"),
        Anchor("quoted", "port must be > 0"),
    ]
    line = keyword_line(anchors)
    assert parse_keyword_line(line) == anchors
    assert keyword_line(parse_keyword_line(line)) == line


@given(
    st.lists(
        st.tuples(st.sampled_from(KINDS), st.text(min_size=1, max_size=20)),
        max_size=8,
        unique_by=lambda pair: pair[1],
    )
)
def test_parse_keyword_line_inverts_keyword_line(pairs):
    anchors = [Anchor(kind, text) for kind, text in pairs if text.strip()]
    expected = sorted(anchors, key=lambda a: KINDS.index(a.kind))
    assert parse_keyword_line(keyword_line(anchors, max_chars=10_000)) == expected


def test_parse_tolerates_model_written_lines():
    assert parse_keyword_line("Keywords: path: a/b.py, c/d.py; id: X-1") == [
        Anchor("path", "a/b.py"),
        Anchor("path", "c/d.py"),
        Anchor("id", "X-1"),
    ]
    assert parse_keyword_line("ZEBRA-7731, conf/x.toml") == [
        Anchor("other", "ZEBRA-7731"),
        Anchor("other", "conf/x.toml"),
    ]
    assert parse_keyword_line("") == []


def test_merge_keeps_every_required_anchor_even_when_the_model_line_lacks_them():
    model = 'Keywords — path: src/app.py; id: JOB-1; quoted: "something the model liked"'
    required = [Anchor("error", "ValueError: bad port"), Anchor("id", "ZEBRA-7731")]
    merged = merge_keyword_lines(model, required, max_chars=400)
    assert merged == (
        'Keywords — error: "ValueError: bad port"; path: src/app.py; id: ZEBRA-7731, JOB-1; '
        'quoted: "something the model liked"'
    )


def test_merge_puts_required_first_within_a_kind_and_lists_each_text_once():
    model = "Keywords — id: JOB-1, ZEBRA-7731"
    merged = merge_keyword_lines(model, [Anchor("id", "ZEBRA-7731")], max_chars=400)
    assert merged == "Keywords — id: ZEBRA-7731, JOB-1"


def test_merge_drops_model_extras_past_max_chars_but_never_a_required_anchor():
    model = "Keywords — path: " + ", ".join(f"src/module_{i}.py" for i in range(40))
    required = [Anchor("id", "ZEBRA-7731"), Anchor("config", "retries=5")]
    merged = merge_keyword_lines(model, required, max_chars=120)
    assert len(merged) <= 120
    assert {"ZEBRA-7731", "retries=5"} <= {a.text for a in parse_keyword_line(merged)}
    tiny = merge_keyword_lines(model, required, max_chars=10)
    assert [a.text for a in parse_keyword_line(tiny)] == ["ZEBRA-7731", "retries=5"]


def test_an_error_anchor_stops_at_the_end_of_its_sentence():
    anchors = extract_anchors("the crash was ValueError: port must be > 0. Context follows here.")
    assert [a.text for a in anchors if a.kind == "error"] == ["ValueError: port must be > 0"]


def test_diff_header_after_a_label_or_line_number_still_loses_git_prefixes():
    """A rendered tool result begins ``Tool result: diff --git …`` and a numbered file view puts
    a line number before ``--- a/…``: neither keeps git's ``a/``/``b/`` (three anchors for one
    file would crowd a keyword line)."""
    labelled = "Tool result: " + DIFF
    numbered = "\n".join(f"{n:>4}\t{line}" for n, line in enumerate(DIFF.splitlines(), 1))
    assert of_kind(labelled, "path") == ["src/app/config.py"]
    assert of_kind(numbered, "path") == ["src/app/config.py"]


def test_a_path_under_a_directory_named_a_is_kept_outside_diff_headers():
    assert of_kind("Tool result: moved a/notes.txt to b/notes.txt", "path") == [
        "a/notes.txt",
        "b/notes.txt",
    ]


def test_code_that_looks_like_a_setting_is_not_a_config_anchor():
    """``limit=limit`` passes an argument on and ``limit: int = 10`` declares a default:
    neither is a setting a checkpoint should carry (a state listed ``window = window``)."""
    code = "    return fetch(rows, limit=limit)\ndef f(rows, limit: int = 10, name: str = 'x'):\n"
    assert of_kind(code, "config") == []
    assert of_kind("window = window", "config") == []


def test_settings_beside_labels_and_type_like_words_stay_config_anchors():
    assert of_kind("worker: port=8080 started", "config") == ["port=8080"]
    assert of_kind("retries = 5\nint = 5\ntimeout=timeout_s", "config") == [
        "retries = 5",
        "int = 5",
        "timeout=timeout_s",
    ]


@given(
    name=st.from_regex(r"[A-Z][A-Z0-9_]{2,20}[0-9_][A-Z0-9_]{0,5}", fullmatch=True),
    before=st.sampled_from(["token: ", "Tool result: ", "export KEY=", "the value is ", ""]),
)
def test_a_masked_secrets_placeholder_is_never_an_anchor(name, before):
    """The audit's keyword lines listed ``id: AUDIT_API_TOKEN``: the masking placeholder's
    variable name, which dsh wrote and nobody said (finding 9)."""
    text = f"{before}[masked {name}] and [masked {name}, OTHER_1]."
    anchors = extract_anchors(text)
    assert not any(name in a.text or "masked" in a.text for a in anchors), anchors


def test_a_name_said_outside_the_placeholder_is_still_an_anchor():
    anchors = extract_anchors(
        "set AUDIT_API_TOKEN first; cat secret.txt gave [masked AUDIT_API_TOKEN]"
    )
    assert Anchor("id", "AUDIT_API_TOKEN") in anchors


@pytest.mark.parametrize(
    "command",
    [
        "seq 1 9000 | sed 's/^/line-3-entry /' > out.txt",
        "sed -i 's/port = 8080/port = 9090/g' conf/net.toml",
        "sed -e s/foo/bar_baz/g -e 's/\\/old\\/dir/new/' conf/net.toml",
        "perl -pe 's/v1\\/api/v2\\/api/' conf/net.toml",
    ],
)
def test_no_path_is_cut_out_of_a_sed_substitution(command):
    """``path: /line-3-entry`` came out of ``sed 's/^/line-3-entry /'``: the slashes of a sed
    substitution delimit a regex and its replacement; the real path beside it stays."""
    paths = [a.text for a in extract_anchors(f"Tool result: {command}") if a.kind == "path"]
    assert paths == ["conf/net.toml"] or paths == ["out.txt"], paths


def test_paths_with_an_s_segment_or_in_a_sed_with_other_delimiters_stay_paths():
    text = "read docs/s/a/b.md and ./s/x/y.py; sed 's|/usr/lib|/opt/lib|' run.sh"
    paths = [a.text for a in extract_anchors(text) if a.kind == "path"]
    assert paths == ["docs/s/a/b.md", "./s/x/y.py", "/usr/lib", "/opt/lib", "run.sh"]


@pytest.mark.parametrize("prefix", ["", "User: ", "Tool result (error): ", "Tool result: "])
def test_the_code_dsh_own_notes_begin_with_is_never_an_anchor(prefix):
    """A stub's keywords listed ``id: NOT_RUN``, out of dsh's ``[NOT_RUN]`` note telling the
    model its call was cut (the llama audit, finding 6): dsh wrote it, nobody said it."""
    from dsh.agent.call_cap import TOO_MANY_CALLS
    from dsh.agent.step_outcome import CUT_TEXT_CALL_NOT_RUN
    from dsh.agent.unread_calls import unreadable_notice

    notes = [
        CUT_TEXT_CALL_NOT_RUN,
        unreadable_notice("a-1-1", "it ends at character 65 before the JSON is closed").text(),
        f"[{TOO_MANY_CALLS}] not run: your reply asked for 12 tool calls",
        "[CANCELLED] cancelled by the user",
    ]
    for note in notes:
        anchors = extract_anchors(f"Assistant: Let me look.\n{prefix}{note}")
        assert not any(a.text in ("NOT_RUN", TOO_MANY_CALLS, "CANCELLED") for a in anchors)


def test_a_code_the_conversation_says_is_still_an_anchor():
    anchors = extract_anchors("User: the job fails with NOT_RUN and [E_QUOTA] at 3pm")
    assert Anchor("id", "NOT_RUN") in anchors and Anchor("id", "E_QUOTA") in anchors
