"""One ``airflow-acid sql`` session (a script, ``-e`` or the shell): what ``SET`` changed and what it means
(:mod:`airflow_acid.config.session_keys`), ``help``, and running a script's items in order against one executor.

SET of a Hive setting checks the value as ``[acid]`` does and applies it to the statements that follow (the
executor is reconfigured); SET of a key that only configures HiveServer2 or Hive's engine is acknowledged with a
note; any other key is kept (``SET k`` shows it) and warned about once per session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from airflow_acid.client.hive_dialect import DEFAULT_NULLS_LAST
from airflow_acid.config.session_keys import QUERY_SETTINGS, KeyKind, classify
from airflow_acid.metastore.conf import MetastoreConf
from airflow_acid.metastore.errors import InvalidSettingError
from airflow_acid.statements.model import SUPPORTED, Statement
from airflow_acid.statements.result import Result
from airflow_acid.statements.script import HelpCommand, SessionCommand, SetCommand

SESSION_COMMANDS = (
    ("SET key=value", "set a Hive setting for this session (SET; lists what was set, SET -v every setting)"),
    ("SET key", "show a setting's value"),
    ("help", "this list"),
    ("!quit, !q, Ctrl-D", "leave the shell"),
)


class Session:
    """The settings of one session, starting from ``conf`` (the ``[acid]`` configuration); ``on_change`` receives
    the new settings after a SET of a Hive setting."""

    def __init__(self, conf: MetastoreConf, on_change: Callable[[MetastoreConf], None] | None = None) -> None:
        self.conf = conf
        self.on_change = on_change
        self.values: dict[str, str] = {}
        """Every key this session SET (lower-case) → its value as written."""
        self._warned: set[str] = set()

    def run(self, command: SessionCommand) -> Result:
        """Run SET or help."""
        if isinstance(command, HelpCommand):
            return help_result()
        if command.key is None:
            return self.listing(verbose=command.verbose)
        if command.value is None:
            return self.show(command.key)
        return self.set(command.key, command.value)

    def set(self, key: str, value: str) -> Result:
        """SET key=value (see the module docstring); InvalidSettingError for a value the key does not take."""
        name = key.strip().lower()
        kind = classify(name)
        result = Result("SET")
        if kind.kind is KeyKind.SETTING:
            assert kind.field is not None, "a setting has its field"
            try:
                parsed = MetastoreConf.from_mapping({name: value})
            except InvalidSettingError as exc:
                raise InvalidSettingError(f"SET {key}={value!r}: {exc}") from None
            self.conf = dataclasses.replace(self.conf, **{kind.field: getattr(parsed, kind.field)})
            if self.on_change is not None:
                self.on_change(self.conf)
            result.messages.append(f"{name}={_shown(kind.field, getattr(self.conf, kind.field))} "
                                   "(applies to the statements that follow in this session)")
        elif kind.kind is KeyKind.QUERY:
            setting = QUERY_SETTINGS[name]
            text = value.strip().lower()
            if text not in setting.allowed:
                raise InvalidSettingError(f"SET {key}={value!r}: Hive accepts {', '.join(setting.allowed)}")
            value = text
            result.messages.append(f"{name}={text} (applies to the statements that follow in this session: "
                                   f"{setting.note})")
        elif kind.kind is KeyKind.ACKNOWLEDGED:
            ack = kind.acknowledged
            assert ack is not None, "an acknowledged key has its note"
            text = value.strip()
            if ack.allowed is not None and text.lower() not in ack.allowed:
                raise InvalidSettingError(f"SET {key}={value!r}: Hive accepts {', '.join(ack.allowed)}")
            line = f"{name}={text}: acknowledged; {ack.note}"
            if ack.expected is not None and text.lower() != ack.expected.lower():
                line += f" (airflow-acid behaves as {name}={ack.expected})"
            result.messages.append(line)
        else:
            if name not in self._warned:
                self._warned.add(name)
                result.warnings.append(f"{name} is not a setting airflow-acid knows (check the spelling); it is kept "
                                       f"for this session only: SET {name} shows it")
            result.messages.append(f"{name}={value.strip()}")
        self.values[name] = value.strip()
        return result

    def show(self, key: str) -> Result:
        """SET key: its value in this session (Hive prints ``key=value``, or ``key is undefined``)."""
        name = key.strip().lower()
        kind = classify(name)
        result = Result("SET", ["set"])
        if kind.kind is KeyKind.SETTING and kind.field is not None:
            result.rows.append([f"{name}={_shown(kind.field, getattr(self.conf, kind.field))}"])
        elif kind.kind is KeyKind.QUERY:
            result.rows.append([f"{name}={self.values.get(name, QUERY_SETTINGS[name].default)}"])
        elif name in self.values:
            result.rows.append([f"{name}={self.values[name]}"])
        else:
            result.rows.append([f"{name} is undefined"])
        return result

    def listing(self, *, verbose: bool = False) -> Result:
        """SET: what this session set; SET -v: also every Hive setting airflow-acid has, with its value."""
        lines = {name: value for name, value in self.values.items()}
        if verbose:
            for field in dataclasses.fields(MetastoreConf):
                key = MetastoreConf.key_of(field.name)
                lines.setdefault(key, _shown(field.name, getattr(self.conf, field.name)))
            for key, setting in QUERY_SETTINGS.items():
                lines.setdefault(key, setting.default)
        return Result("SET", ["set"], [[f"{k}={v}"] for k, v in sorted(lines.items())])

    @property
    def default_nulls_last(self) -> bool:
        """``hive.default.nulls.last`` in this session."""
        name = "hive.default.nulls.last"
        return self.values.get(name, QUERY_SETTINGS[name].default) == "true"


def _shown(field: str, value: object) -> str:
    """A setting's value as Hive writes it (times with their unit)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        number = f"{value:g}"
        return number + ("s" if field.endswith("_s") else "ms" if field.endswith("_ms") else "")
    return str(value) + ("ms" if field.endswith("_ms") else "")


def help_result() -> Result:
    """``help``: the statements and session commands airflow-acid sql runs."""
    rows = [[s, "statement"] for s in SUPPORTED] + [[c, what] for c, what in SESSION_COMMANDS]
    return Result("HELP", ["command", "what"], rows)


class ScriptRunner:
    """Runs a script's items (statements and session commands) in one session over one executor; the executor
    (``run``) takes statements, the session the rest."""

    def __init__(self, run: Callable[[Statement], Result], session: Session) -> None:
        self._run = run
        self.session = session

    def run(self, item: Statement | SessionCommand) -> Result:
        if isinstance(item, (SetCommand, HelpCommand)):
            return self.session.run(item)
        token = DEFAULT_NULLS_LAST.set(self.session.default_nulls_last)
        try:
            return self._run(item)
        finally:
            DEFAULT_NULLS_LAST.reset(token)


__all__ = ["SESSION_COMMANDS", "ScriptRunner", "Session", "help_result"]
