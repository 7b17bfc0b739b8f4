/* The pipeline text form: parse, and when it parses, print it back and parse that again
 * (the round trip the docs promise). */
#include <stdlib.h>

#include "fuzz_util.h"
#include "stoker/stoker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = 0;
  stk_pipeline *p = NULL;
  if (stk_pipeline_from_text(text, &p) == STK_OK) {
    char *again = NULL;
    if (stk_pipeline_to_text(p, &again) == STK_OK) {
      stk_pipeline *q = NULL;
      if (stk_pipeline_from_text(again, &q) != STK_OK) __builtin_trap(); /* no round trip */
      stk_pipeline_destroy(q);
      stk_free(again);
    }
    stk_pipeline_destroy(p);
  }
  free(text);
  return 0;
}
