"""Hive column type strings (``int``, ``decimal(10,2)``, ``array<struct<a:int,b:string>>`` …): check and normalize."""

from __future__ import annotations

import re

from airflow_acid.metastore.errors import InvalidInputError

PRIMITIVE_TYPES = frozenset({
    "tinyint", "smallint", "int", "integer", "bigint", "boolean", "float", "double", "string", "binary",
    "timestamp", "date", "void", "interval_year_month", "interval_day_time",
})
_PARAMETERIZED = {"decimal": (0, 2), "varchar": (1, 1), "char": (1, 1)}  # name -> (min args, max args)
_COMPLEX = ("array", "map", "struct", "uniontype")
_MULTIWORD = {"double precision": "double", "timestamp with local time zone": "timestamp with local time zone"}


def normalize_type(type_name: str, *, column: str = "?") -> str:
    """The canonical lower-case spelling of a Hive type; InvalidInputError naming the column if it is not one."""
    if not isinstance(type_name, str) or not type_name.strip():
        raise InvalidInputError(f"column {column}: type must be a non-empty string such as 'int' or 'string'")
    parser = _Parser(type_name, column)
    result = parser.parse_type()
    parser.expect_end()
    return result


def is_primitive(type_name: str) -> bool:
    """Whether a (normalized) type is a primitive one (allowed for partition keys)."""
    return type_name.split("<", 1)[0].strip() not in _COMPLEX


class _Parser:
    """A small recursive-descent parser over Hive's type grammar."""

    def __init__(self, text: str, column: str) -> None:
        self.text = text
        self.column = column
        self.tokens = self._tokenize(text)
        self.pos = 0

    def _error(self, why: str) -> InvalidInputError:
        return InvalidInputError(f"column {self.column}: {self.text!r} is not a valid Hive type ({why})")

    def _tokenize(self, text: str) -> list[str]:
        tokens: list[str] = []
        i = 0
        while i < len(text):
            if text[i].isspace():
                i += 1
                continue
            if text[i] in "<>(),:":
                tokens.append(text[i])
                i += 1
                continue
            match = re.match(r"[A-Za-z_][A-Za-z0-9_]*(?:\s+[A-Za-z_][A-Za-z0-9_]*)*|\d+", text[i:])
            if not match:
                raise self._error(f"unexpected character {text[i]!r}")
            tokens.append(" ".join(match.group(0).split()).lower())
            i += match.end()
        return tokens

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _next(self) -> str:
        token = self._peek()
        if token is None:
            raise self._error("it ends too early")
        self.pos += 1
        return token

    def _expect(self, token: str) -> None:
        got = self._next()
        if got != token:
            raise self._error(f"expected {token!r}, found {got!r}")

    def expect_end(self) -> None:
        if self._peek() is not None:
            raise self._error(f"unexpected {self._peek()!r}")

    def _int(self) -> int:
        token = self._next()
        if not token.isdigit():
            raise self._error(f"expected a number, found {token!r}")
        return int(token)

    def parse_type(self) -> str:
        name = self._next()
        name = _MULTIWORD.get(name, name)
        if name in PRIMITIVE_TYPES or name == "timestamp with local time zone":
            return name
        if name in _PARAMETERIZED:
            return self._parameterized(name)
        if name == "array":
            self._expect("<")
            element = self.parse_type()
            self._expect(">")
            return f"array<{element}>"
        if name == "map":
            self._expect("<")
            key = self.parse_type()
            if not is_primitive(key):
                raise self._error("map keys must be a primitive type")
            self._expect(",")
            value = self.parse_type()
            self._expect(">")
            return f"map<{key},{value}>"
        if name == "struct":
            return self._struct()
        if name == "uniontype":
            self._expect("<")
            members = [self.parse_type()]
            while self._peek() == ",":
                self._next()
                members.append(self.parse_type())
            self._expect(">")
            return f"uniontype<{','.join(members)}>"
        raise self._error(f"unknown type {name!r}")

    def _parameterized(self, name: str) -> str:
        low, high = _PARAMETERIZED[name]
        args: list[int] = []
        if self._peek() == "(":
            self._next()
            args.append(self._int())
            while self._peek() == ",":
                self._next()
                args.append(self._int())
            self._expect(")")
        if not low <= len(args) <= high:
            raise self._error(f"{name} takes {low if low == high else f'{low} to {high}'} argument(s)")
        if name == "decimal":
            precision = args[0] if args else 10
            scale = args[1] if len(args) > 1 else 0
            if not 1 <= precision <= 38 or not 0 <= scale <= precision:
                raise self._error("decimal needs 1 <= precision <= 38 and 0 <= scale <= precision")
            return f"decimal({precision},{scale})"
        limit = 65535 if name == "varchar" else 255
        if not 1 <= args[0] <= limit:
            raise self._error(f"{name} length must be between 1 and {limit}")
        return f"{name}({args[0]})"

    def _struct(self) -> str:
        self._expect("<")
        fields: list[str] = []
        seen: set[str] = set()
        while True:
            field = self._next()
            if not re.fullmatch(r"[a-z_][a-z0-9_]*", field):
                raise self._error(f"bad struct field name {field!r}")
            if field in seen:
                raise self._error(f"struct field {field!r} appears twice")
            seen.add(field)
            self._expect(":")
            fields.append(f"{field}:{self.parse_type()}")
            if self._peek() == ",":
                self._next()
                continue
            self._expect(">")
            return f"struct<{','.join(fields)}>"
