/* `stoker info FILE`: the CLI's whole path for one file (type checks, tar and TFRecord
 * detection, image headers), with the CLI's sources linked in and its output discarded. */
#include <fcntl.h>
#include <stdlib.h>

#include "../../tools/cli.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int quiet = 0;
  if (!quiet) { /* the CLI prints: send stdout to /dev/null once (stderr keeps the
                  sanitizers' reports) */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, 1);
      close(null);
    }
    quiet = 1;
  }
  int fd = fuzz_memfd(data, size);
  if (fd < 0) return 0;
  char path[64];
  fuzz_fd_path(fd, path, sizeof path);
  char *argv[] = {"stoker", "info", path, NULL};
  cli_info(3, argv);
  fflush(stdout);
  close(fd);
  return 0;
}
