/* GPU kernels for elementwise arithmetic and friends: math.*, cast_like, one_hot (api_math.h). */
#include "api_math.h"
#include "gpu_internal.h"

extern "C" STK_HIDDEN const stk_gpu_math_api stk_gpu_math_table = {
    1,
};
