/* Shared helpers of the fuzz targets (docs/hardening.md).
 *
 * Each target defines LLVMFuzzerTestOneInput. With clang it links libFuzzer
 * (`make fuzz`); with any compiler it links replay_main.c instead, which runs the
 * function once per file named on the command line (the corpus replay of
 * `make sanitize`). */
#ifndef STK_FUZZ_UTIL_H
#define STK_FUZZ_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as an anonymous in-memory file (for parsers that read descriptors), or -1. */
static inline int fuzz_memfd(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz", MFD_CLOEXEC);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) {
      close(fd);
      return -1;
    }
    done += (size_t)n;
  }
  return fd;
}

/* "/proc/self/fd/N": a path naming the descriptor. */
static inline void fuzz_fd_path(int fd, char *buf, size_t n) {
  snprintf(buf, n, "/proc/self/fd/%d", fd);
}

#endif
