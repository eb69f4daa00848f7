"""Command rules for the shell tool: ``tools.allow_commands`` and ``tools.deny_commands``
(docs/usage.md, "Command rules").

A pattern is a command's first shell words, split as the shell would quote them (as ``shlex``):
``git status`` matches that command and nothing else (``git status -s`` is another command); a
last word ``*`` lets any further words follow (``git diff *``: ``git diff``, ``git diff HEAD
--stat``). ``*`` elsewhere, an empty pattern, one of ``*`` alone, quotes that do not close and
shell control characters are refused when the config loads, in one line naming the key.

An allow rule matches only a *simple* command: one holding none of ``;``, ``&``, ``|``, ``<``,
``>``, a backtick, ``$(``, ``${`` or a line break anywhere (quoted or not: ``grep "a|b"`` is
asked as before), whose words begin with the rule's words, then end there or, for
a trailing ``*``, go on. So ``git status; rm -rf ~`` never rides on ``git status``, and
``FOO=1 git status`` (a variable set first) is not ``git status``.

A deny rule is a guard against a mistake, not a sandbox: it matches when any command of the
line does, the line cut at those control characters (and ``(``, ``)``, ``{``, ``}``) with
quotes and backslashes removed, each piece's leading ``NAME=value`` assignments and a few
prefixes that run what follows (``sudo``, ``env``, ``command``, ``exec``, ``nohup``, ``time``,
``nice``, ``if``, ``then``…) skipped. ``cd x && git push --force`` matches ``git push *``; a
command run another way (``bash -c "…"``, ``xargs``, a script, ``$CMD``) is not seen.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dsh.errors import ConfigError

CONTROL = (";", "&", "|", "<", ">", "`", "$(", "${", "\n", "\r")
"""What makes a command line more than one simple command: with any of these, anywhere in it,
no allow rule matches it."""
_CUTS = re.compile(r"\$\(|\$\{|[;&|<>`\n\r(){}]")
_SEGMENT = re.compile(
    r"(?P<blank>[ \t\r\n]+)|'(?P<single>[^']*)'|\"(?P<double>(?:[^\"\\]|\\.)*)\""
    r"|\\(?P<escaped>.)|(?P<plain>[^ \t\r\n'\"\\]+)",
    re.DOTALL,
)
"""One run of a command line as shlex reads it in POSIX mode: blanks, a single-quoted string,
a double-quoted one, a backslash and the character it escapes, or unquoted characters."""
_DOUBLE_ESCAPE = re.compile(r'\\(["\\])')
"""Inside double quotes shlex takes a backslash away only before ``"`` or a backslash."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_RUNS_WHAT_FOLLOWS = frozenset(
    {"sudo", "env", "command", "builtin", "exec", "nohup", "time", "nice", "!"}
    | {"if", "then", "else", "elif", "do", "while", "until"}
)
RULE_KEYS = ("tools.allow_commands", "tools.deny_commands")


@dataclass(frozen=True, slots=True)
class CommandRule:
    """One pattern: its words, and whether further words may follow (a trailing ``*``)."""

    pattern: str
    words: tuple[str, ...]
    more: bool

    def covers(self, words: Sequence[str]) -> bool:
        """True if a command of these ``words`` is the rule's (exactly, or with more words
        after them for a trailing ``*``)."""
        n = len(self.words)
        if tuple(words[:n]) != self.words:
            return False
        return self.more or len(words) == n


def parse_rule(pattern: object, key: str) -> CommandRule:
    """``pattern`` as a rule; ``ConfigError`` naming ``key`` and saying what is wrong."""
    if not isinstance(pattern, str):
        raise ConfigError(f"config key {key} must be a list of strings; got {pattern!r}")
    said = f"config key {key} has {pattern!r}:"
    control = [c for c in CONTROL if c in pattern]
    if control:
        raise ConfigError(f"{said} a pattern is one command's words, without {_named(control[0])}")
    words = shell_words(pattern)
    if words is None:
        raise ConfigError(f"{said} a quote or a last backslash does not close")
    more = bool(words) and words[-1] == "*"
    if more:
        words = words[:-1]
    if not words:
        raise ConfigError(f"{said} a pattern must name a command (`git status`, `pytest *`)")
    if any("*" in word for word in words):
        raise ConfigError(
            f"{said} `*` may only be the last word, on its own (`git diff *`), meaning any "
            "further words"
        )
    return CommandRule(pattern, tuple(words), more)


@dataclass(frozen=True, slots=True)
class CommandRules:
    """The allow and deny rules a policy applies to shell commands."""

    allow: tuple[CommandRule, ...] = ()
    deny: tuple[CommandRule, ...] = ()

    @classmethod
    def of(cls, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> CommandRules:
        """The rules of these patterns (``ConfigError`` on a bad one, naming its key)."""
        return cls(
            tuple(parse_rule(p, RULE_KEYS[0]) for p in allow),
            tuple(parse_rule(p, RULE_KEYS[1]) for p in deny),
        )

    def allowing(self, command: str) -> CommandRule | None:
        """The first allow rule that lets ``command`` run unasked (None: none does, or it is
        not one simple command)."""
        words = simple_words(command)
        if words is None:
            return None
        return next((rule for rule in self.allow if rule.covers(words)), None)

    def denying(self, command: str) -> CommandRule | None:
        """The first deny rule that a command of the line ``command`` matches (None: none)."""
        if not self.deny:
            return None
        pieces = command_pieces(command)
        return next((r for r in self.deny for words in pieces if r.covers(words)), None)


def has_control(command: str) -> bool:
    """True if ``command`` holds a shell control or substitution character anywhere."""
    return any(c in command for c in CONTROL)


def simple_words(command: str) -> list[str] | None:
    """The words of ``command`` as the shell splits them, if it is one simple command (no
    control character, quotes that close); else None."""
    if has_control(command):
        return None
    return shell_words(command)


def shell_words(text: str) -> list[str] | None:
    """``text`` split into words as ``shlex.split`` splits it (None where it raises: a quote
    that does not close, a last backslash), by regular expression: shlex reads a character at a
    time in Python, 0.5 s for a 100 KB command on the event loop, this a run at a time."""
    words: list[str] = []
    word: list[str] | None = None
    at = 0
    while at < len(text):
        found = _SEGMENT.match(text, at)
        if found is None:
            return None
        at = found.end()
        if found.lastgroup == "blank":
            if word is not None:
                words.append("".join(word))
            word = None
            continue
        word = [] if word is None else word
        if found.lastgroup == "double":
            word.append(_DOUBLE_ESCAPE.sub(r"\1", found.group("double")))
        else:
            word.append(found.group(found.lastgroup or ""))
    if word is not None:
        words.append("".join(word))
    return words


def command_pieces(command: str) -> list[list[str]]:
    """Each command of the line ``command`` as a deny rule sees it: cut at the control
    characters, quotes and backslashes removed, leading assignments and prefixes skipped."""
    unquoted = re.sub(r"[\"'\\]", "", command)
    pieces = []
    for piece in _CUTS.split(unquoted):
        words = piece.split()
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in _RUNS_WHAT_FOLLOWS):
            words.pop(0)
        if words:
            pieces.append(words)
    return pieces


def _named(control: str) -> str:
    return {"\n": "a line break", "\r": "a carriage return"}.get(control, f"`{control}`")
