/* List files: "path label" lines, paired "path path label" lines and paths-only lists,
 * each read from the input as a file, relative to a root and to the list's folder. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "io/file_list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = fuzz_memfd(data, size);
  if (fd < 0) return 0;
  char path[64];
  fuzz_fd_path(fd, path, sizeof path);
  stk__file_list a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  if (stk__file_list_parse(&a, path, size & 1 ? "/data" : NULL) == STK_OK)
    for (int64_t i = 0; i < a.count; i++)
      if (!a.paths[i]) __builtin_trap();
  stk__file_list_free(&a);
  stk__file_list_parse_pairs(&a, &b, path, "/data");
  stk__file_list_free(&a);
  stk__file_list_free(&b);
  stk__file_list_parse_paths(&a, path, NULL);
  stk__file_list_free(&a);
  close(fd);
  return 0;
}
