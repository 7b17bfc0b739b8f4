/*
 * NeMo ASR manifests: JSON Lines files, one flat object per line with "audio_filepath"
 * (string), "duration" (seconds) and "text" (string); other keys are skipped (nested
 * values included). Relative audio paths are taken relative to the manifest's directory.
 */
#ifndef STOKER_IO_MANIFEST_H
#define STOKER_IO_MANIFEST_H

#include "../core/core.h"

typedef struct {
  char *path; /* the audio file */
  char *text; /* "" when absent */
  double duration;
  int64_t index; /* the entry's ordinal over all manifests read, before filtering */
} stk__manifest_entry;

typedef struct {
  stk__manifest_entry *entries;
  int64_t count, capacity, seen;
} stk__manifest;

/* Appends the entries of `path` whose duration lies in [min_dur, max_dur] (max_dur <= 0:
 * no upper bound). Errors name the file and line (STK_ERR_PARSE), prefixed by `who`. */
stk_status stk__manifest_load(stk__manifest *m, const char *path, double min_dur, double max_dur,
                              const char *who);
void stk__manifest_free(stk__manifest *m);

#endif /* STOKER_IO_MANIFEST_H */
