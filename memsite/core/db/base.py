"""SQLite backend that loads sqlite-vec into every connection.

The stdlib sqlite3 on many Pythons cannot load extensions, so every connection (web,
Huey consumer, management commands, tests) is opened with sqlean's driver instead, which
bundles a modern SQLite with FTS5 and `enable_load_extension`. Prepared in one place.
"""

import datetime
import decimal

import sqlean
import sqlean.dbapi2 as Database
import sqlite_vec
from django.db import OperationalError
from django.db.backends.sqlite3 import _functions
from django.db.backends.sqlite3 import base as sqlite3_base
from django.utils.asyncio import async_unsafe

from memsite.core.db import writelock
from memsite.core.db.writelock import WriteLock


def _register_adapters() -> None:
    """Django registers these on the stdlib module; sqlean's driver needs its own copies."""
    Database.register_adapter(decimal.Decimal, str)
    Database.register_adapter(datetime.date, lambda v: v.isoformat())
    Database.register_adapter(datetime.datetime, lambda v: v.isoformat(" "))
    Database.register_converter("bool", b"1".__eq__)
    Database.register_converter("date", sqlite3_base.decoder(sqlite3_base.parse_date))
    Database.register_converter("time", sqlite3_base.decoder(sqlite3_base.parse_time))
    Database.register_converter("datetime", sqlite3_base.decoder(sqlite3_base.parse_datetime))
    Database.register_converter("timestamp", sqlite3_base.decoder(sqlite3_base.parse_datetime))


_register_adapters()


def load_vec(conn) -> None:
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


class SQLiteCursorWrapper(Database.Cursor):
    """Django's cursor wrapper rebuilt on the driver's Cursor (cursor(factory=) checks the type)."""

    def execute(self, query, params=None):
        if params is None:
            return super().execute(query)
        param_names = list(params) if isinstance(params, dict) else None
        query = self.convert_query(query, param_names=param_names)
        return super().execute(query, params)

    def executemany(self, query, param_list):
        peekable, param_list = sqlite3_base.tee(iter(param_list))
        if (params := next(peekable, None)) and isinstance(params, dict):
            param_names = list(params)
        else:
            param_names = None
        query = self.convert_query(query, param_names=param_names)
        return super().executemany(query, param_list)

    convert_query = sqlite3_base.SQLiteCursorWrapper.convert_query


class DatabaseWrapper(sqlite3_base.DatabaseWrapper):
    Database = Database
    _write_lock: WriteLock | None = None

    @async_unsafe
    def get_new_connection(self, conn_params):
        conn = Database.connect(**conn_params)
        self._write_lock = writelock.for_database(conn_params["database"])
        load_vec(conn)
        _functions.register(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA legacy_alter_table = OFF")
        for init_command in self.init_commands:
            if init_command := init_command.strip():
                conn.execute(init_command)
        return conn

    def create_cursor(self, name=None):
        return self.connection.cursor(factory=SQLiteCursorWrapper)

    # Writers queue on a file lock before BEGIN IMMEDIATE (memsite/db/writelock.py).
    def _start_transaction_under_autocommit(self):
        if self._write_lock is not None:
            try:
                self._write_lock.acquire()
            except writelock.Timeout as exc:
                raise OperationalError(str(exc)) from exc  # Django's, as callers expect
        try:
            super()._start_transaction_under_autocommit()
        except Exception:
            self._release_write_lock()
            raise

    def _commit(self):
        try:
            super()._commit()
        finally:
            self._release_write_lock()

    def _rollback(self):
        try:
            super()._rollback()
        finally:
            self._release_write_lock()

    def _close(self):
        try:
            super()._close()
        finally:
            if self._write_lock is not None:
                self._write_lock.close()

    def _release_write_lock(self):
        if self._write_lock is not None:
            self._write_lock.release()


__all__ = ["DatabaseWrapper", "load_vec", "sqlean"]
