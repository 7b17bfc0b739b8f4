/* Option parsing and pipeline construction shared by the commands. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_error(const char *what) { fprintf(stderr, "stoker: %s: %s\n", what, stk_last_error()); }

static bool parse_int(const char *flag, const char *text, int64_t min, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < min) {
    fprintf(stderr, "stoker: %s needs an integer >= %lld, got '%s'\n", flag, (long long)min, text);
    return false;
  }
  *out = v;
  return true;
}

static bool flag_allowed(const char *allowed, const char *flag) {
  size_t n = strlen(flag);
  for (const char *p = strstr(allowed, flag); p; p = strstr(p + 1, flag))
    if ((p == allowed || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
  return false;
}

bool cli_parse(int argc, char **argv, int first, const char *allowed, cli_options *o) {
  *o = (cli_options){.device = "cpu",
                     .batch_size = 64,
                     .threads = 2,
                     .prefetch = 2,
                     .seed = -1,
                     .count = 16,
                     .cache_bytes = 4ll << 30,
                     .cache_dir = "",
                     .warmup = -1};
  for (int i = first; i < argc; i++) {
    const char *f = argv[i];
    if (!flag_allowed(allowed, f)) {
      fprintf(stderr, "stoker: %s: unknown option '%s' (this command takes: %s)\n", argv[1], f,
              allowed);
      return false;
    }
    if (strcmp(f, "--json") == 0) {
      o->json = true;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "stoker: %s needs a value\n", f);
      return false;
    }
    const char *v = argv[++i];
    bool ok = true;
    if (strcmp(f, "--data") == 0)
      o->data = v;
    else if (strcmp(f, "--pipeline") == 0)
      o->pipeline = v;
    else if (strcmp(f, "--out") == 0)
      o->out = v;
    else if (strcmp(f, "--cache-dir") == 0)
      o->cache_dir = v;
    else if (strcmp(f, "--cache-bytes") == 0)
      ok = parse_int(f, v, 0, &o->cache_bytes);
    else if (strcmp(f, "--device") == 0) {
      o->device = v;
      if (strcmp(v, "cpu") != 0 && strcmp(v, "gpu") != 0) {
        fprintf(stderr, "stoker: --device must be cpu or gpu, got '%s'\n", v);
        return false;
      }
    } else if (strcmp(f, "--on-error") == 0) {
      if (strcmp(v, "skip") != 0 && strcmp(v, "error") != 0) {
        fprintf(stderr, "stoker: --on-error must be error or skip, got '%s'\n", v);
        return false;
      }
      o->skip_errors = strcmp(v, "skip") == 0;
      o->on_error_given = true;
    } else if (strcmp(f, "--batch-size") == 0)
      ok = o->batch_size_given = parse_int(f, v, 1, &o->batch_size);
    else if (strcmp(f, "--threads") == 0)
      ok = o->threads_given = parse_int(f, v, 1, &o->threads);
    else if (strcmp(f, "--prefetch") == 0)
      ok = o->prefetch_given = parse_int(f, v, 1, &o->prefetch);
    else if (strcmp(f, "--epochs") == 0)
      ok = parse_int(f, v, 1, &o->epochs);
    else if (strcmp(f, "--iters") == 0)
      ok = parse_int(f, v, 1, &o->iters);
    else if (strcmp(f, "--warmup") == 0)
      ok = parse_int(f, v, 0, &o->warmup);
    else if (strcmp(f, "--timeout") == 0)
      ok = parse_int(f, v, 1, &o->timeout_s);
    else if (strcmp(f, "--count") == 0)
      ok = parse_int(f, v, 1, &o->count);
    else if (strcmp(f, "--seed") == 0) {
      ok = parse_int(f, v, 0, &o->seed);
      o->seed_given = true;
    }
    if (!ok) return false;
  }
  if (flag_allowed(allowed, "--data") && !o->data) {
    fprintf(stderr, "stoker: %s needs --data DIR\n", argv[1]);
    return false;
  }
  if (flag_allowed(allowed, "--pipeline") && !o->pipeline) o->pipeline = "basic";
  return true;
}

/* Reads a pipeline file or returns a copy of the preset's text (its GPU variant for
 * --device gpu). */
