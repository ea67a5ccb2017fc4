"""A script as Hive's CLI reads it: statements separated by ``;``, found with sqlglot's tokenizer (so a ``;`` inside a
string or a comment does not split), each with the place it starts; and the session commands handled before any
parsing — ``SET``, ``help`` — which sqlglot does not need to understand.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from airflow_acid.statements import dialect as acid
from airflow_acid.statements.errors import StatementSyntaxError


@dataclass(frozen=True)
class Piece:
    """One statement's text, where it starts in the script (character offset) and its tokens."""

    text: str
    start: int
    tokens: tuple[Token, ...]

    @property
    def first_word(self) -> str:
        return self.tokens[0].text.upper() if self.tokens else ""


@dataclass(frozen=True)
class SetCommand:
    """``SET;`` (list what the session set), ``SET -v`` (every setting), ``SET k`` (show) or ``SET k=v``."""

    key: str | None = None
    value: str | None = None
    verbose: bool = False


@dataclass(frozen=True)
class HelpCommand:
    """``help``: the statements and commands airflow-acid sql runs."""


SessionCommand = SetCommand | HelpCommand


def tokens_of(text: str) -> list[Token]:
    """Hive's tokens of ``text`` (comments dropped); StatementSyntaxError for text that cannot be tokenized."""
    try:
        return acid.HiveAcid().tokenize(text)
    except TokenError as exc:
        raise StatementSyntaxError(_token_error(text, exc)) from None


def _token_error(text: str, exc: TokenError) -> str:
    detail = str(exc)
    quote = next((q for q in ("'", '"', "`") if text.count(q) % 2), None)
    if quote is not None:
        offset = text.rindex(quote)
        line, col = position(text, offset)
        return f"line {line}:{col} character {quote!r} starts a string or name that is never closed"
    if text.count("/*") > text.count("*/"):
        line, col = position(text, text.rindex("/*"))
        return f"line {line}:{col} a comment '/*' that is never closed"
    return f"cannot read the text as Hive tokens ({detail.split(chr(10))[0][:120]})"


def position(text: str, offset: int) -> tuple[int, int]:
    """Hive's (line, column) of a character offset: lines from 1, columns from 0."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1)


def split_script(text: str) -> list[Piece]:
    """The statements of a script, in order; empty ones (only ``;`` or comments) left out."""
    pieces: list[Piece] = []
    current: list[Token] = []
    for token in [*tokens_of(text), None]:
        if token is not None and token.token_type is not TokenType.SEMICOLON:
            current.append(token)
            continue
        if current:
            start, end = current[0].start, current[-1].end + 1
            pieces.append(Piece(text[start:end], start, tuple(current)))
        current = []
    return pieces


def is_complete(text: str) -> bool:
    """Whether a shell buffer holds whole statements: it ends with ``;`` outside strings and comments (or holds
    only comments and blanks)."""
    try:
        tokens = acid.HiveAcid().tokenize(text)
    except TokenError:
        return False  # an unclosed string or comment: more lines to come
    return not tokens or tokens[-1].token_type is TokenType.SEMICOLON


def session_command(piece: Piece) -> SessionCommand | None:
    """The piece as a session command, or None when it is a statement for the parser."""
    word = piece.first_word
    if word == "HELP" and len(piece.tokens) == 1:
        return HelpCommand()
    if word != "SET" or piece.tokens[0].token_type is not TokenType.SET:
        return None
    rest = piece.text[piece.tokens[0].end + 1 - piece.start:].strip()
    if not rest:
        return SetCommand()
    if rest == "-v":
        return SetCommand(verbose=True)
    key, eq, value = rest.partition("=")
    key = key.strip()
    if not key or any(c.isspace() for c in key):
        raise StatementSyntaxError(f"{_where(piece)} SET takes key=value, a key, -v or nothing, not {rest[:60]!r}")
    return SetCommand(key, value.strip() if eq else None)


def _where(piece: Piece) -> str:
    return "line {}:{}".format(*position(piece.text, 0))


__all__ = ["HelpCommand", "Piece", "SessionCommand", "SetCommand", "is_complete", "position", "session_command",
           "split_script", "tokens_of"]
