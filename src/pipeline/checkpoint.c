/* Checkpoints: where a pipeline stands after the last batch it handed out, as text, and
 * resuming a newly built pipeline from it so that it goes on with the same batches.
 *
 * What the state is: each reader's position (epoch, samples left in it: the sampler
 * rebuilds any epoch from the seed and the epoch number alone) and the ordinal of the
 * next sample (every random draw is keyed by the sample's ordinal). Nothing else in a
 * pipeline carries from one batch to the next. External sources cannot seek: resuming
 * what they feed is the caller's.
 *
 * The text form, one item per line:
 *     stoker-checkpoint 1
 *     ordinal 1280
 *     reader 3 120 50000 Reader       (epoch, left, the data set's size, the name)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAGIC "stoker-checkpoint 1"

size_t stk__resume_len(const stk_pipeline *p) { return 1 + 2 * (size_t)p->num_readers; }

static bool seekable(const stk__node *node) {
  return node->reader_slot >= 0 && node->spec->def->position && node->spec->def->seek;
}

stk_status stk__resume_capture(stk_pipeline *p, int64_t ordinal, int64_t *out) {
  out[0] = ordinal;
  for (size_t k = 0; k < p->num_nodes; k++) {
    stk__node *node = &p->nodes[k];
    if (node->reader_slot < 0) continue;
    int64_t *pos = &out[1 + 2 * (size_t)node->reader_slot];
    pos[0] = pos[1] = -1;
    if (!seekable(node)) continue;
    stk_status st = node->spec->def->position(node, &pos[0], &pos[1]);
    if (st != STK_OK) return stk__wrap(st, "reader '%s'", node->name);
  }
  return STK_OK;
}

static int64_t data_set_size(stk__node *node) {
  stk_reader_meta meta;
  if (!node->spec->def->reader_meta || node->spec->def->reader_meta(node, &meta) != STK_OK)
    return -1;
  return meta.epoch_size;
}

static stk__node *find_reader(stk_pipeline *p, const char *name) {
  for (size_t k = 0; k < p->num_nodes; k++)
    if (p->nodes[k].reader_slot >= 0 && strcmp(p->nodes[k].name, name) == 0) return &p->nodes[k];
  return NULL;
}

/* One "reader EPOCH LEFT SIZE NAME" line: the reader found, checked and moved. */
static stk_status apply_reader_line(stk_pipeline *p, const char *line, int lineno) {
  long long epoch, left, size;
  int name_at = 0;
  if (sscanf(line, "reader %lld %lld %lld %n", &epoch, &left, &size, &name_at) != 3 ||
      !line[name_at])
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT,
                    "checkpoint line %d: expected 'reader EPOCH LEFT SIZE NAME'", lineno);
  const char *name = line + name_at;
  stk__node *node = find_reader(p, name);
  if (!node)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "checkpoint line %d: the pipeline has no reader '%s'",
                    lineno, name);
  if (!seekable(node))
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "checkpoint line %d: reader '%s' cannot resume",
                    lineno, name);
  if (data_set_size(node) != size)
    return STK_FAIL(
        STK_ERR_INVALID_ARGUMENT,
        "checkpoint line %d: reader '%s' has %lld samples, the checkpoint was taken over %lld",
        lineno, name, (long long)data_set_size(node), size);
  return node->spec->def->seek(node, epoch, left);
}

/* Splits `text` into lines (a copy) and applies them; *ordinal is the next sample's. */
static stk_status apply_lines(stk_pipeline *p, char *text, int64_t *ordinal) {
  int lineno = 0;
  bool magic = false, have_ordinal = false;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    lineno++;
    size_t len = strlen(line);
    if (len && line[len - 1] == '\r') line[len - 1] = '\0';
    if (lineno == 1) {
      magic = strcmp(line, MAGIC) == 0;
      if (!magic) break;
    } else if (strncmp(line, "ordinal ", 8) == 0) {
      long long n;
      if (sscanf(line + 8, "%lld", &n) != 1 || n < 0)
        return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "checkpoint line %d: a bad ordinal", lineno);
      *ordinal = n;
      have_ordinal = true;
    } else if (strncmp(line, "reader ", 7) == 0) {
      STK_TRY(apply_reader_line(p, line, lineno));
    } else if (*line) {
      return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "checkpoint line %d: unknown item '%.40s'", lineno,
                      line);
    }
  }
  if (!magic)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "not a stoker checkpoint (it must start with '%s')",
                    MAGIC);
  if (!have_ordinal)
    return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "checkpoint: the ordinal line is missing");
  return STK_OK;
}

stk_status stk__resume_apply(stk_pipeline *p, const char *text, int64_t *ordinal) {
  char *copy = strdup(text);
  if (!copy) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot copy the checkpoint");
  stk_status st = apply_lines(p, copy, ordinal);
  free(copy);
  return st;
}

stk_status stk_pipeline_restore(stk_pipeline *p, const char *checkpoint) {
  if (!p || !checkpoint) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  if (p->built) return STK_FAIL(STK_ERR_STATE, "restore a checkpoint before building the pipeline");
  char *copy = strdup(checkpoint);
  if (!copy) return STK_FAIL(STK_ERR_OUT_OF_MEMORY, "cannot copy the checkpoint");
  free(p->restore_text);
  p->restore_text = copy;
  return STK_OK;
}

stk_status stk_pipeline_checkpoint(stk_pipeline *p, char **out) {
  if (!p || !out) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL argument");
  *out = NULL;
  if (!p->built || !p->delivered_resume) return STK_FAIL(STK_ERR_STATE, "build the pipeline first");
  stk__strbuf text = {0};
  stk_status st =
      stk__strbuf_printf(&text, "%s\nordinal %lld\n", MAGIC, (long long)p->delivered_resume[0]);
  for (size_t k = 0; st == STK_OK && k < p->num_nodes; k++) {
    stk__node *node = &p->nodes[k];
    if (!seekable(node)) continue;
    const int64_t *pos = &p->delivered_resume[1 + 2 * (size_t)node->reader_slot];
    st = stk__strbuf_printf(&text, "reader %lld %lld %lld %s\n", (long long)pos[0],
                            (long long)pos[1], (long long)data_set_size(node), node->name);
  }
  if (st != STK_OK) {
    stk__strbuf_free(&text);
    return st;
  }
  *out = text.data;
  return STK_OK;
}
