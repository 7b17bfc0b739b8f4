/* `stoker convert SRC --to wds|tfrecord --out DIR [--shard-size N] [--shuffle] [--seed N]`:
 * an ImageFolder tree or a "path label" list file into WebDataset tar shards or TFRecord
 * files, each with a DALI index file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "io/convert.h"

static void convert_usage(void) {
  fprintf(stderr,
          "usage: stoker convert SRC --to wds|tfrecord --out DIR [--shard-size N] [--shuffle]\n"
          "                      [--seed N]\n"
          "  SRC: an ImageFolder directory (root/class/image) or a list file of \"path label\"\n"
          "  lines. Writes DIR/shard-000000.tar (key.jpg|png + key.cls per sample) or\n"
          "  DIR/shard-000000.tfrecord (image/encoded, image/class/label, image/filename,\n"
          "  image/format), each with a DALI index DIR/shard-000000.idx. --shard-size is\n"
          "  samples per file (default 1000).\n");
}

typedef struct {
  int64_t start_ns, last_ns;
  bool tty;
} progress_state;

static void show_progress(void *user, int64_t done, int64_t total) {
  progress_state *ps = user;
  int64_t now = stk__now_ns();
  if (!ps->tty || (done != total && now - ps->last_ns < 100000000)) return;
  ps->last_ns = now;
  int width = 30, filled = (int)(width * done / (total ? total : 1));
  double secs = (now - ps->start_ns) / 1e9;
  fprintf(stderr, "\r[%.*s%*s] %lld/%lld samples  %.0f samples/s", filled,
          "##############################", width - filled, "", (long long)done, (long long)total,
          secs > 0 ? done / secs : 0.0);
  if (done == total) fputc('\n', stderr);
  fflush(stderr);
}

static bool parse_int(const char *flag, const char *v, int64_t min, int64_t *out) {
  char *end;
  long long x = v ? strtoll(v, &end, 10) : 0;
  if (!v || *end || x < min) {
    fprintf(stderr, "stoker convert: %s needs an integer >= %lld\n", flag, (long long)min);
    return false;
  }
  *out = x;
  return true;
}

/* Fills `o` from argv[2..]; false (after a message) on a bad command line. */
static bool parse_args(int argc, char **argv, stk__convert_options *o) {
  const char *to = NULL;
  int64_t seed = 0;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--to") == 0 && v)
      to = v, i++;
    else if (strcmp(a, "--out") == 0 && v)
      o->out_dir = v, i++;
    else if (strcmp(a, "--shard-size") == 0) {
      if (!parse_int(a, v, 1, &o->shard_size)) return false;
      i++;
    } else if (strcmp(a, "--seed") == 0) {
      if (!parse_int(a, v, 0, &seed)) return false;
      i++;
    } else if (strcmp(a, "--shuffle") == 0)
      o->shuffle = true;
    else if (a[0] != '-' && !o->src)
      o->src = a;
    else {
      fprintf(stderr, "stoker convert: unexpected argument '%s'\n", a);
      return false;
    }
  }
  o->seed = (uint64_t)seed;
  if (!o->src || !o->out_dir || !to) {
    fprintf(stderr, "stoker convert: SRC, --to and --out are required\n");
    return false;
  }
  if (strcmp(to, "wds") == 0 || strcmp(to, "webdataset") == 0)
    o->format = STK__CONVERT_WDS;
  else if (strcmp(to, "tfrecord") == 0)
    o->format = STK__CONVERT_TFRECORD;
  else {
    fprintf(stderr, "stoker convert: --to is 'wds' or 'tfrecord', not '%s'\n", to);
    return false;
  }
  return true;
}

int cli_convert(int argc, char **argv) {
  stk__convert_options o = {.shard_size = 1000};
  if (argc >= 3 && (strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0)) {
    convert_usage();
    return 0;
  }
  if (!parse_args(argc, argv, &o)) {
    convert_usage();
    return 2;
  }
  progress_state ps = {stk__now_ns(), 0, isatty(2) != 0};
  o.progress = show_progress;
  o.user = &ps;
  stk__convert_result res;
  int64_t t0 = stk__now_ns();
  if (stk__convert_dataset(&o, &res) != STK_OK) {
    if (ps.tty) fputc('\n', stderr);
    cli_error("convert");
    return 1;
  }
  double secs = (stk__now_ns() - t0) / 1e9;
  printf("wrote %lld sample(s), %.1f MB of data, into %lld %s file(s) in %s (%.2f s)\n",
         (long long)res.samples, res.bytes / 1e6, (long long)res.files,
         o.format == STK__CONVERT_WDS ? "tar" : "TFRecord", o.out_dir, secs);
  return 0;
}
