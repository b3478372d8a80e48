#ifndef STORIES_CHAFA_CELLS_H
#define STORIES_CHAFA_CELLS_H

#include <stddef.h>
#include <stdint.h>

// Pictures for the terminal through libchafa: a picture becomes cells (a symbol and two colours each, chosen by
// chafa from block, quadrant and sextant shapes with dithering in a perceptual colour space) or a sixel image.
// libchafa is loaded with dlopen on first use, so building needs no development package and the program runs (with
// its own half blocks) where the library is missing.
typedef struct stories_chafa stories_chafa;

// Colour modes (chafa's canvas modes).
enum {
    STORIES_CHAFA_TRUECOLOR = 0,
    STORIES_CHAFA_INDEXED_256 = 1,
    STORIES_CHAFA_INDEXED_240 = 2,
    STORIES_CHAFA_INDEXED_16 = 3,
    STORIES_CHAFA_FGBG = 5,
    STORIES_CHAFA_INDEXED_8 = 6,
};
// Pixel modes.
enum { STORIES_CHAFA_SYMBOLS = 0, STORIES_CHAFA_SIXELS = 1 };
// Symbol sets (chafa's tags).
enum {
    STORIES_CHAFA_TAG_SPACE = 1 << 0,
    STORIES_CHAFA_TAG_SOLID = 1 << 1,
    STORIES_CHAFA_TAG_BLOCK = 1 << 3,
    STORIES_CHAFA_TAG_QUAD = 1 << 7,
    STORIES_CHAFA_TAG_HHALF = 1 << 8,
    STORIES_CHAFA_TAG_VHALF = 1 << 9,
    STORIES_CHAFA_TAG_HALF = (1 << 8) | (1 << 9),
    STORIES_CHAFA_TAG_ASCII = 1 << 14,
    STORIES_CHAFA_TAG_WIDE = 1 << 18,
    STORIES_CHAFA_TAG_SEXTANT = 1 << 22,
};
// Dithering.
enum { STORIES_CHAFA_DITHER_NONE = 0, STORIES_CHAFA_DITHER_ORDERED = 1, STORIES_CHAFA_DITHER_DIFFUSION = 2 };

// 1 when libchafa could be loaded; otherwise 0 with why in `error`.
int stories_chafa_load(char *error, size_t size);

// A canvas of `columns`×`rows` cells, each `cell_width`×`cell_height` pixels (what sixel images are sized by).
// `symbols` is a set of STORIES_CHAFA_TAG_*, `exclude` tags taken out of it; `perceptual` matches colours in
// DIN99d rather than RGB; `work` (0 to 1, 0 for chafa's default) is how hard symbols are searched. NULL when the
// library is missing.
stories_chafa *stories_chafa_new(int columns, int rows, int color_mode, int pixel_mode, unsigned symbols,
                                 unsigned exclude, int dither, int cell_width, int cell_height, int perceptual,
                                 float work);
// Draws packed RGB pixels (`stride` bytes a row), scaled to fill the canvas.
void stories_chafa_draw(stories_chafa *canvas, const uint8_t *rgb, int width, int height, int stride);
// Each cell's character and colours, row-major: packed 0xRRGGBB in true colour, palette indices otherwise; -1 for
// none (the terminal's default).
void stories_chafa_cells(stories_chafa *canvas, uint32_t *characters, int32_t *foregrounds, int32_t *backgrounds);
// The canvas as terminal output (a sixel image in the sixel mode): `*length` bytes, freed with free().
char *stories_chafa_print(stories_chafa *canvas, size_t *length);
// Frees the canvas.
void stories_chafa_free(stories_chafa *canvas);

#endif
