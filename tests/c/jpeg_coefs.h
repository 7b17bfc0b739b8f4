/* A JPEG's quantised coefficients in src/shared/jpeg_frame.h's layout, read with
 * libjpeg-turbo's jpeg_read_coefficients, and libjpeg-turbo's own decode of the file
 * (JDCT_ISLOW, fancy upsampling): the input and the reference of the pixel stage's tests
 * (tests/c/test_jpeg_pixels.c on the CPU, tests/gpu/jpeg_pixels_gpu.cu on a GPU). Plain
 * C, header-only (static functions); compiles as C and as CUDA C++. */
#ifndef STK_TESTS_JPEG_COEFS_H
#define STK_TESTS_JPEG_COEFS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "shared/jpeg_frame.h"

typedef struct {
  stk_jpeg_frame f;
  int16_t *coef;  /* total_blocks * 64, malloc'ed */
  int real_bw[3]; /* libjpeg's width_in_blocks: the blocks holding image samples */
  int real_bh[3]; /* height_in_blocks */
} jc_coded;

/* Fills *r from the file (1 or 3 components, sampling factors 1 or 2; the MCU grid's
 * padding blocks are copied too: libjpeg's arrays include them). 0, or -1 when the file
 * is not such a JPEG (libjpeg's own errors exit). */
static int jc_read(const uint8_t *jpeg, size_t n, jc_coded *r) {
  struct jpeg_decompress_struct ci;
  struct jpeg_error_mgr jerr;
  ci.err = jpeg_std_error(&jerr);
  jpeg_create_decompress(&ci);
  jpeg_mem_src(&ci, jpeg, (unsigned long)n);
  memset(r, 0, sizeof *r);
  if (jpeg_read_header(&ci, TRUE) != JPEG_HEADER_OK ||
      (ci.num_components != 1 && ci.num_components != 3)) {
    jpeg_destroy_decompress(&ci);
    return -1;
  }
  jvirt_barray_ptr *arrays = jpeg_read_coefficients(&ci);
  stk_jpeg_frame *f = &r->f;
  f->width = (int)ci.image_width;
  f->height = (int)ci.image_height;
  f->ncomp = ci.num_components;
  f->hmax = f->ncomp == 1 ? 1 : ci.max_h_samp_factor;
  f->vmax = f->ncomp == 1 ? 1 : ci.max_v_samp_factor;
  f->mcus_x = (f->width + 8 * f->hmax - 1) / (8 * f->hmax);
  f->mcus_y = (f->height + 8 * f->vmax - 1) / (8 * f->vmax);
  int64_t total = 0;
  for (int c = 0; c < f->ncomp; c++) {
    jpeg_component_info *k = &ci.comp_info[c];
    stk_jpeg_component *o = &f->comp[c];
    o->h = f->ncomp == 1 ? 1 : k->h_samp_factor;
    o->v = f->ncomp == 1 ? 1 : k->v_samp_factor;
    o->quant = k->quant_tbl_no;
    o->bw = f->mcus_x * o->h;
    o->bh = f->mcus_y * o->v;
    o->block0 = total;
    total += (int64_t)o->bw * o->bh;
    f->blocks_per_mcu += o->h * o->v;
    r->real_bw[c] = (int)k->width_in_blocks;
    r->real_bh[c] = (int)k->height_in_blocks;
    for (int i = 0; i < 64; i++) f->quant[o->quant][i] = k->quant_table->quantval[i];
  }
  f->total_blocks = total;
  r->coef = (int16_t *)calloc((size_t)total * 64, sizeof *r->coef);
  for (int c = 0; c < f->ncomp && r->coef; c++) {
    stk_jpeg_component *o = &f->comp[c];
    /* libjpeg's arrays cover the MCU grid's padding blocks too (rounded up to h, v) */
    int rows = r->real_bh[c], cols = r->real_bw[c];
    if (f->ncomp == 3) {
      rows = (rows + o->v - 1) / o->v * o->v;
      cols = (cols + o->h - 1) / o->h * o->h;
    }
    if (rows > o->bh || cols > o->bw) {
      free(r->coef);
      r->coef = NULL;
      break;
    }
    for (int by = 0; by < rows; by++) {
      JBLOCKARRAY row =
          ci.mem->access_virt_barray((j_common_ptr)&ci, arrays[c], (JDIMENSION)by, 1, FALSE);
      for (int bx = 0; bx < cols; bx++)
        for (int i = 0; i < 64; i++)
          r->coef[(o->block0 + (int64_t)by * o->bw + bx) * 64 + i] = row[0][bx][i];
    }
  }
  jpeg_abort_decompress(&ci);
  jpeg_destroy_decompress(&ci);
  return r->coef ? 0 : -1;
}

/* libjpeg-turbo's decode, color 0 RGB, 1 BGR, 2 gray, into a malloc'ed dense buffer. */
static uint8_t *jc_decode(const uint8_t *jpeg, size_t n, int color, int *w, int *h) {
  struct jpeg_decompress_struct ci;
  struct jpeg_error_mgr jerr;
  ci.err = jpeg_std_error(&jerr);
  jpeg_create_decompress(&ci);
  jpeg_mem_src(&ci, jpeg, (unsigned long)n);
  jpeg_read_header(&ci, TRUE);
  ci.dct_method = JDCT_ISLOW;
  ci.do_fancy_upsampling = TRUE;
  ci.out_color_space = color == 2 ? JCS_GRAYSCALE : color == 1 ? JCS_EXT_BGR : JCS_EXT_RGB;
  jpeg_start_decompress(&ci);
  *w = (int)ci.output_width;
  *h = (int)ci.output_height;
  size_t pitch = (size_t)ci.output_width * ci.output_components;
  uint8_t *out = (uint8_t *)malloc(pitch * ci.output_height + 1);
  while (out && ci.output_scanline < ci.output_height) {
    JSAMPROW row = out + pitch * ci.output_scanline;
    jpeg_read_scanlines(&ci, &row, 1);
  }
  if (out)
    jpeg_finish_decompress(&ci);
  else
    jpeg_abort_decompress(&ci);
  jpeg_destroy_decompress(&ci);
  return out;
}

#endif
