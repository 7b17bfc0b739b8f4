/* Writing PNG files with libspng (previews). */
#include <spng.h>
#include <stdio.h>

#include "cli.h"

bool cli_write_png(const char *path, const uint8_t *pixels, int width, int height, int channels) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    return false;
  }
  spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  struct spng_ihdr ihdr = {
      .width = (uint32_t)width,
      .height = (uint32_t)height,
      .bit_depth = 8,
      .color_type = channels == 1 ? SPNG_COLOR_TYPE_GRAYSCALE : SPNG_COLOR_TYPE_TRUECOLOR};
  int err = ctx ? spng_set_png_file(ctx, f) : SPNG_EMEM;
  if (!err) err = spng_set_ihdr(ctx, &ihdr);
  if (!err)
    err = spng_encode_image(ctx, pixels, (size_t)width * height * channels, SPNG_FMT_PNG,
                            SPNG_ENCODE_FINALIZE);
  spng_ctx_free(ctx);
  if (fclose(f) != 0 && !err) err = SPNG_EIO;
  if (err) fprintf(stderr, "stoker: cannot write %s: %s\n", path, spng_strerror(err));
  return err == 0;
}
