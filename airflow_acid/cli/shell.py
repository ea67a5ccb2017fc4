"""The interactive ``airflow-acid sql`` shell, as beeline's: one process for the whole session (statements after
the first answer at once), line editing and history (the standard library's readline, history kept in
``$AIRFLOW_ACID_HOME/sql_history``), statements over several lines until a ``;`` outside strings and comments,
``help``, and ``!quit`` / ``!q`` / Ctrl-D to leave (Ctrl-C drops the statement being typed)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

PROMPT = "airflow-acid> "
CONTINUATION = "           > "
QUIT = ("!quit", "!q", "!exit", "quit", "exit", "quit;", "exit;")
HISTORY_FILE = "sql_history"
HISTORY_LENGTH = 1000


def history_path() -> Path:
    """Where the shell keeps its history: ``$AIRFLOW_ACID_HOME/sql_history`` (default ``~/.airflow-acid``)."""
    home = os.environ.get("AIRFLOW_ACID_HOME") or str(Path.home() / ".airflow-acid")
    return Path(home) / HISTORY_FILE


def run_shell(run_text: Callable[[str], None], console: Console, *, read: Callable[[str], str] = input) -> None:
    """Read statements until ``!quit`` or end of input; each complete entry goes to ``run_text``."""
    from airflow_acid.statements.script import is_complete

    interactive = sys.stdin.isatty() and read is input
    if interactive:
        _start_history()
        console.print("airflow-acid sql — statements end with ';'. help lists them; !quit or Ctrl-D leaves.",
                      style="dim", highlight=False)
    buffer: list[str] = []
    while True:
        try:
            line = read(CONTINUATION if buffer else PROMPT) if interactive else read("")
        except EOFError:
            if buffer:
                run_text("\n".join(buffer))  # a last statement without ';' still runs, as in beeline -f
            if interactive:
                console.print()
            break
        except KeyboardInterrupt:
            buffer = []
            console.print()
            continue
        stripped = line.strip()
        if not buffer and stripped.lower() in QUIT:
            break
        if not buffer and stripped.lower() in ("help", "help;", "!help", "?"):
            run_text("help")
            continue
        if not buffer and not stripped:
            continue
        buffer.append(line)
        text = "\n".join(buffer)
        if is_complete(text):
            buffer = []
            run_text(text)
    if interactive:
        _save_history()


def _start_history() -> None:
    try:
        import readline
    except ImportError:  # e.g. Windows without pyreadline: the shell works, without history
        return
    path = history_path()
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(HISTORY_LENGTH)


def _save_history() -> None:
    try:
        import readline
    except ImportError:
        return
    path = history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        readline.write_history_file(path)
    except OSError:
        pass


__all__ = ["run_shell"]
