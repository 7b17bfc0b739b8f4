/* Overlays of `stoker preview` (preview_overlay.c). */
#ifndef STOKER_TOOLS_PREVIEW_OVERLAY_H
#define STOKER_TOOLS_PREVIEW_OVERLAY_H

#include <stdint.h>

#include "stoker/stoker.h"

typedef struct {
  int h, w;
  uint8_t *rgb; /* h * w * 3 */
} preview_tile;

/* Draws output sample `d` over tile `t` when it is a box list or a label mask of the
 * tile's size; does nothing otherwise. */
void preview_overlay(preview_tile *t, const stk_tensor_desc *d);

#endif
