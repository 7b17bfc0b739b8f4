/* Every operator's `.gpu_check` (the CPU/GPU parity case the GPU suite runs) is valid
 * text form and runs on the CPU: each line's '@' becomes "cpu", IN a small constant HWC
 * image (the GPU harness feeds decoded photos instead), a `return op(...)` line becomes
 * `OUT = op(...)` and `return OUT` (as the harness instantiates it), and one batch is
 * run. A check
 * that does not parse or build here would fail on the GPU machine too, later. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* The check's text with '@' replaced by "cpu" and a header defining IN. */
static char *cpu_text(const char *check) {
  const char *head =
      "batch_size = 2\nnum_threads = 1\n"
      "IN = constant(idata=[10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, "
      "160, 170, 180], shape=[2, 3, 3], dtype=\"uint8\", layout=\"HWC\")\n";
  size_t n = strlen(head) + 4 * strlen(check) + 32;
  char *out = malloc(n), *o = out;
  o += sprintf(o, "%s", head);
  for (const char *c = check; *c; c++) {
    bool line_start = c == check || c[-1] == '\n';
    if (line_start && strncmp(c, "return ", 7) == 0 && strchr(c, '(')) {
      o += sprintf(o, "OUT = ");
      c += 6; /* the loop's c++ skips the blank */
    } else if (*c == '@') {
      o += sprintf(o, "\"cpu\"");
    } else {
      *o++ = *c;
    }
  }
  if (strstr(out, "OUT = ")) o += sprintf(o, "\nreturn OUT");
  *o++ = '\n', *o = 0;
  return out;
}

static void test_every_gpu_check_runs_on_the_cpu(void **state) {
  (void)state;
  int checked = 0;
  for (size_t i = 0; i < stk_registry_count(); i++) {
    const stk_op_schema *sc = stk_registry_get(i);
    if (!sc->gpu_check) continue;
    char *text = cpu_text(sc->gpu_check);
    stk_pipeline *p = NULL;
    stk_status st = stk_pipeline_from_text(text, &p);
    if (st == STK_OK) st = stk_pipeline_build(p);
    stk_batch *b = NULL;
    if (st == STK_OK) st = stk_pipeline_run(p, &b);
    if (st != STK_OK) fail_msg("%s: %s\n%s", sc->name, stk_last_error(), text);
    assert_true(stk_batch_num_outputs(b) >= 1);
    stk_batch_release(b);
    stk_pipeline_destroy(p);
    free(text);
    checked++;
  }
  assert_true(checked >= 3); /* flip, bb_flip, coord_flip at least */
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_gpu_check_runs_on_the_cpu)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
