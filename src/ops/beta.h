/* Gamma and beta variates from a Philox stream (random.beta, mixup, cutmix). */
#ifndef STOKER_OPS_BETA_H
#define STOKER_OPS_BETA_H

#include "../core/core.h"

/* Gamma(shape, 1), shape > 0: Marsaglia and Tsang's method (2000); shapes below 1 are
 * boosted: Gamma(a) = Gamma(a + 1) * U^(1/a). */
double stk__draw_gamma(stk__philox *g, double shape);
/* Beta(a, b), a, b > 0, as X / (X + Y) with X ~ Gamma(a), Y ~ Gamma(b). */
double stk__draw_beta(stk__philox *g, double a, double b);

#endif /* STOKER_OPS_BETA_H */
