/* Shared pieces of the `stoker` command-line tool. */
#ifndef STOKER_CLI_H
#define STOKER_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "stoker/stoker.h"

/* Options common to the commands that run a pipeline. */
typedef struct {
  const char *data;     /* --data DIR */
  const char *pipeline; /* --pipeline PRESET|FILE */
  const char *device;   /* --device cpu|gpu */
  int64_t batch_size, threads, prefetch, seed, epochs, iters, count;
  int64_t warmup;    /* --warmup N: batches run before the clock starts (bench; -1: not given) */
  int64_t timeout_s; /* --timeout SECONDS: the pipeline's timeout_ms / 1000 (0: not given) */
  bool seed_given, json, skip_errors;
  /* Flags actually given: only those override a pipeline file's own settings. */
  bool batch_size_given, threads_given, prefetch_given, on_error_given;
  const char *out; /* --out FILE */
  /* the sample cache's ${CACHE_BYTES} and ${CACHE_DIR} in pipelines (preset "cached") */
  int64_t cache_bytes;
  const char *cache_dir;
} cli_options;

/* Parses argv[first..] into `o`; prints a message naming the bad flag and returns false
 * on error. `allowed` lists the flags this command takes (space separated). */
bool cli_parse(int argc, char **argv, int first, const char *allowed, cli_options *o);

/* Builds (not yet built) the pipeline of a preset name or a pipeline file, with ${DATA}
 * replaced by the data directory and the command-line settings applied. Prints the error
 * and returns NULL on failure. */
stk_pipeline *cli_make_pipeline(const cli_options *o);

/* Prints "stoker: <what>: <last error>" to stderr. */
void cli_error(const char *what);

/* The text of a built-in preset, or NULL. */
const char *cli_preset(const char *name);
/* Names of the presets, space separated. */
const char *cli_preset_names(void);

/* Writes an 8-bit RGB or gray image as PNG (libspng). */
bool cli_write_png(const char *path, const uint8_t *pixels, int width, int height, int channels);

int cli_bench(int argc, char **argv);
int cli_preview(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_ops(int argc, char **argv);
int cli_convert(int argc, char **argv);
/* stoker info on a tar shard or TFRecord file: 0 on success, 1 on error, -1 when the
 * path is neither. */
int cli_info_archive(const char *path);

#endif
