#include "sqlite_options.h"

#include <sqlite3.h>

int sqlite_options_persist_wal(void *db) {
    int persist = 1;
    return sqlite3_file_control((sqlite3 *)db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
}

int sqlite_options_no_checkpoint_on_close(void *db) {
    return sqlite3_db_config((sqlite3 *)db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}
