/* Data type helpers generated from STK_DTYPE_MAP. */
#include <string.h>

#include "core.h"

size_t stk_dtype_size(stk_dtype dtype) {
  switch (dtype) {
#define STK__SIZE_CASE(name, value, text, size) \
  case STK_DTYPE_##name:                        \
    return size;
    STK_DTYPE_MAP(STK__SIZE_CASE)
#undef STK__SIZE_CASE
    default:
      return 0;
  }
}

const char *stk_dtype_name(stk_dtype dtype) {
  switch (dtype) {
#define STK__NAME_CASE(name, value, text, size) \
  case STK_DTYPE_##name:                        \
    return text;
    STK_DTYPE_MAP(STK__NAME_CASE)
#undef STK__NAME_CASE
    default:
      return NULL;
  }
}

stk_status stk_dtype_from_name(const char *name, stk_dtype *out) {
  static const struct {
    const char *alias;
    stk_dtype dtype;
  } aliases[] = {{"float", STK_DTYPE_FLOAT32}, {"double", STK_DTYPE_FLOAT64},
                 {"half", STK_DTYPE_FLOAT16},  {"uchar", STK_DTYPE_UINT8},
                 {"int", STK_DTYPE_INT32},     {"long", STK_DTYPE_INT64}};
  if (!name) return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "NULL dtype name");
  for (int d = 0; d < STK_DTYPE_COUNT; d++)
    if (strcmp(name, stk_dtype_name((stk_dtype)d)) == 0) {
      *out = (stk_dtype)d;
      return STK_OK;
    }
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(name, aliases[i].alias) == 0) {
      *out = aliases[i].dtype;
      return STK_OK;
    }
  return STK_FAIL(STK_ERR_INVALID_ARGUMENT, "unknown dtype '%s'", name);
}
