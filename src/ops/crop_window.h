/* The random crop window of torchvision's RandomResizedCrop, shared by
 * random_resized_crop and decoders.image_random_crop so both choose the same window. */
#ifndef STOKER_OPS_CROP_WINDOW_H
#define STOKER_OPS_CROP_WINDOW_H

#include "../core/core.h"

typedef struct {
  int x, y, w, h; /* top-left corner and size, in pixels of the input image */
} stk__crop_window;

/* Draws a window from a width x height image: `num_attempts` tries at an area fraction
 * uniform in [area_min, area_max] and an aspect ratio log-uniform in
 * [ratio_min, ratio_max]; the first that fits wins, placed uniformly. Otherwise a
 * centre crop clamped to the ratio range (torchvision's fallback). */
stk__crop_window stk__random_crop_window(stk__philox *g, int width, int height, double area_min,
                                         double area_max, double ratio_min, double ratio_max,
                                         int num_attempts);

#endif
