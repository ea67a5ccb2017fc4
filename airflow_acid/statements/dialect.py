"""sqlglot's Hive dialect extended with Hive's ACID statements, which sqlglot only knows as opaque commands:
SHOW COMPACTIONS / TRANSACTIONS / LOCKS, ALTER TABLE … COMPACT, ALTER TABLE … UNSET TBLPROPERTIES and
ABORT TRANSACTIONS / COMPACTIONS (grammar as in Hive 4's HiveParser.g / AlterClauseParser.g, docs/hive-acid.md#commands).

The new statements parse into the small syntax nodes below; CREATE TABLE, ALTER TABLE … SET TBLPROPERTIES and
DESCRIBE keep sqlglot's own nodes. :mod:`airflow_acid.statements.parse` turns both into typed statements.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType
from sqlglot.trie import new_trie

from airflow_acid.client.hive_dialect import Hive4, Hive4Parser

# --- syntax nodes ------------------------------------------------------------------------------------------------


class ShowCompactions(exp.Expression):
    """SHOW COMPACTIONS [COMPACTIONID=n | DATABASE db | table [PARTITION (…)]] [POOL 'p'] [TYPE 't'] [STATUS 's']
    [ORDER BY …] [LIMIT n]."""

    arg_types = {"id": False, "database": False, "table": False, "partition": False, "pool": False, "type": False,
                 "status": False, "order": False, "limit": False}


class ShowTransactions(exp.Expression):
    """SHOW TRANSACTIONS."""

    arg_types: ClassVar[dict[str, bool]] = {}


class ShowLocks(exp.Expression):
    """SHOW LOCKS [EXTENDED] [DATABASE db | table [PARTITION (…)]] [EXTENDED]."""

    arg_types = {"database": False, "table": False, "partition": False, "extended": False}


class ShowDatabases(exp.Expression):
    """SHOW (DATABASES|SCHEMAS) [LIKE 'pattern']."""

    arg_types = {"pattern": False}


class ShowTables(exp.Expression):
    """SHOW TABLES [(IN|FROM) db] [[LIKE] 'pattern']."""

    arg_types = {"database": False, "pattern": False, "views": False}


class ShowPartitions(exp.Expression):
    """SHOW PARTITIONS t [PARTITION (…)]."""

    arg_types = {"this": True, "partition": False}


class ShowTblProperties(exp.Expression):
    """SHOW TBLPROPERTIES t [('key')]."""

    arg_types = {"this": True, "key": False}


class ShowCreateTable(exp.Expression):
    """SHOW CREATE TABLE t."""

    arg_types = {"this": True}


class AddPartitions(exp.Expression):
    """The ALTER TABLE action ADD [IF NOT EXISTS] PARTITION (…) [LOCATION 'path'] [PARTITION (…) …]; each
    expression an exp.Partition with an optional ``location`` meta."""

    arg_types = {"expressions": True, "exists": False, "locations": False}


class DropPartitions(exp.Expression):
    """The ALTER TABLE action DROP [IF EXISTS] PARTITION (…)[, PARTITION (…) …] [PURGE]."""

    arg_types = {"expressions": True, "exists": False, "purge": False}


class Compact(exp.Expression):
    """The ALTER TABLE action COMPACT 'type' [CLUSTERED INTO n BUCKETS] [AND WAIT] [POOL 'p']
    [WITH OVERWRITE TBLPROPERTIES (…)] [ORDER BY …]."""

    arg_types = {"this": True, "wait": False, "pool": False, "properties": False, "buckets": False, "order": False}


class UnsetProperties(exp.Expression):
    """The ALTER TABLE action UNSET TBLPROPERTIES [IF EXISTS] ('k', …)."""

    arg_types = {"expressions": True, "exists": False}


class ChangeColumn(exp.Expression):
    """The ALTER TABLE action CHANGE [COLUMN] old new type [COMMENT 'c'] [FIRST | AFTER col] [CASCADE | RESTRICT]."""

    arg_types = {"this": True, "rename_to": True, "dtype": True, "comment": False, "position": False,
                 "cascade": False}


class AbortTransactions(exp.Expression):
    """ABORT TRANSACTIONS id [id …]."""

    arg_types = {"expressions": True}


class AbortCompactions(exp.Expression):
    """ABORT COMPACTIONS id [id …]."""

    arg_types = {"expressions": True}


_SHOW_COMPACTIONS_FILTERS = ("POOL", "TYPE", "STATUS", "ORDER", "LIMIT")


class AcidHiveParser(Hive4Parser):
    """Hive's parser plus the ACID statements."""

    STATEMENT_PARSERS = {**Hive4Parser.STATEMENT_PARSERS, TokenType.SHOW: lambda self: self._parse_show()}

    def raise_error(self, message: str, token: Token | None = None) -> None:
        """sqlglot's error, plus where it points (``offset`` of the highlighted token) and whether the statement
        ended before it made sense (``at_end``: the highlight is then the last token taken), for Hive's
        ``line L:C … near …`` message."""
        at_end = not token and not self._curr  # sqlglot's end-of-input token is falsy
        chosen = token or self._curr or self._prev
        marks = {"at_end": at_end, "offset": chosen.start if chosen else 0}
        try:
            if not token:
                super().raise_error(message)
            else:
                super().raise_error(message, token)
        except ParseError as error:
            error.errors[0].update(marks)
            raise
        if self.errors:
            self.errors[-1].errors[0].update(marks)
    SHOW_PARSERS = {
        **Hive4Parser.SHOW_PARSERS,
        "COMPACTIONS": lambda self: self._parse_show_compactions(),
        "TRANSACTIONS": lambda self: self.expression(ShowTransactions()),
        "LOCKS": lambda self: self._parse_show_locks(),
        "DATABASES": lambda self: self._parse_show_databases(),
        "SCHEMAS": lambda self: self._parse_show_databases(),
        "TABLES": lambda self: self._parse_show_tables(),
        "VIEWS": lambda self: self._parse_show_tables(views=True),
        "PARTITIONS": lambda self: self.expression(ShowPartitions(
            this=self._required(self._parse_table_parts, "a table name"), partition=self._parse_partition())),
        "TBLPROPERTIES": lambda self: self._parse_show_tblproperties(),
        "CREATE TABLE": lambda self: self.expression(ShowCreateTable(
            this=self._required(self._parse_table_parts, "a table name"))),
    }
    SHOW_TRIE = new_trie(key.split(" ") for key in SHOW_PARSERS)
    ALTER_PARSERS = {
        **Hive4Parser.ALTER_PARSERS,
        "COMPACT": lambda self: self._parse_compact(),
        "UNSET": lambda self: self._parse_unset_properties(),
        "CHANGE": lambda self: self._parse_change_column(),
        "ADD": lambda self: self._parse_add_partitions(),
        "DROP": lambda self: self._parse_drop_partitions(),
    }

    def _parse_create(self) -> exp.Create | exp.Command:
        """Hive 4's CREATE TRANSACTIONAL TABLE: a CREATE TABLE marked ``meta["transactional"]`` (a full ACID table)."""
        transactional = bool(self._curr and self._curr.text.upper() == "TRANSACTIONAL" and self._next
                             and self._next.token_type is TokenType.TABLE)
        if transactional:
            self._advance()
        node = super()._parse_create()
        if transactional:
            node.meta["transactional"] = True
        return node

    def _parse_statement(self) -> exp.Expr | None:
        if self._match_text_seq("ABORT"):
            return self._parse_abort()
        return super()._parse_statement()

    # --- SHOW ----------------------------------------------------------------------------------------------------

    def _parse_show_compactions(self) -> ShowCompactions:
        if self._match_text_seq("COMPACTIONID"):
            if not self._match(TokenType.EQ):
                self.raise_error("Expecting '=' after COMPACTIONID")
            return self.expression(ShowCompactions(id=self._required(self._parse_number, "a compaction id")))
        args: dict[str, object] = {}
        if self._match_texts(("DATABASE", "SCHEMA")):
            args["database"] = self._required(self._parse_id_var, "a database name")
        elif self._curr and self._curr.text.upper() not in _SHOW_COMPACTIONS_FILTERS \
                and self._curr.token_type not in (TokenType.SEMICOLON, TokenType.ORDER_BY, TokenType.LIMIT):
            if self._curr.token_type not in self.ID_VAR_TOKENS:
                self.raise_error("Expecting COMPACTIONID=<id>, DATABASE <name>, a table name, POOL, TYPE, STATUS, "
                                 "ORDER BY or LIMIT")
            args["table"] = self._required(self._parse_table_parts, "a table name")
            args["partition"] = self._parse_partition()
        for keyword, key in (("POOL", "pool"), ("TYPE", "type"), ("STATUS", "status")):
            if self._match_text_seq(keyword):
                args[key] = self._quoted(f"Expecting the {key} in quotes after {keyword}")
        args["order"] = self._parse_order()
        args["limit"] = self._parse_limit()
        return self.expression(ShowCompactions(**args))

    def _parse_show_locks(self) -> ShowLocks:
        extended = self._match_text_seq("EXTENDED")
        args: dict[str, object] = {}
        if self._match_texts(("DATABASE", "SCHEMA")):
            args["database"] = self._required(self._parse_id_var, "a database name")
        elif self._curr and self._curr.token_type is not TokenType.SEMICOLON and self._curr.text.upper() != "EXTENDED":
            args["table"] = self._required(self._parse_table_parts, "a table name")
            args["partition"] = self._parse_partition()
        extended = self._match_text_seq("EXTENDED") or extended
        return self.expression(ShowLocks(extended=extended, **args))

    def _parse_show_databases(self) -> ShowDatabases:
        pattern = self._quoted("Expecting the pattern in quotes after LIKE") if self._match(TokenType.LIKE) else None
        return self.expression(ShowDatabases(pattern=pattern))

    def _parse_show_tables(self, views: bool = False) -> ShowTables:
        database = None
        if self._match_texts(("IN", "FROM")):
            database = self._required(self._parse_id_var, "a database name")
        pattern = None
        if self._match(TokenType.LIKE) or self._match(TokenType.STRING, advance=False):
            pattern = self._quoted("Expecting the pattern in quotes")
        return self.expression(ShowTables(database=database, pattern=pattern, views=views or None))

    def _parse_show_tblproperties(self) -> ShowTblProperties:
        first = self._required(self._parse_id_var, "a table name")  # not _parse_table_parts: t('k') is no call
        if self._match(TokenType.DOT):
            second = self._required(self._parse_id_var, "a table name after the database")
            table = exp.Table(this=second, db=first)
        else:
            table = exp.Table(this=first)
        key = None
        if self._match(TokenType.L_PAREN):
            key = self._quoted("Expecting the property name in quotes")
            if not self._match(TokenType.R_PAREN):
                self.raise_error("Expecting ')'")
        return self.expression(ShowTblProperties(this=table, key=key))

    # --- ALTER TABLE actions -------------------------------------------------------------------------------------

    def _parse_compact(self) -> Compact:
        kind = self._quoted("Expecting the compaction type in quotes after COMPACT: 'major', 'minor' or 'rebalance'")
        args: dict[str, object] = {}
        while self._curr and self._curr.token_type is not TokenType.SEMICOLON:
            if "wait" not in args and self._match_text_seq("AND", "WAIT"):
                args["wait"] = True
            elif "pool" not in args and self._match_text_seq("POOL"):
                args["pool"] = self._quoted("Expecting the pool name in quotes after POOL")
            elif "properties" not in args and self._match_text_seq("WITH", "OVERWRITE", "TBLPROPERTIES"):
                args["properties"] = self.expression(exp.Properties(expressions=self._parse_wrapped_properties()))
            elif "buckets" not in args and self._match_text_seq("CLUSTERED", "INTO"):
                args["buckets"] = self._required(self._parse_number, "a bucket count after CLUSTERED INTO")
                if not self._match_text_seq("BUCKETS"):
                    self.raise_error("Expecting BUCKETS after CLUSTERED INTO <n>")
            elif "order" not in args and self._match(TokenType.ORDER_BY, advance=False):
                args["order"] = self._parse_order()
            else:
                self.raise_error("Expecting CLUSTERED INTO <n> BUCKETS, AND WAIT, POOL '<name>', WITH OVERWRITE "
                                 f"TBLPROPERTIES (…) or ORDER BY … after COMPACT '{kind.name}'")
        return self.expression(Compact(this=kind, **args))

    def _parse_add_partitions(self) -> list[exp.Expr]:
        index = self._index
        exists = self._parse_exists(not_=True)
        if not self._match(TokenType.PARTITION, advance=False):
            self._retreat(index)
            return self._parse_alter_table_add()
        partitions: list[exp.Expr] = []
        locations: list[exp.Expr] = []
        while self._match(TokenType.PARTITION, advance=False):
            partitions.append(self._required(self._parse_partition, "PARTITION (key='value', …)"))
            located = self._match_text_seq("LOCATION")
            locations.append(self._quoted("Expecting the location in quotes after LOCATION") if located
                             else exp.Null())
        return [self.expression(AddPartitions(expressions=partitions, exists=exists, locations=locations))]

    def _parse_drop_partitions(self) -> list[exp.Expr]:
        index = self._index
        exists = self._parse_exists()
        if not self._match(TokenType.PARTITION, advance=False):
            self._retreat(index)
            return self._parse_alter_table_drop()
        partitions = self._parse_csv(lambda: self._required(self._parse_partition, "PARTITION (key='value', …)"))
        purge = self._match_text_seq("PURGE")
        return [self.expression(DropPartitions(expressions=partitions, exists=exists, purge=purge))]

    def _parse_change_column(self) -> ChangeColumn:
        self._match(TokenType.COLUMN)
        this = self._required(lambda: self._parse_id_var(any_token=False), "the column to change after CHANGE")
        new = self._required(lambda: self._parse_id_var(any_token=False), "the new column name")
        dtype = self._required(lambda: self._parse_types(schema=True), "the column's type")
        comment = self._parse_string() if self._match(TokenType.COMMENT) else None
        position: exp.Expr | None = None
        if self._match_text_seq("FIRST"):
            position = exp.Var(this="FIRST")
        elif self._match_text_seq("AFTER"):
            after = self._required(lambda: self._parse_id_var(any_token=False), "a column name after AFTER")
            position = exp.Var(this=f"AFTER {after.name}")
        cascade = self._match_text_seq("CASCADE")
        if not cascade:
            self._match_text_seq("RESTRICT")
        return self.expression(ChangeColumn(this=this, rename_to=new, dtype=dtype, comment=comment,
                                            position=position, cascade=cascade))

    def _parse_unset_properties(self) -> UnsetProperties:
        if not self._match_text_seq("TBLPROPERTIES"):
            self.raise_error("Expecting TBLPROPERTIES after UNSET")
        exists = self._match_text_seq("IF", "EXISTS")
        keys = self._parse_wrapped_csv(lambda: self._quoted("Expecting property names in quotes"))
        return self.expression(UnsetProperties(expressions=keys, exists=exists))

    # --- ABORT ---------------------------------------------------------------------------------------------------

    def _parse_abort(self) -> exp.Expr:
        if self._match_text_seq("TRANSACTIONS"):
            node: type[exp.Expression] = AbortTransactions
        elif self._match_text_seq("COMPACTIONS"):
            node = AbortCompactions
        else:
            self.raise_error("Expecting TRANSACTIONS or COMPACTIONS after ABORT")
        ids = []
        while self._match(TokenType.NUMBER, advance=False):
            ids.append(self._parse_number())
            self._match(TokenType.COMMA)
        if not ids:
            self.raise_error("Expecting one or more ids")
        return self.expression(node(expressions=ids))

    # --- helpers -------------------------------------------------------------------------------------------------

    def _required(self, parse: Callable[[], exp.Expr | None], what: str) -> exp.Expr:
        node = parse()
        if node is None:
            self.raise_error(f"Expecting {what}")
        assert node is not None, "raise_error raises: sqlglot.parse runs at ErrorLevel.IMMEDIATE"
        return node

    def _quoted(self, message: str) -> exp.Literal:
        node = self._parse_string()
        if not isinstance(node, exp.Literal) or not node.is_string:
            self.raise_error(message)
        assert isinstance(node, exp.Literal), "raise_error raises: sqlglot.parse runs at ErrorLevel.IMMEDIATE"
        return node


class HiveAcid(Hive4):
    """The Hive (4) dialect with the ACID statements (SHOW is parsed as a statement, not swallowed as a command)."""

    class Tokenizer(Hive4.Tokenizer):
        COMMANDS = Hive4.Tokenizer.COMMANDS - {TokenType.SHOW}

    Parser = AcidHiveParser
