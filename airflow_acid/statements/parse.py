"""Hive statement text → typed statements (:mod:`airflow_acid.statements.model`), through sqlglot's Hive dialect
extended with the ACID statements (:mod:`airflow_acid.statements.dialect`).

A script of several statements separated by ``;`` is parsed as a whole before anything runs, so a typo in the third
statement stops the script before the first one changed anything. Errors are one line, as Hive words them: where the
input stops making sense — ``line 1:7 cannot recognize input near 'FROM' 'x' '<EOF>'`` —
(:class:`StatementSyntaxError`), or which statement or clause airflow-acid does not run
(:class:`UnsupportedStatementError`); neither lists the statements (``help`` does).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import overload

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from airflow_acid.metastore.catalog import (
    LAZY_SIMPLE_SERDE,
    ORC_INPUT_FORMAT,
    ORC_OUTPUT_FORMAT,
    ORC_SERDE,
    TEXT_INPUT_FORMAT,
    TEXT_OUTPUT_FORMAT,
    TableStorage,
)
from airflow_acid.statements import dialect as acid
from airflow_acid.statements.errors import StatementSyntaxError, UnsupportedStatementError
from airflow_acid.statements.model import (
    AbortCompactions,
    AbortTransactions,
    AlterTableAddPartitions,
    AlterTableColumns,
    AlterTableCompact,
    AlterTableDropPartitions,
    AlterTableProperties,
    Column,
    CreateDatabase,
    CreateTable,
    CreateTableAs,
    CreateTableLike,
    CreateView,
    Delete,
    Describe,
    DescribeDatabase,
    DropDatabase,
    DropTable,
    DropView,
    Insert,
    LoadData,
    Merge,
    MergeWhen,
    MultiInsert,
    PartitionSpec,
    Query,
    ShowCompactions,
    ShowCreateTable,
    ShowDatabases,
    ShowLocks,
    ShowPartitions,
    ShowTables,
    ShowTblProperties,
    ShowTransactions,
    Statement,
    TableName,
    Truncate,
    Update,
    Use,
)
from airflow_acid.statements.script import (
    HelpCommand,
    Piece,
    SessionCommand,
    SetCommand,
    position,
    session_command,
    split_script,
)

_SQLGLOT_LOG = logging.getLogger("sqlglot")
_TOKEN_REPR = re.compile(r"<Token token_type: [^,]*, text: (.*?), line: \d+.*?>")
HELP_HINT = "'help' lists the statements it runs"

# Hive's COMPACTION_QUEUE column names accepted in SHOW COMPACTIONS … ORDER BY, and the output column each sorts.
ORDER_BY_ALIASES = {
    "cq_id": "compactionid", "cq_database": "dbname", "cq_table": "tabname", "cq_partition": "partname",
    "cq_type": "type", "cq_state": "state", "cq_worker_id": "workerid", "cq_enqueue_time": "enqueuetime",
    "cq_start": "starttime", "cq_hadoop_job_id": "hadoopjobid", "cq_error_message": "errormessage",
    "cq_initiator_id": "initiatorid", "cq_pool_name": "poolname", "cq_txn_id": "txnid",
    "cq_next_txn_id": "nexttxnid", "cq_commit_time": "committime", "cq_highest_write_id": "hightestwriteid",
}



def parse_script(text: str) -> list[Statement | SessionCommand]:
    """Every ``;``-separated statement or session command (SET, help) of ``text``, in order (empty ones skipped),
    all parsed before any runs. Errors name the line and column in ``text`` (Hive's ``line L:C``, column from 0)."""
    if not text or not text.strip():
        raise _malformed("no statement given")
    control = next((c for c in text if ord(c) < 32 and c not in "\t\n\r"), None)
    if control is not None:
        line, column = position(text, text.index(control))
        raise _malformed(f"line {line}:{column} control character {control!r}; statements are plain text")
    items: list[Statement | SessionCommand] = []
    for piece in split_script(text):
        command = session_command(piece)
        items.append(command if command is not None else _parse_piece(text, piece))
    if not items:
        raise _malformed("no statement given")
    return items


def parse_statements(text: str) -> list[Statement]:
    """Every ``;``-separated statement of ``text``, in order (empty statements skipped); session commands (SET,
    help) belong to ``airflow-acid sql``'s session and are refused here."""
    items = parse_script(text)
    commands = [i for i in items if isinstance(i, (SetCommand, HelpCommand))]
    if commands:
        word = "SET" if isinstance(commands[0], SetCommand) else "help"
        raise UnsupportedStatementError(f"{word} is a command of an airflow-acid sql session (a script, -e or the "
                                        "shell), not a statement to run here")
    return [i for i in items if not isinstance(i, (SetCommand, HelpCommand))]


def parse_statement(text: str) -> Statement:
    """Exactly one statement."""
    statements = parse_statements(text)
    if len(statements) != 1:
        raise _malformed(f"expected one statement, found {len(statements)}")
    return statements[0]


STATEMENT_WORDS = frozenset({
    "SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "MERGE", "TRUNCATE", "SHOW", "ALTER", "ABORT", "CREATE",
    "DESCRIBE", "DESC", "FROM", "(", "VALUES", "DROP", "USE", "LOAD", "EXPLAIN", "BEGIN", "START", "COMMIT",
    "ROLLBACK", "ANALYZE", "MSCK", "GRANT", "REVOKE", "EXPORT", "IMPORT", "RELOAD", "KILL", "REPL", "RESET", "ADD",
    "LIST", "DFS", "REPLACE", "SET", "CACHE", "UNCACHE", "REFRESH", "PRAGMA", "COPY", "CALL", "EXECUTE", "PREPARE"})
"""Words a statement can start with (Hive's and other engines'); any other first word is a parse error at 1:0."""


def _parse_piece(text: str, piece: Piece) -> Statement:
    if piece.first_word not in STATEMENT_WORDS:
        raise StatementSyntaxError(_near(text, piece, 0))
    quiet = _drop_unsupported_syntax_warnings  # sqlglot warns before falling back to an opaque command
    _SQLGLOT_LOG.addFilter(quiet)
    try:
        nodes = sqlglot.parse(piece.text, dialect=acid.HiveAcid)
    except ParseError as exc:
        raise StatementSyntaxError(_syntax_message(text, piece, exc)) from None
    except TokenError as exc:  # the script was tokenized already; kept for safety
        raise _malformed(f"cannot read the text as Hive tokens ({str(exc).splitlines()[0][:120]})") from None
    finally:
        _SQLGLOT_LOG.removeFilter(quiet)
    found = [node for node in nodes if node is not None and not isinstance(node, exp.Semicolon)]
    if len(found) != 1:
        raise StatementSyntaxError(_near(text, piece, 0))
    return _statement(found[0], _leading_words(piece))


def _leading_words(piece: Piece) -> str:
    """The statement's first keyword(s) as typed, e.g. ``DROP TABLE`` or ``USE`` (names and literals left out)."""
    words = [piece.tokens[0].text.upper()]
    if len(piece.tokens) > 1 and (piece.tokens[1].token_type not in _NOT_KEYWORDS
                                  or piece.tokens[1].text.upper() in _OBJECT_WORDS):
        words.append(piece.tokens[1].text.upper())
    return " ".join(words)


_OBJECT_WORDS = frozenset({
    "TABLES", "DATABASES", "SCHEMAS", "PARTITIONS", "VIEWS", "FUNCTIONS", "COLUMNS", "TBLPROPERTIES", "CREATE",
    "CONF", "ROLES", "GRANT", "CATALOGS", "DATA", "STATISTICS", "MATERIALIZED", "TEMPORARY", "EXTERNAL",
    "TRANSACTIONAL", "INDEX", "CATALOG", "VIEW", "DATABASE", "SCHEMA", "TABLE", "FUNCTION", "MACRO", "ROLE"})
_NOT_KEYWORDS = (TokenType.VAR, TokenType.STRING, TokenType.NUMBER, TokenType.L_PAREN, TokenType.IDENTIFIER)


def _drop_unsupported_syntax_warnings(record: logging.LogRecord) -> bool:
    return "unsupported syntax" not in record.getMessage()


_INTERNAL = ("Required keyword", "<class", "Invalid expression", "Unexpected token", "SENTINEL")


def _syntax_message(text: str, piece: Piece, exc: ParseError) -> str:
    """Hive's ``line L:C cannot recognize input near 'a' 'b' 'c'`` from sqlglot's error: the token where the
    statement stops making sense and the two after it (``<EOF>`` past the end), then what was expected when that
    says more than the position (never sqlglot's class names)."""
    detail = exc.errors[0] if exc.errors else {}
    description = str(detail.get("description") or "")
    description = _TOKEN_REPR.sub(lambda m: repr(m.group(1)), description)  # sqlglot prints raw Token objects
    index = 0
    if "offset" in detail:
        local = int(detail["offset"])
        starts = [t.start - piece.start for t in piece.tokens]
        index = next((i for i, s in enumerate(starts) if s >= local), len(starts) - 1)
        if detail.get("at_end"):
            index = len(starts)  # the statement ended before it made sense: Hive's '<EOF>'
    hint = ""
    if description.startswith("Expecting "):
        expected = description[len("Expecting "):].strip()
        hint = f"expecting {expected!r}" if len(expected) == 1 else f"expecting {expected}"
    elif description.startswith("Expected table name"):
        hint = "expecting a table name"
    elif description and not any(marker in description for marker in _INTERNAL):
        hint = description
    return _near(text, piece, index) + (f"; {_clip(hint, 200)}" if hint else "")


def _near(text: str, piece: Piece, index: int) -> str:
    """``line L:C cannot recognize input near …`` for the token at ``index`` of the piece."""
    tokens = piece.tokens
    offset = tokens[index].start if index < len(tokens) else piece.start + len(piece.text)
    line, column = position(text, offset)
    words = [_clip(t.text, 40) for t in tokens[index:index + 3]]
    words += ["<EOF>"] * (3 - len(words))
    return f"line {line}:{column} cannot recognize input near " + " ".join(f"'{w}'" for w in words)


def _clip(text: str, limit: int = 60) -> str:
    """Quote at most ``limit`` characters of the user's text in a message (a huge statement is not echoed back)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _unsupported(what: str, hint: str | None = None) -> UnsupportedStatementError:
    why = f" ({_clip(hint, 200)})" if hint else ""
    return UnsupportedStatementError(f"{_clip(what)} is not supported by airflow-acid sql{why}; {HELP_HINT}")


def _malformed(message: str) -> StatementSyntaxError:
    return StatementSyntaxError(message)


# --- one node → one statement ---------------------------------------------------------------------------------------


_AUTOCOMMIT = ("airflow-acid sql runs each statement as its own transaction, as Hive does (autocommit; Hive has "
               "no multi-statement transactions): drop BEGIN / START TRANSACTION / COMMIT / ROLLBACK, or use the "
               "Python API's warehouse.transaction() to group statements")


def _statement(node: exp.Expr, leading: str = "") -> Statement:
    if isinstance(node, (exp.Transaction, exp.Commit, exp.Rollback)) or (
            isinstance(node, exp.Alias) and isinstance(node.this, exp.Column) and node.this.name.upper() == "START"
            and node.alias.upper() == "TRANSACTION"):
        word = {exp.Commit: "COMMIT", exp.Rollback: "ROLLBACK"}.get(type(node), "BEGIN" if isinstance(
            node, exp.Transaction) else "START TRANSACTION")
        raise UnsupportedStatementError(f"{word} is not supported: {_AUTOCOMMIT}")
    if isinstance(node, exp.Query):
        return Query(node)
    if isinstance(node, exp.Insert):
        return _insert(node)
    if isinstance(node, exp.MultitableInserts):
        return _multi_insert(node)
    if isinstance(node, exp.TruncateTable):
        if len(node.expressions) != 1:
            raise _unsupported("TRUNCATE TABLE of several tables", "truncate one table per statement")
        return Truncate(_table_name(node.expressions[0]), _partition(node.args.get("partition")))
    if isinstance(node, exp.Update):
        if node.args.get("from_") or node.args.get("from"):
            raise _unsupported("UPDATE … FROM", "Hive's UPDATE has no FROM; use MERGE")
        return Update(_table_name(node.this), tuple(_assignment(a) for a in node.expressions),
                      _where(node))
    if isinstance(node, exp.Delete):
        if node.args.get("using"):
            raise _unsupported("DELETE … USING", "Hive's DELETE has no USING; use MERGE")
        return Delete(_table_name(node.this), _where(node))
    if isinstance(node, exp.Merge):
        return _merge(node)
    if isinstance(node, acid.ShowCompactions):
        return _show_compactions(node)
    if isinstance(node, acid.ShowTransactions):
        return ShowTransactions()
    if isinstance(node, acid.ShowLocks):
        database = node.args.get("database")
        return ShowLocks(database=database.name if database is not None else None,
                         table=_table_name(node.args.get("table")), partition=_partition(node.args.get("partition")),
                         extended=bool(node.args.get("extended")))
    if isinstance(node, acid.AbortTransactions):
        return AbortTransactions(tuple(_integer(n, "a transaction id") for n in node.expressions))
    if isinstance(node, acid.AbortCompactions):
        return AbortCompactions(tuple(_integer(n, "a compaction id") for n in node.expressions))
    if isinstance(node, exp.Alter) and str(node.args.get("kind") or "").upper() == "VIEW":
        return _alter_view(node)
    if isinstance(node, exp.Alter):
        return _alter(node)
    if isinstance(node, exp.Create) and str(node.args.get("kind") or "").upper() == "VIEW":
        return _create_view(node)
    if isinstance(node, exp.Create):
        return _create(node)
    if isinstance(node, exp.Drop) and str(node.args.get("kind") or "").upper() == "VIEW":
        if node.args.get("materialized"):
            raise _unsupported("DROP MATERIALIZED VIEW", "airflow-acid keeps no materialized views")
        names = node.args.get("tables") or []
        if len(names) != 1:
            raise _unsupported("DROP VIEW of several views", "drop one per statement")
        return DropView(_table_name(names[0]), if_exists=bool(node.args.get("exists")))
    if isinstance(node, exp.Drop):
        return _drop(node)
    if isinstance(node, exp.Use):
        if node.args.get("kind"):
            raise _unsupported(f"USE {node.args['kind']}")
        return Use(_database_name(node.this))
    if isinstance(node, acid.ShowPartitions):
        return ShowPartitions(_table_name(node.this), _partition(node.args.get("partition")))
    if isinstance(node, acid.ShowCreateTable):
        return ShowCreateTable(_table_name(node.this))
    if isinstance(node, acid.ShowTblProperties):
        return ShowTblProperties(_table_name(node.this), _text(node.args.get("key")))
    if isinstance(node, acid.ShowDatabases):
        return ShowDatabases(_text(node.args.get("pattern")))
    if isinstance(node, acid.ShowTables):
        database = node.args.get("database")
        return ShowTables(database.name if database is not None else None, _text(node.args.get("pattern")),
                          views=bool(node.args.get("views")))
    if isinstance(node, exp.LoadData):
        return _load_data(node)
    if isinstance(node, exp.Describe):
        if str(node.args.get("kind") or "").upper() in ("DATABASE", "SCHEMA"):
            return DescribeDatabase(_database_name(node.this),
                                    extended=str(node.args.get("style") or "").upper() == "EXTENDED")
        if node.args.get("kind"):
            raise _unsupported(f"DESCRIBE {node.args['kind']}")
        style = (node.args.get("style") or "").upper()
        return Describe(_table_name(node.this), formatted=style in ("FORMATTED", "EXTENDED"),
                        partition=_partition(node.args.get("partition")))
    if isinstance(node, exp.Command) and leading:
        raise _unsupported(leading)
    if isinstance(node, exp.Command):
        words = f"{node.this} {node.expression or ''}".split()
        raise _unsupported(" ".join(words[:2]).upper() if words else "this statement")
    kind = node.args.get("kind")
    if leading:  # the user's own words, never sqlglot's class names
        raise _unsupported(leading)
    raise _unsupported(type(node).__name__.upper() + (f" {kind.upper()}" if isinstance(kind, str) else ""))


def _create_view(node: exp.Create) -> CreateView:
    """CREATE [OR REPLACE] VIEW [IF NOT EXISTS] v [(columns)] AS SELECT … (Hive's view properties are not kept)."""
    target = node.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = tuple(c.name for c in target.expressions)
        target = target.this
    query = node.expression
    if not isinstance(query, exp.Query):
        raise _malformed("CREATE VIEW needs AS SELECT …")
    properties = node.args.get("properties")
    if properties is not None and properties.expressions:
        raise _unsupported(f"CREATE VIEW … {properties.sql(dialect=acid.HiveAcid)}")
    return CreateView(_table_name(target), query, columns=columns, replace=bool(node.args.get("replace")),
                      if_not_exists=bool(node.args.get("exists")))


def _alter_view(node: exp.Alter) -> CreateView:
    actions = node.args.get("actions") or []
    if len(actions) != 1 or not isinstance(actions[0], exp.Query):
        raise _unsupported("this ALTER VIEW", "airflow-acid runs ALTER VIEW v AS SELECT …")
    return CreateView(_table_name(node.this), actions[0], replace=True, alter=True)


def _load_data(node: exp.LoadData) -> LoadData:
    if node.args.get("input_format") or node.args.get("serde"):
        raise _unsupported("LOAD DATA … INPUTFORMAT … SERDE", "the files are read in the table's own format")
    path = _text(node.args.get("inpath"))
    if not path:
        raise _malformed("LOAD DATA needs INPATH 'path'")
    return LoadData(_table_name(node.this), path, local=bool(node.args.get("local")),
                    overwrite=bool(node.args.get("overwrite")), partition=_partition(node.args.get("partition")))


def _show_compactions(node: acid.ShowCompactions) -> ShowCompactions:
    database = node.args.get("database")
    order: list[tuple[str, bool]] = []
    if node.args.get("order") is not None:
        for item in node.args["order"].expressions:
            if not isinstance(item.this, exp.Column):
                raise _malformed(f"SHOW COMPACTIONS can only be ordered by column names, not "
                                           f"{item.this.sql()!r}")
            name = item.this.name.lower()
            order.append((ORDER_BY_ALIASES.get(name, name), bool(item.args.get("desc"))))
    limit = node.args.get("limit")
    return ShowCompactions(
        compaction_id=_integer(node.args["id"], "a compaction id") if node.args.get("id") is not None else None,
        database=database.name if database is not None else None, table=_table_name(node.args.get("table")),
        partition=_partition(node.args.get("partition")), pool=_text(node.args.get("pool")),
        type=_text(node.args.get("type")), status=_text(node.args.get("status")), order_by=tuple(order),
        limit=_integer(limit.expression, "a row count after LIMIT") if limit is not None else None)


def _alter(node: exp.Alter) -> Statement:
    kind = (node.args.get("kind") or "").upper()
    if kind != "TABLE":
        raise _unsupported(f"ALTER {kind}")
    actions = node.args.get("actions") or []
    if len(actions) != 1 or node.args.get("options"):
        raise _unsupported("ALTER TABLE with several actions")
    action = actions[0]
    table = _table_name(node.this)
    partition = _partition(node.this.args.get("partition"))
    if isinstance(action, acid.Compact):
        return _compact(table, partition, action)
    if isinstance(action, acid.AddPartitions):
        locations = action.args.get("locations") or []
        return AlterTableAddPartitions(table, tuple(
            (_required_partition(p), None if isinstance(loc, exp.Null) else _text(loc))
            for p, loc in zip(action.expressions, locations, strict=True)),
            if_not_exists=bool(action.args.get("exists")))
    if isinstance(action, acid.DropPartitions):
        return AlterTableDropPartitions(table, tuple(_required_partition(p) for p in action.expressions),
                                        if_exists=bool(action.args.get("exists")),
                                        purge=bool(action.args.get("purge")))
    if isinstance(action, (exp.Schema, exp.ReplaceColumns)):
        return AlterTableColumns(table, "add" if isinstance(action, exp.Schema) else "replace",
                                 tuple(_column(c) for c in action.expressions), partition=partition)
    if isinstance(action, acid.ChangeColumn):
        new = Column(action.args["rename_to"].name, action.args["dtype"].sql(dialect=acid.HiveAcid),
                     _text(action.args.get("comment")))
        position = action.args.get("position")
        return AlterTableColumns(table, "change", (new,), old_name=action.this.name,
                                 position=position.name if position is not None else None, partition=partition)
    if isinstance(action, acid.UnsetProperties):
        return AlterTableProperties(table, unset=tuple(_text(k) for k in action.expressions),
                                    unset_if_exists=bool(action.args.get("exists")), partition=partition)
    if isinstance(action, exp.AlterSet) and set(k for k, v in action.args.items() if v) == {"expressions"} \
            and len(action.expressions) == 1 and isinstance(action.expressions[0], exp.Properties) \
            and all(type(p) is exp.Property for p in action.expressions[0].expressions):
        return AlterTableProperties(table, set=_properties(action.expressions[0].expressions), partition=partition)
    clause = type(action).__name__.removeprefix("Alter").upper() or "this action"
    if isinstance(action, exp.AlterSet):
        named = [k.upper() for k, v in action.args.items() if v and k != "expressions"]
        inner = [type(p).__name__.upper() for e in action.expressions if isinstance(e, exp.Properties)
                 for p in e.expressions if type(p) is not exp.Property]
        clause = "SET " + " ".join(named + inner or ["…"])
    raise _unsupported(f"ALTER TABLE … {clause}".rstrip())


def _multi_insert(node: exp.MultitableInserts) -> MultiInsert:
    """FROM src INSERT … SELECT … [INSERT … SELECT …]: each SELECT reads ``src`` (Hive's multi-table INSERT)."""
    source = node.args.get("source")
    if not isinstance(source, (exp.Table, exp.Subquery)):
        raise _malformed("a multi-table INSERT starts with FROM table [alias] or FROM (query) alias")
    inserts = []
    for item in node.expressions:
        if not isinstance(item, exp.Insert) or not isinstance(item.expression, exp.Select):
            raise _unsupported("this branch of a multi-table INSERT", "write FROM src INSERT … SELECT …")
        if item.expression.args.get("from_") is None:
            item = item.copy()
            item.expression.from_(source.copy(), copy=False)
        inserts.append(_insert(item))
    return MultiInsert(tuple(inserts))


def _insert(node: exp.Insert) -> Insert:
    target = node.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = tuple(c.name for c in target.expressions)
        target = target.this
    if not isinstance(target, exp.Table):
        raise _unsupported("INSERT OVERWRITE DIRECTORY" if node.args.get("overwrite") else "this INSERT target",
                           "insert into a table")
    source = node.expression
    if not isinstance(source, (exp.Values, exp.Query)):
        raise _malformed("INSERT needs VALUES (…) or a SELECT")
    partition: dict[str, str | None] | None = None
    spec = target.args.get("partition")
    if spec is not None:
        partition = {}
        for item in spec.expressions:
            if isinstance(item, exp.Column):
                partition[item.name] = None
            elif isinstance(item, exp.EQ) and isinstance(item.this, exp.Column):
                partition[item.this.name] = _text(item.expression)
            else:
                raise _malformed(f"partition spec items must be key='value' or key, found "
                                 f"{item.sql(dialect=acid.HiveAcid)!r}")
    return Insert(_table_name(target), source, partition, columns, overwrite=bool(node.args.get("overwrite")))


def _assignment(node: exp.Expr) -> tuple[str, exp.Expr]:
    if not isinstance(node, exp.EQ) or not isinstance(node.this, exp.Column):
        raise _malformed(f"SET items must be column = value, found {node.sql(dialect=acid.HiveAcid)!r}")
    return node.this.name, node.expression


def _where(node: exp.Expr) -> exp.Expr | None:
    where = node.args.get("where")
    return where.this if where is not None else None


def _merge(node: exp.Merge) -> Merge:
    target = node.this
    table = _table_name(target)
    target_alias = target.alias or table.table
    using = node.args.get("using")
    source: TableName | exp.Query
    if isinstance(using, exp.Table):
        source = _table_name(using)
        source_alias = using.alias or source.table
    elif isinstance(using, exp.Subquery):
        source = using.this
        if not using.alias:
            raise _malformed("MERGE … USING (subquery) needs an alias: USING (SELECT …) s")
        source_alias = using.alias
    else:
        raise _malformed("MERGE needs USING <table> or USING (<query>) <alias>")
    whens = node.args.get("whens")
    clauses = []
    for when in (whens.expressions if whens is not None else []):
        if when.args.get("source"):
            raise _unsupported("WHEN NOT MATCHED BY SOURCE", "Hive's MERGE has WHEN MATCHED and WHEN NOT MATCHED")
        then = when.args.get("then")
        condition = when.args.get("condition")
        if when.args.get("matched"):
            if isinstance(then, exp.Update):
                clauses.append(MergeWhen(True, condition, update=tuple(_assignment(a) for a in then.expressions)))
            elif isinstance(then, exp.Var) and then.name.upper() == "DELETE":
                clauses.append(MergeWhen(True, condition, delete=True))
            else:
                raise _malformed("WHEN MATCHED takes THEN UPDATE SET … or THEN DELETE")
        else:
            if not isinstance(then, exp.Insert) or not isinstance(then.expression, exp.Tuple):
                raise _malformed("WHEN NOT MATCHED takes THEN INSERT VALUES (…)")
            names = None
            if isinstance(then.this, (exp.Tuple, exp.Schema)):
                names = tuple(c.name for c in then.this.expressions)
            clauses.append(MergeWhen(False, condition, insert=tuple(then.expression.expressions),
                                     insert_columns=names))
    if not clauses:
        raise _malformed("MERGE needs at least one WHEN clause")
    return Merge(table, target_alias, source, source_alias, node.args["on"], tuple(clauses))


def _compact(table: TableName, partition: PartitionSpec | None, action: acid.Compact) -> AlterTableCompact:
    """COMPACT 'type' …; CLUSTERED INTO and ORDER BY only with 'rebalance' (Hive's AlterTableCompactAnalyzer)."""
    props = action.args.get("properties")
    kind = _text(action.this)
    buckets = action.args.get("buckets")
    number_of_buckets = _integer(buckets, "a bucket count") if buckets is not None else None
    order: list[tuple[str, bool]] = []
    if action.args.get("order") is not None:
        for item in action.args["order"].expressions:
            if not isinstance(item.this, exp.Column) or item.this.table:
                raise _unsupported(f"ORDER BY {item.this.sql(dialect=acid.HiveAcid)}",
                                   "a REBALANCE compaction is ordered by column names only")
            order.append((item.this.name, bool(item.args.get("desc"))))
    if (number_of_buckets is not None or order) and kind.strip().lower() != "rebalance":
        clause = "CLUSTERED INTO … BUCKETS" if number_of_buckets is not None else "ORDER BY"
        raise _malformed(f"{clause} is only allowed for a 'rebalance' compaction, not {kind!r}")
    if number_of_buckets is not None and number_of_buckets <= 0:
        raise _malformed(f"CLUSTERED INTO needs a positive number of buckets, not {number_of_buckets}")
    return AlterTableCompact(table, kind, partition=partition, wait=bool(action.args.get("wait")),
                             pool=_text(action.args.get("pool")),
                             properties=_properties(props.expressions) if props is not None else {},
                             number_of_buckets=number_of_buckets, order_by=tuple(order))


def _create(node: exp.Create) -> CreateTable | CreateDatabase | CreateTableLike | CreateTableAs:
    kind = (node.args.get("kind") or "").upper()
    if kind in ("DATABASE", "SCHEMA"):
        return _create_database(node)
    if kind != "TABLE":
        raise _unsupported(f"CREATE {kind}")
    if node.args.get("replace"):
        raise _unsupported("CREATE OR REPLACE TABLE")
    like = _create_like(node)
    if like is not None:
        return like
    if node.args.get("expression") is not None:
        if node.meta.get("transactional"):
            raise _unsupported("CREATE TRANSACTIONAL TABLE … AS SELECT", "use CREATE TABLE … AS SELECT: it makes a "
                               "full ACID table")
        return _create_as(node)
    created = _create_table(node)
    if node.meta.get("transactional"):  # Hive 4's CREATE TRANSACTIONAL TABLE: a full ACID table
        if created.properties.get("transactional", "true").strip().lower() != "true" or \
                created.properties.get("transactional_properties", "default").strip().lower() != "default":
            raise _malformed("CREATE TRANSACTIONAL TABLE makes a full ACID table; leave out 'transactional' and "
                             "'transactional_properties' or use CREATE TABLE")
        created = dataclasses.replace(created, properties={**created.properties, "transactional": "true"})
    return created


def _create_like(node: exp.Create) -> CreateTableLike | None:
    """CREATE TABLE [IF NOT EXISTS] t LIKE source [LOCATION 'path'] [TBLPROPERTIES (…)], or None for another
    CREATE TABLE."""
    props = node.args.get("properties")
    items = props.expressions if props is not None else []
    likes = [p for p in items if isinstance(p, exp.LikeProperty)]
    if not likes:
        return None
    location = None
    properties: dict[str, str] = {}
    for prop in items:
        if isinstance(prop, exp.LocationProperty):
            location = _text(prop.this)
        elif type(prop) is exp.Property:
            properties.update(_properties([prop]))
        elif not isinstance(prop, exp.LikeProperty):
            raise _unsupported(f"CREATE TABLE … LIKE … {prop.sql(dialect=acid.HiveAcid)}")
    if len(likes) != 1 or isinstance(node.this, exp.Schema):
        raise _malformed("CREATE TABLE t LIKE source takes one source table and no column list")
    return CreateTableLike(_table_name(node.this), _table_name(likes[0].this), properties=properties,
                           location=location, if_not_exists=bool(node.args.get("exists")))


def _create_as(node: exp.Create) -> CreateTableAs:
    """CREATE TABLE t [options] AS SELECT …: no column list, partitioning or bucketing (Hive's CTAS rules)."""
    query = node.expression
    if not isinstance(query, exp.Query):
        raise _malformed("CREATE TABLE … AS needs a SELECT")
    if isinstance(node.this, exp.Schema):
        raise _unsupported("CREATE TABLE t (columns) AS SELECT", "the columns come from the SELECT: leave them out")
    bare = node.copy()
    bare.set("expression", None)
    bare.set("this", exp.Schema(this=node.this.copy(), expressions=[]))
    shape = _create_table(bare)  # the options, checked as CREATE TABLE checks them
    if shape.external or shape.storage is not None:
        raise _unsupported("CREATE EXTERNAL TABLE / STORED AS TEXTFILE … AS SELECT",
                           "airflow-acid writes ORC tables only: create the table STORED AS ORC")
    if shape.partitioned_by or shape.bucket_by:
        raise _unsupported("CREATE TABLE … PARTITIONED BY / CLUSTERED BY … AS SELECT",
                           "create the table, then INSERT … SELECT into it")
    return CreateTableAs(shape.table, query, properties=shape.properties, location=shape.location,
                         if_not_exists=bool(node.args.get("exists")))


def _create_table(node: exp.Create) -> CreateTable:
    if not isinstance(node.this, exp.Schema):
        raise _malformed("CREATE TABLE needs a column list, e.g. CREATE TABLE t (id INT, name STRING)")
    table = _table_name(node.this.this)
    columns = tuple(_column(c) for c in node.this.expressions)
    partitioned_by: tuple[Column, ...] = ()
    bucket_by: tuple[str, ...] = ()
    num_buckets = None
    properties: dict[str, str] = {}
    location = None
    external = False
    stored_as = "ORC"
    serde_params: dict[str, str] | None = None
    properties_node = node.args.get("properties")
    for prop in (properties_node.expressions if properties_node else []):
        if isinstance(prop, exp.ExternalProperty):
            external = True
        elif isinstance(prop, exp.RowFormatDelimitedProperty):
            serde_params = _delimited_serde_params(prop)
        elif isinstance(prop, exp.RowFormatSerdeProperty) and _text(prop.this) == LAZY_SIMPLE_SERDE:
            serde_params = _properties(prop.args["serde_properties"].expressions) \
                if prop.args.get("serde_properties") else {}
        elif isinstance(prop, exp.PartitionedByProperty):
            partitioned_by = tuple(_column(c) for c in prop.this.expressions)
        elif isinstance(prop, exp.ClusteredByProperty):
            if prop.args.get("sorted_by"):
                raise _unsupported("CREATE TABLE … SORTED BY", "Hive does not allow sorted transactional tables")
            bucket_by = tuple(c.name for c in prop.expressions)
            num_buckets = _integer(prop.args.get("buckets"), "a bucket count")
        elif isinstance(prop, exp.RowFormatSerdeProperty) and _text(prop.this) == ORC_SERDE:
            continue  # SHOW CREATE TABLE's spelling of STORED AS ORC
        elif isinstance(prop, exp.FileFormatProperty) and isinstance(prop.this, exp.InputOutputFormat):
            formats = (_text(prop.this.args.get("input_format")), _text(prop.this.args.get("output_format")))
            if formats == (TEXT_INPUT_FORMAT, TEXT_OUTPUT_FORMAT):
                stored_as = "TEXTFILE"
            elif formats != (ORC_INPUT_FORMAT, ORC_OUTPUT_FORMAT):
                raise _unsupported(f"STORED AS INPUTFORMAT {formats[0]!r}", _STORED_AS_HINT)
        elif isinstance(prop, exp.FileFormatProperty):
            stored_as = prop.this.name.upper() if prop.this is not None else ""
            if stored_as not in ("ORC", "TEXTFILE"):
                raise _unsupported(f"STORED AS {stored_as or prop.sql(dialect=acid.HiveAcid)}", _STORED_AS_HINT)
        elif isinstance(prop, exp.LocationProperty):
            location = _text(prop.this)
        elif isinstance(prop, exp.SchemaCommentProperty):
            properties["comment"] = _text(prop.this)
        elif isinstance(prop, exp.TemporaryProperty):
            raise _unsupported("CREATE TEMPORARY TABLE", "session-scoped tables are not kept by airflow-acid: create "
                               "a table and DROP TABLE it at the end of the script")
        elif type(prop) is exp.Property:
            properties.update(_properties([prop]))
        else:
            raise _unsupported(f"CREATE TABLE … {prop.sql(dialect=acid.HiveAcid)}")
    storage = None
    if stored_as == "TEXTFILE" or serde_params is not None:
        if stored_as != "TEXTFILE":
            raise _unsupported("ROW FORMAT … STORED AS ORC", "ORC tables take no ROW FORMAT; text tables are STORED AS "
                               "TEXTFILE")
        if bucket_by:
            raise _unsupported("CLUSTERED BY on a text table", "airflow-acid buckets only ORC tables")
        # Hive without ROW FORMAT: LazySimpleSerDe with serialization.format=1 (field delimiter \001)
        storage = TableStorage.text(serde_params if serde_params is not None else {"serialization.format": "1"})
    return CreateTable(table, columns, partitioned_by=partitioned_by, bucket_by=bucket_by, num_buckets=num_buckets,
                       properties=properties, location=location, if_not_exists=bool(node.args.get("exists")),
                       external=external, storage=storage)


_STORED_AS_HINT = "airflow-acid creates ORC tables (STORED AS ORC) and plain text tables (STORED AS TEXTFILE)"

_DELIMITED_KEYS = {"fields": ("field.delim", "serialization.format"), "escaped": ("escape.delim",),
                   "collection_items": ("collection.delim",), "map_keys": ("mapkey.delim",),
                   "lines": ("line.delim",), "null": ("serialization.null.format",)}
"""ROW FORMAT DELIMITED's clauses → the LazySimpleSerDe parameters Hive records for them."""


def _delimited_serde_params(prop: exp.RowFormatDelimitedProperty) -> dict[str, str]:
    """ROW FORMAT DELIMITED FIELDS TERMINATED BY … [ESCAPED BY …] [LINES TERMINATED BY …] [NULL DEFINED AS …] as
    Hive's SERDE_PARAMS (without FIELDS TERMINATED BY: ``serialization.format=1``, Hive's \\001)."""
    params: dict[str, str] = {}
    for arg, keys in _DELIMITED_KEYS.items():
        value = _text(prop.args.get(arg))
        if value is not None:
            params.update(dict.fromkeys(keys, value))
    if "line.delim" in params and params["line.delim"] != "\n":
        raise _unsupported("LINES TERMINATED BY other than '\\n'", "Hive supports only '\\n' as line delimiter")
    params.setdefault("serialization.format", "1")
    return params


# --- pieces -------------------------------------------------------------------------------------------------------


def _create_database(node: exp.Create) -> CreateDatabase:
    """CREATE DATABASE [IF NOT EXISTS] db [COMMENT 'c'] [LOCATION 'path'] (Hive's DBPROPERTIES are not kept)."""
    comment = location = None
    properties_node = node.args.get("properties")
    for prop in (properties_node.expressions if properties_node else []):
        if isinstance(prop, exp.LocationProperty):
            location = _text(prop.this)
        elif isinstance(prop, exp.SchemaCommentProperty):
            comment = _text(prop.this)
        else:
            raise _unsupported(f"CREATE DATABASE … {prop.sql(dialect=acid.HiveAcid)}")
    return CreateDatabase(_database_name(node.this), if_not_exists=bool(node.args.get("exists")), comment=comment,
                          location=location)


def _database_name(node: exp.Expr | None) -> str:
    """A database name: sqlglot reads ``db`` as a table named db (CREATE, USE) or a table's database (DROP SCHEMA)."""
    if isinstance(node, exp.Table) and not node.args.get("catalog") and bool(node.name) != bool(node.db):
        return node.name or node.db
    if isinstance(node, (exp.Identifier, exp.Var)) and node.name:
        return node.name
    raise _malformed(f"expected a database name, found {node.sql(dialect=acid.HiveAcid) if node else 'nothing'!r}")


def _required_partition(node: exp.Expr) -> PartitionSpec:
    spec = _partition(node)
    if not spec:
        raise _malformed("PARTITION needs key='value' pairs, e.g. PARTITION (ds='2024-01-01')")
    return spec


def _drop(node: exp.Drop) -> DropTable | DropDatabase:
    kind = (node.args.get("kind") or "").upper()
    names = node.args.get("tables") or []
    if kind not in ("TABLE", "DATABASE", "SCHEMA"):
        raise _unsupported(f"DROP {kind}")
    if len(names) != 1:
        raise _unsupported(f"DROP {kind} of several objects", "drop one per statement")
    if kind == "TABLE":
        if node.args.get("cascade") or node.args.get("temporary") or node.args.get("materialized"):
            raise _unsupported("this DROP TABLE", "Hive's is DROP TABLE [IF EXISTS] t [PURGE]")
        return DropTable(_table_name(names[0]), if_exists=bool(node.args.get("exists")),
                         purge=bool(node.args.get("purge")))
    return DropDatabase(_database_name(names[0]), if_exists=bool(node.args.get("exists")),
                        cascade=bool(node.args.get("cascade")))


@overload

def _table_name(node: exp.Expr) -> TableName: ...
@overload
def _table_name(node: None) -> None: ...
@overload
def _table_name(node: exp.Expr | None) -> TableName | None: ...


def _table_name(node: exp.Expr | None) -> TableName | None:
    if node is None:
        return None
    if not isinstance(node, exp.Table) or not node.name:
        raise _malformed(f"expected a table name ([database.]table), found {node.sql()!r}")
    if node.args.get("catalog"):
        raise _malformed(f"table name {node.sql(dialect=acid.HiveAcid)!r} has too many parts; use "
                                   "[database.]table")
    return TableName(node.name, node.db or None)


def _partition(node: exp.Expr | None) -> PartitionSpec | None:
    if node is None:
        return None
    spec: PartitionSpec = {}
    for item in node.expressions:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise _malformed(f"partition spec items must be key='value', found "
                                       f"{item.sql(dialect=acid.HiveAcid)!r}")
        spec[item.this.name] = _text(item.expression)
    return spec


def _column(node: exp.Expr) -> Column:
    if not isinstance(node, exp.ColumnDef) or node.args.get("kind") is None:
        raise _malformed(f"column {node.sql(dialect=acid.HiveAcid)!r} needs a name and a type, e.g. "
                                   "id INT")
    comment = default = None
    for constraint in node.args.get("constraints") or []:
        if isinstance(constraint.args.get("kind"), exp.CommentColumnConstraint):
            comment = _text(constraint.args["kind"].this)
        elif isinstance(constraint.args.get("kind"), exp.DefaultColumnConstraint):
            default = _default_value(node.name, constraint.args["kind"].this)
        else:
            raise _unsupported(f"column constraint {constraint.sql(dialect=acid.HiveAcid)!r}")
    return Column(node.name, node.args["kind"].sql(dialect=acid.HiveAcid), comment, default)


MAX_DEFAULT_LENGTH = 255
"""Hive's limit on a DEFAULT value's text."""


def _default_value(column: str, value: exp.Expr) -> str:
    """A column DEFAULT as Hive stores it (its text): a constant or a function of constants (CURRENT_DATE,
    CURRENT_TIMESTAMP, CURRENT_USER()), as Hive allows."""
    text = value.sql(dialect=acid.HiveAcid)
    if any(isinstance(n, (exp.Column, exp.Query, exp.Subquery, exp.Star)) for n in value.walk()):
        raise _malformed(f"Invalid Default value: {text} for column {column}. DEFAULT only allows constant or function "
                         "expressions")
    if len(text) > MAX_DEFAULT_LENGTH:
        raise _malformed(f"Invalid Default value: {text[:40]}… for column {column}: longer than "
                         f"{MAX_DEFAULT_LENGTH} characters (Hive's limit)")
    return text


def _properties(items: list[exp.Expr]) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in items:
        if type(item) is not exp.Property:
            raise _malformed(f"expected 'key'='value' properties, found {item.sql(dialect=acid.HiveAcid)!r}")
        key = item.this.name if isinstance(item.this, (exp.Literal, exp.Identifier, exp.Var)) else None
        if not key:
            raise _malformed(f"property names are quoted strings: {item.sql(dialect=acid.HiveAcid)!r}")
        value = _text(item.args.get("value"))
        if value is None:
            raise _malformed(f"property {key!r} has no value: {item.sql(dialect=acid.HiveAcid)!r}")
        result[key] = value
    return result


@overload
def _text(node: exp.Expr) -> str: ...
@overload
def _text(node: None) -> None: ...
@overload
def _text(node: exp.Expr | None) -> str | None: ...


def _text(node: exp.Expr | None) -> str | None:
    """A literal's value as text (TRUE/FALSE as true/false); None for a missing node."""
    if node is None:
        return None
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return f"-{node.this.this}"
    if isinstance(node, (exp.Literal, exp.Identifier, exp.Var)):
        return str(node.this)
    raise _malformed(f"expected a literal value, found {node.sql(dialect=acid.HiveAcid)!r}")


def _integer(node: exp.Expr | None, what: str) -> int:
    if not isinstance(node, exp.Literal) or node.is_string:
        raise _malformed(f"expected {what}, found {node.sql() if node is not None else 'nothing'!r}")
    try:
        return int(node.this)
    except ValueError:
        raise _malformed(f"expected {what} (a whole number), found {node.this!r}") from None


__all__ = ["STATEMENT_WORDS", "parse_script", "parse_statement", "parse_statements"]
