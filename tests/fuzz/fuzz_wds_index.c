/* WebDataset: DALI's index files ("v1.2 N" then one line per sample) checked against an
 * archive of a fixed size. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "io/tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = fuzz_memfd(data, size);
  if (fd < 0) return 0;
  char path[64];
  fuzz_fd_path(fd, path, sizeof path);
  stk__wds_index idx;
  memset(&idx, 0, sizeof idx);
  if (stk__wds_index_load(&idx, path, "fuzz.tar", 1 << 20) == STK_OK) {
    for (int64_t k = 0; k < idx.num_comps; k++)
      if (idx.comps[k].offset < 0 || idx.comps[k].offset + idx.comps[k].size > (1 << 20))
        __builtin_trap();
    stk__wds_index_free(&idx);
  }
  close(fd);
  return 0;
}
