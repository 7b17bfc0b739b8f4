/* Loading liblmdb.so.0 (lmdb_dl.h). */
#include "lmdb_dl.h"

#include <dlfcn.h>
#include <pthread.h>

static stk__lmdb_api api;
static const char *load_error;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
  void *h = dlopen("liblmdb.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    load_error = "liblmdb.so.0 not found (Debian/Ubuntu: apt install liblmdb0)";
    return;
  }
  struct {
    const char *name;
    void **slot;
  } syms[] = {
      {"mdb_env_create", (void **)&api.env_create},
      {"mdb_env_open", (void **)&api.env_open},
      {"mdb_env_close", (void **)&api.env_close},
      {"mdb_txn_begin", (void **)&api.txn_begin},
      {"mdb_txn_abort", (void **)&api.txn_abort},
      {"mdb_dbi_open", (void **)&api.dbi_open},
      {"mdb_get", (void **)&api.get},
      {"mdb_cursor_open", (void **)&api.cursor_open},
      {"mdb_cursor_close", (void **)&api.cursor_close},
      {"mdb_cursor_get", (void **)&api.cursor_get},
      {"mdb_strerror", (void **)&api.strerror},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(h, syms[i].name);
    if (!*syms[i].slot) {
      load_error = "liblmdb.so.0 lacks an expected symbol";
      return;
    }
  }
}

const stk__lmdb_api *stk__lmdb(void) {
  pthread_once(&once, load);
  if (load_error) {
    STK_FAIL(STK_ERR_UNSUPPORTED, "%s", load_error);
    return NULL;
  }
  return &api;
}
