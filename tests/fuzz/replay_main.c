/* Corpus replay without libFuzzer: runs the target once on every file (or every file of
 * every directory) named on the command line, so sanitizer builds made with any compiler
 * can check the whole corpus in seconds (`make sanitize`). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_util.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 1;
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf) return 1;
  /* A copy of exactly n bytes, so reading past the input is caught as under libFuzzer. */
  uint8_t *exact = malloc(n ? n : 1);
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path, int *count) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    perror(path);
    return 1;
  }
  if (!S_ISDIR(sb.st_mode)) {
    (*count)++;
    return run_file(path);
  }
  DIR *d = opendir(path);
  if (!d) return 1;
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    names = realloc(names, (n + 1) * sizeof *names);
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    snprintf(names[n++], len, "%s/%s", path, e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp);
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    bad |= run_path(names[i], count);
    free(names[i]);
  }
  free(names);
  return bad;
}

int main(int argc, char **argv) {
  int bad = 0, count = 0;
  for (int i = 1; i < argc; i++) bad |= run_path(argv[i], &count);
  printf("replayed %d input(s)\n", count);
  return bad;
}
