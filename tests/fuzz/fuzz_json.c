/* The JSON reader (io/json.c): parse, then check the token tree's promises (every
 * subtree ends inside the array, sibling chains add up to the counted size) and decode
 * every string and number. The input is copied so that nothing past it is readable. */
#include <stdlib.h>

#include "fuzz_util.h"
#include "io/json.h"

static void check(const stk__json_doc *d) {
  for (uint32_t i = 0; i < d->count; i++) {
    const stk__json_tok *t = &d->toks[i];
    if (t->next <= i || t->next > d->count) __builtin_trap();
    if (t->type == STK__JSON_STRING) free(stk__json_strdup(d, i));
    double v; /* out-of-range numbers (1e999) are refused: that is the contract */
    if (t->type == STK__JSON_NUMBER) (void)stk__json_number(d, i, &v);
    if (t->type != STK__JSON_ARRAY && t->type != STK__JSON_OBJECT) continue;
    uint32_t n = t->type == STK__JSON_OBJECT ? 2 * t->size : t->size, k = i + 1, seen = 0;
    while (k < t->next) k = d->toks[k].next, seen++;
    if (k != t->next || seen != n) __builtin_trap();
    if (t->type == STK__JSON_OBJECT) (void)stk__json_member(d, i, "id");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 20) return 0;
  char *text = malloc(size ? size : 1);
  if (!text) return 0;
  memcpy(text, data, size);
  stk__json_doc d;
  if (stk__json_parse(&d, text, size, "fuzz.json") == STK_OK) {
    if (d.count == 0) __builtin_trap();
    check(&d);
  }
  stk__json_free(&d);
  free(text);
  return 0;
}
