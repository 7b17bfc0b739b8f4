/* GPU kernels for geometry and occlusion: rotate, warp_affine, erase, grid_mask (api_geometry.h). */
#include "api_geometry.h"
#include "gpu_internal.h"

extern "C" STK_HIDDEN const stk_gpu_geometry_api stk_gpu_geometry_table = {
    1,
};
