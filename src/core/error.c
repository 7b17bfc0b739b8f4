/* Status names and the per-thread error message buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define STK__MSG_CAP 1024

/* One buffer per thread: messages never leak between threads (a process-wide buffer
 * would let one worker's failure overwrite another's). */
static _Thread_local char stk__msg[STK__MSG_CAP];

int stk_version(void) {
  return STK_VERSION_MAJOR * 10000 + STK_VERSION_MINOR * 100 + STK_VERSION_PATCH;
}

const char *stk_version_string(void) { return STK_VERSION_STRING; }

const char *stk_status_name(stk_status status) {
  switch (status) {
#define STK__NAME_CASE(name, value, desc) \
  case STK_##name:                        \
    return "STK_" #name;
    STK_STATUS_MAP(STK__NAME_CASE)
#undef STK__NAME_CASE
  }
  return "STK_UNKNOWN";
}

const char *stk_status_str(stk_status status) {
  switch (status) {
#define STK__STR_CASE(name, value, desc) \
  case STK_##name:                       \
    return desc;
    STK_STATUS_MAP(STK__STR_CASE)
#undef STK__STR_CASE
  }
  return "unknown status";
}

const char *stk_last_error(void) { return stk__msg; }

void stk_clear_error(void) { stk__msg[0] = '\0'; }

void stk_free(void *ptr) { free(ptr); }

/* Only the public API's names (stk_...) mean something to a user: internal ones (stk__...)
 * and static helpers stay out of messages. */
static bool is_public_name(const char *func) {
  return func && strncmp(func, "stk_", 4) == 0 && func[4] != '_';
}

stk_status stk__vfail(stk_status status, const char *func, const char *fmt, va_list ap) {
  char text[STK__MSG_CAP];
  vsnprintf(text, sizeof text, fmt, ap);
  if (is_public_name(func))
    snprintf(stk__msg, sizeof stk__msg, "%s: %s", func, text);
  else
    snprintf(stk__msg, sizeof stk__msg, "%s", text);
  return status;
}

stk_status stk__fail(stk_status status, const char *func, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  stk__vfail(status, func, fmt, ap);
  va_end(ap);
  return status;
}

void stk__warn(const char *fmt, ...) {
  char line[STK__MSG_CAP];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "stoker: warning: %s\n", line);
}

stk_status stk__wrap(stk_status status, const char *fmt, ...) {
  char prefix[STK__MSG_CAP], old[STK__MSG_CAP];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, stk__msg, sizeof old);
  snprintf(stk__msg, sizeof stk__msg, "%s: %s", prefix, old);
  return status;
}

stk_status stk__set_error(stk_status status, const char *message) {
  snprintf(stk__msg, sizeof stk__msg, "%s", message ? message : "");
  return status;
}

stk_status stk__wrap_operator(stk_status status, const char *name) {
  return stk__wrap_operator_on(status, name, NULL);
}

stk_status stk__wrap_operator_on(stk_status status, const char *name, const char *device) {
  size_t n = strlen(name);
  char old[STK__MSG_CAP];
  memcpy(old, stk__msg, sizeof old);
  const char *rest = old;
  /* the message already names the operator ("NAME: ..."): say it once */
  if (strncmp(old, name, n) == 0 && old[n] == ':' && old[n + 1] == ' ') rest = old + n + 2;
  if (device)
    snprintf(stk__msg, sizeof stk__msg, "operator '%s' (%s): %s", name, device, rest);
  else
    snprintf(stk__msg, sizeof stk__msg, "operator '%s': %s", name, rest);
  return status;
}
