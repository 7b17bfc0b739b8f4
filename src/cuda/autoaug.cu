/* GPU kernels for the fused automatic-augmentation program (auto_augment.apply) (api_autoaug.h). */
#include "api_autoaug.h"
#include "gpu_internal.h"

extern "C" STK_HIDDEN const stk_gpu_autoaug_api stk_gpu_autoaug_table = {
    1,
};
