/* stoker: benchmark, preview and inspect data pipelines. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: stoker <command> [options]\n"
          "\n"
          "commands:\n"
          "  bench    --data DIR --pipeline PRESET|FILE [--device cpu|gpu] [--batch-size N]\n"
          "           [--threads N] [--epochs N | --iters N] [--prefetch N] [--seed N]\n"
          "           [--on-error error|skip] [--warmup N] [--timeout SECONDS] [--json]\n"
          "           [--cache-bytes N] [--cache-dir DIR]\n"
          "           measure images/s with a per-operator breakdown (the first N batches,\n"
          "           default 1, run before the clock starts; --timeout: the bound of every\n"
          "           wait on the device or between stages, default 300); with --epochs > 1,\n"
          "           each epoch's rate too (epoch 1 vs 2+: the \"cached\" preset's sample\n"
          "           cache, --cache-bytes its capacity (default 4 GiB), --cache-dir on disk)\n"
          "  preview  --data DIR --pipeline PRESET|FILE --count N --out FILE.png [--seed N]\n"
          "           [--threads N] [--prefetch N] [--device cpu|gpu]\n"
          "           write a PNG grid of augmented samples\n"
          "  convert  SRC --to wds|tfrecord --out DIR [--shard-size N] [--shuffle] [--seed N]\n"
          "           an ImageFolder (or file list) into tar shards or TFRecord files\n"
          "  info     PATH       an image's header, a tar shard's or TFRecord file's samples,\n"
          "           or a dataset folder's summary\n"
          "  ops      [NAME]     list the operators, or one operator's arguments\n"
          "  version\n"
          "\n"
          "presets: %s; a FILE holds a pipeline in the text form (docs/text-form.md),\n"
          "where ${DATA} stands for --data (${CACHE_BYTES}, ${CACHE_DIR}: --cache-*).\n",
          cli_preset_names());
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "bench") == 0) return cli_bench(argc, argv);
  if (strcmp(cmd, "preview") == 0) return cli_preview(argc, argv);
  if (strcmp(cmd, "info") == 0) return cli_info(argc, argv);
  if (strcmp(cmd, "convert") == 0) return cli_convert(argc, argv);
  if (strcmp(cmd, "ops") == 0) return cli_ops(argc, argv);
  if (strcmp(cmd, "version") == 0) {
    printf("stoker %s\n", stk_version_string());
    return 0;
  }
  fprintf(stderr, "stoker: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
