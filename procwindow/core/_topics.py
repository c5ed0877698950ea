"""Topics and NATS-style subscription patterns.

A topic is dot-separated tokens: ``session.s1.agent.a1.proc.exit``. In a pattern
``*`` matches exactly one token and ``>``, allowed only as the last token,
matches one or more tokens.
"""

from __future__ import annotations

from ._errors import InvalidPattern
from .rules import topic_token

__all__ = ["Pattern", "topic_for"]


def topic_for(session: str, agent: str, kind: str) -> str:
    """The topic of an event about a proc of scope ``(session, agent)``; a ``.``
    or ``%`` in a name is escaped (``gpt-4.1`` is the token ``gpt-4%2E1``)."""
    return f"session.{topic_token(session)}.agent.{topic_token(agent)}.proc.{kind}"


class Pattern:
    """A compiled subscription pattern.

    >>> Pattern("session.*.agent.*.proc.>").matches("session.s1.agent.a1.proc.exit")
    True
    >>> Pattern("session.s1.>").matches("session.s2.agent.a.proc.start")
    False
    """

    __slots__ = ("_tail", "_tokens", "text")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise InvalidPattern(repr(text), "a pattern is a string")
        if not text:
            raise InvalidPattern(text, "empty pattern")
        if any(c in text for c in " \t\r\n\0"):
            raise InvalidPattern(text, "whitespace is not allowed")
        tokens = text.split(".")
        for i, tok in enumerate(tokens):
            if not tok:
                raise InvalidPattern(text, f"empty token at position {i + 1}")
            if tok == ">" and i != len(tokens) - 1:
                raise InvalidPattern(text, "'>' may only be the last token")
            if len(tok) > 1 and ("*" in tok or ">" in tok):
                raise InvalidPattern(text, f"wildcard inside token {tok!r}")
        self.text = text
        self._tail = tokens[-1] == ">"
        self._tokens = tuple(tokens[:-1] if self._tail else tokens)

    def matches(self, topic: str) -> bool:
        """Whether ``topic`` matches this pattern."""
        parts = topic.split(".")
        n = len(self._tokens)
        if self._tail:
            if len(parts) <= n:
                return False
        elif len(parts) != n:
            return False
        for want, got in zip(self._tokens, parts, strict=False):
            if want != "*" and want != got:
                return False
        return True

    def __repr__(self) -> str:
        return f"Pattern({self.text!r})"
