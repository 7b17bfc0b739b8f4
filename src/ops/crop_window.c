#include "crop_window.h"

#include <math.h>

stk__crop_window stk__random_crop_window(stk__philox *g, int width, int height, double area_min,
                                         double area_max, double ratio_min, double ratio_max,
                                         int num_attempts) {
  stk__crop_window win;
  double area = (double)width * height;
  double log_lo = log(ratio_min), log_hi = log(ratio_max);
  for (int attempt = 0; attempt < num_attempts; attempt++) {
    double target = area * (area_min + (area_max - area_min) * stk__philox_uniform(g));
    double ratio = exp(log_lo + (log_hi - log_lo) * stk__philox_uniform(g));
    int w = (int)lround(sqrt(target * ratio));
    int h = (int)lround(sqrt(target / ratio));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      win.y = (int)stk__philox_below(g, (uint64_t)(height - h + 1));
      win.x = (int)stk__philox_below(g, (uint64_t)(width - w + 1));
      win.w = w;
      win.h = h;
      return win;
    }
  }
  /* Fallback: the whole image, cut to the nearest allowed aspect ratio, centred. */
  double in_ratio = (double)width / height;
  if (in_ratio < ratio_min) {
    win.w = width;
    win.h = (int)lround(width / ratio_min);
  } else if (in_ratio > ratio_max) {
    win.h = height;
    win.w = (int)lround(height * ratio_max);
  } else {
    win.w = width;
    win.h = height;
  }
  if (win.w < 1) win.w = 1;
  if (win.h < 1) win.h = 1;
  if (win.w > width) win.w = width;
  if (win.h > height) win.h = height;
  win.x = (width - win.w) / 2;
  win.y = (height - win.h) / 2;
  return win;
}
