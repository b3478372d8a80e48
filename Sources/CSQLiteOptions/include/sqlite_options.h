#ifndef CSQLITEOPTIONS_SQLITE_OPTIONS_H
#define CSQLITEOPTIONS_SQLITE_OPTIONS_H

/// Per-connection SQLite settings Swift cannot reach (sqlite3_db_config is variadic). `db` is a `sqlite3 *`.

/// Keeps the write-ahead log and shared-memory files when the last connection closes, so the next process does
/// not create (and sync) a new log. Returns an SQLite result code.
int sqlite_options_persist_wal(void *db);

/// Leaves checkpointing to the automatic checkpoints during commits instead of running one (two syncs) when the
/// last connection closes. Returns an SQLite result code.
int sqlite_options_no_checkpoint_on_close(void *db);

#endif