static char *pipeline_text(const char *spec, const char *device) {
  char gpu_name[256];
  snprintf(gpu_name, sizeof gpu_name, "%s@gpu", spec);
  bool gpu = strcmp(device, "gpu") == 0;
  if (gpu && cli_preset(spec) && !cli_preset(gpu_name)) {
    fprintf(stderr,
            "stoker: preset '%s' has no GPU variant yet (GPU presets: basic, basic-full, decode, "
            "randaugment, autoaugment, trivialaugment)\n",
            spec);
    return NULL;
  }
  const char *preset = gpu ? cli_preset(gpu_name) : cli_preset(spec);
  if (preset) return strdup(preset);
  FILE *f = fopen(spec, "rb");
  if (!f) {
    fprintf(stderr, "stoker: --pipeline '%s' is neither a preset (%s) nor a readable file: %s\n",
            spec, cli_preset_names(), strerror(errno));
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  if (text && fread(text, 1, (size_t)n, f) == (size_t)n)
    text[n] = '\0';
  else {
    free(text);
    text = NULL;
    fprintf(stderr, "stoker: cannot read '%s'\n", spec);
  }
  fclose(f);
  return text;
}

/* Replaces every `var` ("${DATA}") with `data`, escaping quotes and backslashes for a
 * string. */
static char *substitute(const char *text, const char *var, const char *data) {
  size_t cap = strlen(text) + 1, dlen = data ? strlen(data) : 0, vlen = strlen(var);
  for (const char *p = strstr(text, var); p; p = strstr(p + 1, var)) cap += 2 * dlen;
  char *out = malloc(cap), *w = out;
  if (!out) return NULL;
  for (const char *p = text; *p;) {
    if (strncmp(p, var, vlen) == 0) {
      for (size_t i = 0; i < dlen; i++) {
        if (data[i] == '"' || data[i] == '\\') *w++ = '\\';
        *w++ = data[i];
      }
      p += vlen;
    } else {
      *w++ = *p++;
    }
  }
  *w = '\0';
  return out;
}

/* True when the text form sets `key` on a line of its own ("key = value"). */
static bool text_sets(const char *text, const char *key) {
  size_t n = strlen(key);
  for (const char *line = text; line && *line;
       line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    while (*line == ' ' || *line == '\t') line++;
    if (strncmp(line, key, n) != 0) continue;
    const char *p = line + n;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '=') return true;
  }
  return false;
}

stk_pipeline *cli_make_pipeline(const cli_options *o) {
  char *raw = pipeline_text(o->pipeline, o->device);
  if (!raw) return NULL;
  /* ${DATA}, and the sample cache's ${CACHE_BYTES} and ${CACHE_DIR} (--cache-bytes,
   * --cache-dir: the "cached" preset's capacity_bytes and path) */
  char bytes[32];
  snprintf(bytes, sizeof bytes, "%lld", (long long)o->cache_bytes);
  char *text = substitute(raw, "${DATA}", o->data);
  free(raw);
  char *with_bytes = text ? substitute(text, "${CACHE_BYTES}", bytes) : NULL;
  free(text);
  text = with_bytes ? substitute(with_bytes, "${CACHE_DIR}", o->cache_dir) : NULL;
  free(with_bytes);
  if (!text) return NULL;
  /* A flag given overrides the pipeline's own setting; a flag not given leaves a setting
   * the pipeline makes alone, and otherwise applies the command's default. */
  bool sets_batch = text_sets(text, "batch_size"), sets_threads = text_sets(text, "num_threads"),
       sets_prefetch = text_sets(text, "prefetch_queue_depth"),
       sets_on_error = text_sets(text, "on_error");
  stk_pipeline *p = NULL;
  stk_status st = stk_pipeline_from_text(text, &p);
  free(text);
  if (st != STK_OK) {
    cli_error(o->pipeline);
    return NULL;
  }
  struct {
    stk_pipeline_setting key;
    int64_t value;
    bool apply;
  } settings[] = {
      {STK_PIPE_BATCH_SIZE, o->batch_size, o->batch_size_given || !sets_batch},
      {STK_PIPE_NUM_THREADS, o->threads, o->threads_given || !sets_threads},
      {STK_PIPE_PREFETCH_QUEUE_DEPTH, o->prefetch, o->prefetch_given || !sets_prefetch},
      {STK_PIPE_SEED, o->seed, o->seed_given},
      {STK_PIPE_ON_ERROR, o->skip_errors ? STK_ON_ERROR_SKIP : STK_ON_ERROR_FAIL,
       o->on_error_given || !sets_on_error},
      {STK_PIPE_DEVICE_ID, 0, strcmp(o->device, "gpu") == 0},
      {STK_PIPE_TIMEOUT_MS, o->timeout_s * 1000, o->timeout_s > 0},
  };
  for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
    if (settings[i].apply && stk_pipeline_set(p, settings[i].key, settings[i].value) != STK_OK) {
      cli_error("settings");
      stk_pipeline_destroy(p);
      return NULL;
    }
  return p;
}
