/*
 * LMDB through liblmdb.so.0, loaded at run time (Debian's liblmdb0): the few calls the
 * Caffe reader needs, declared here from LMDB's public API, so that building stoker does
 * not need the LMDB headers and a machine without the library only loses readers.caffe
 * (with an error saying what to install).
 */
#ifndef STOKER_IO_LMDB_DL_H
#define STOKER_IO_LMDB_DL_H

#include "../core/core.h"

typedef struct stk__mdb_env stk__mdb_env;
typedef struct stk__mdb_txn stk__mdb_txn;
typedef struct stk__mdb_cursor stk__mdb_cursor;
typedef unsigned int stk__mdb_dbi;
typedef struct {
  size_t mv_size;
  void *mv_data;
} stk__mdb_val;

/* LMDB's constants (lmdb.h). */
#define STK__MDB_NOSUBDIR 0x4000u
#define STK__MDB_RDONLY   0x20000u
#define STK__MDB_NOTLS    0x200000u
#define STK__MDB_NOLOCK   0x400000u
#define STK__MDB_FIRST    0
#define STK__MDB_NEXT     8
#define STK__MDB_NOTFOUND (-30798)

typedef struct {
  int (*env_create)(stk__mdb_env **env);
  int (*env_open)(stk__mdb_env *env, const char *path, unsigned int flags, unsigned int mode);
  void (*env_close)(stk__mdb_env *env);
  int (*txn_begin)(stk__mdb_env *env, stk__mdb_txn *parent, unsigned int flags, stk__mdb_txn **txn);
  void (*txn_abort)(stk__mdb_txn *txn);
  int (*dbi_open)(stk__mdb_txn *txn, const char *name, unsigned int flags, stk__mdb_dbi *dbi);
  int (*get)(stk__mdb_txn *txn, stk__mdb_dbi dbi, stk__mdb_val *key, stk__mdb_val *data);
  int (*cursor_open)(stk__mdb_txn *txn, stk__mdb_dbi dbi, stk__mdb_cursor **cursor);
  void (*cursor_close)(stk__mdb_cursor *cursor);
  int (*cursor_get)(stk__mdb_cursor *cursor, stk__mdb_val *key, stk__mdb_val *data, int op);
  char *(*strerror)(int err);
} stk__lmdb_api;

/* The loaded library (loaded once, kept for the process), or NULL with an error naming
 * the package to install. Thread-safe. */
const stk__lmdb_api *stk__lmdb(void);

#endif /* STOKER_IO_LMDB_DL_H */
