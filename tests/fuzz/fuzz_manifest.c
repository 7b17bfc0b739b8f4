/* NeMo ASR manifests (JSON Lines) read from the input as a file, with and without a
 * duration window: every kept entry must have a path and a text. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "io/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = fuzz_memfd(data, size);
  if (fd < 0) return 0;
  char path[64];
  fuzz_fd_path(fd, path, sizeof path);
  stk__manifest m;
  memset(&m, 0, sizeof m);
  if (stk__manifest_load(&m, path, size & 1 ? 0.5 : 0.0, size & 2 ? 10.0 : 0.0, "fuzz") == STK_OK)
    for (int64_t i = 0; i < m.count; i++)
      if (!m.entries[i].path || !m.entries[i].text) __builtin_trap();
  stk__manifest_free(&m);
  close(fd);
  return 0;
}
