/* GPU kernels for colour operators: brightness/contrast/saturation/hue/hsv/color_twist/grayscale/invert/posterize/solarize(_add)/equalize/auto_contrast/sharpness/color_space_conversion (api_color.h). */
#include "api_color.h"
#include "gpu_internal.h"

extern "C" STK_HIDDEN const stk_gpu_color_api stk_gpu_color_table = {
    1,
};
