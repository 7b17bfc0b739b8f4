/* WIDE: a function compiled twice, for AVX2 and for the baseline x86-64, the copy chosen
 * when the library loads (GCC's target_clones, an ifunc). Row loops written for 4 lanes
 * become 8-lane loops in the AVX2 copy. Both copies do the same IEEE operations per
 * element in the same order (no FMA: the build passes -ffp-contract=off), so results do
 * not depend on the CPU. Not under ThreadSanitizer: an ifunc resolver runs while the
 * program is relocated, before the sanitizer's runtime exists, and its instrumented entry
 * crashes the program; not with clang (its target_clones differs), nor off x86-64 Linux. */
#ifndef STOKER_CORE_WIDE_H
#define STOKER_CORE_WIDE_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__)
#define WIDE __attribute__((target_clones("avx2", "default")))
#else
#define WIDE
#endif

#endif
