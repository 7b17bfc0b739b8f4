/* Tar / WebDataset: the member scanner (USTAR, GNU long names, pax headers, base-256
 * sizes) and the grouping of members into samples, on an archive held in memory. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "io/tar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = fuzz_memfd(data, size);
  if (fd < 0) return 0;
  stk__wds_index idx;
  memset(&idx, 0, sizeof idx);
  if (stk__wds_index_build(&idx, fd, "fuzz.tar", (int64_t)size) == STK_OK) {
    for (int64_t k = 0; k < idx.num_comps; k++) /* every member lies inside the archive */
      if (idx.comps[k].offset < 0 || idx.comps[k].size < 0 ||
          idx.comps[k].offset + idx.comps[k].size > (int64_t)size)
        __builtin_trap();
    stk__wds_index_free(&idx);
  }
  close(fd);
  return 0;
}
