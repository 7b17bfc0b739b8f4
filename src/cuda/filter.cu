/* GPU kernels for filters and noise: gaussian_blur, laplacian, filter, noise.* (api_filter.h). */
#include "api_filter.h"
#include "gpu_internal.h"

extern "C" STK_HIDDEN const stk_gpu_filter_api stk_gpu_filter_table = {
    1,
};
