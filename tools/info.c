/* `stoker info` (an image's header or a dataset folder's summary) and `stoker ops`. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "codecs/codecs.h"

static const char *format_name(stk__image_format f) {
  return f == STK__IMAGE_JPEG ? "JPEG" : f == STK__IMAGE_PNG ? "PNG" : "unknown";
}

static int info_file(const char *path) {
  uint8_t *data;
  size_t size;
  stk__image_info info;
  if (stk__read_file(path, (size_t)1 << 31, &data, &size) != STK_OK) {
    cli_error("info");
    return 1;
  }
  stk_status st = stk__image_peek(data, size, path, &info);
  free(data);
  if (st != STK_OK) {
    cli_error("info");
    return 1;
  }
  printf(
      "%s: %s, %d x %d (width x height), %d channel(s), %d bit%s, EXIF orientation %d", path,
      format_name(info.format), info.width, info.height, info.channels, info.bit_depth,
      info.progressive ? (info.format == STK__IMAGE_JPEG ? ", progressive" : ", interlaced") : "",
      info.orientation);
  if (info.orientation != 1)
    printf(" (displayed %d x %d)", info.oriented_width, info.oriented_height);
  printf(", %zu bytes\n", size);
  return 0;
}

/* Dataset summary state for nftw (which takes no user pointer). */
static struct {
  int64_t files, images, bad, bytes, pixels, classes;
  int64_t jpeg, png;
  int root_depth;
} summary;

static int visit(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
  if (type == FTW_D && ftw->level == 1) summary.classes++;
  if (type != FTW_F || !S_ISREG(sb->st_mode)) return 0; /* never open a FIFO: it blocks */
  summary.files++;
  summary.bytes += sb->st_size;
  uint8_t head[65536];
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  size_t n = fread(head, 1, sizeof head, f);
  fclose(f);
  stk__image_info info;
  if (stk__image_peek(head, n, path, &info) == STK_OK) {
    summary.images++;
    summary.pixels += (int64_t)info.width * info.height;
    summary.jpeg += info.format == STK__IMAGE_JPEG;
    summary.png += info.format == STK__IMAGE_PNG;
  } else if (stk__image_sniff(head, n) != STK__IMAGE_UNKNOWN) {
    summary.bad++;
  }
  return 0;
}

static int info_dir(const char *path) {
  memset(&summary, 0, sizeof summary);
  if (nftw(path, visit, 32, FTW_PHYS) != 0) {
    perror(path);
    return 1;
  }
  printf("%s: %lld file(s) in %lld class folder(s), %.1f MB\n", path, (long long)summary.files,
         (long long)summary.classes, summary.bytes / 1e6);
  printf("  images: %lld (JPEG %lld, PNG %lld), unreadable headers: %lld\n",
         (long long)summary.images, (long long)summary.jpeg, (long long)summary.png,
         (long long)summary.bad);
  if (summary.images)
    printf("  mean file size %.1f KB, mean size %.0f pixels (%.0f x %.0f if square)\n",
           summary.bytes / 1e3 / (double)summary.files, (double)summary.pixels / summary.images,
           __builtin_sqrt((double)summary.pixels / summary.images),
           __builtin_sqrt((double)summary.pixels / summary.images));
  return 0;
}

int cli_info(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: stoker info PATH\n");
    return 2;
  }
  struct stat sb;
  if (stat(argv[2], &sb) != 0) {
    perror(argv[2]);
    return 1;
  }
  if (!S_ISDIR(sb.st_mode)) {
    int r = cli_info_archive(argv[2]);
    if (r >= 0) return r;
  }
  return S_ISDIR(sb.st_mode) ? info_dir(argv[2]) : info_file(argv[2]);
}

static const char *type_name(stk_arg_type t) {
  static const char *const names[] = {"bool", "int",    "float",  "string",
                                      "ints", "floats", "strings"};
  return (unsigned)t < 7 ? names[t] : "?";
}

int cli_ops(int argc, char **argv) {
  if (argc == 2) {
    for (size_t i = 0; i < stk_registry_count(); i++) {
      const stk_op_schema *s = stk_registry_get(i);
      const char *dot = strchr(s->doc, '.');
      printf("%-32s %.*s\n", s->name, dot ? (int)(dot - s->doc + 1) : 80, s->doc);
    }
    return 0;
  }
  const stk_op_schema *s = stk_registry_find(argv[2]);
  if (!s) {
    fprintf(stderr, "stoker: no operator named '%s' (see `stoker ops`)\n", argv[2]);
    return 1;
  }
  printf("%s\n\n%s\n\ninputs: %d..%d, outputs: %d\n\n", s->name, s->doc, s->min_inputs,
         s->max_inputs, s->num_outputs);
  for (int a = 0; a < s->num_args; a++) {
    const stk_arg_schema *g = &s->args[a];
    printf("  %-24s %-8s default %-20s%s%s\n      %s", g->name, type_name(g->type),
           g->default_text ? g->default_text
                           : (g->flags & STK_ARGF_REQUIRED ? "(required)" : "(none)"),
           g->flags & STK_ARGF_PER_SAMPLE ? " per-sample" : "", g->choices ? "" : "", g->doc);
    if (g->choices) printf(" [%s]", g->choices);
    if (g->flags & STK_ARGF_RANGE) printf(" range [%g, %g]", g->min, g->max);
    printf("\n");
  }
  if (s->gpu_check) printf("\nCPU/GPU parity check (docs/text-form.md):\n%s\n", s->gpu_check);
  return 0;
}
