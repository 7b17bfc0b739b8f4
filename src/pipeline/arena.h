#ifndef STOKER_PIPELINE_ARENA_H
#define STOKER_PIPELINE_ARENA_H
#include "internal.h"
stk__arena *stk__arena_create(void);
void stk__arena_reset(stk__arena *a);
void stk__arena_clear(stk__arena *a);
void stk__arena_destroy(stk__arena *a);
size_t stk__arena_size(const stk__arena *a);
#endif
