// libchafa's functions this program calls, loaded with dlopen. Its types are declared here as chafa 1.x's stable ABI
// defines them (opaque pointers and enums), so libchafa-dev is not needed to build.

#include "chafa_cells.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ChafaCanvas ChafaCanvas;
typedef struct ChafaCanvasConfig ChafaCanvasConfig;
typedef struct ChafaSymbolMap ChafaSymbolMap;
typedef struct ChafaTermDb ChafaTermDb;
typedef struct ChafaTermInfo ChafaTermInfo;
typedef struct {
    char *str;
    size_t len;
    size_t allocated_len;
} GString;
enum { CHAFA_PIXEL_RGBA8_UNASSOCIATED = 4, CHAFA_COLOR_SPACE_DIN99D = 1, CHAFA_OPTIMIZATION_NONE = 0 };

static struct {
    ChafaSymbolMap *(*symbol_map_new)(void);
    void (*symbol_map_add_by_tags)(ChafaSymbolMap *, unsigned);
    void (*symbol_map_remove_by_tags)(ChafaSymbolMap *, unsigned);
    void (*symbol_map_unref)(ChafaSymbolMap *);
    ChafaCanvasConfig *(*config_new)(void);
    void (*config_unref)(ChafaCanvasConfig *);
    void (*config_set_geometry)(ChafaCanvasConfig *, int, int);
    void (*config_set_cell_geometry)(ChafaCanvasConfig *, int, int);
    void (*config_set_canvas_mode)(ChafaCanvasConfig *, int);
    void (*config_set_pixel_mode)(ChafaCanvasConfig *, int);
    void (*config_set_symbol_map)(ChafaCanvasConfig *, const ChafaSymbolMap *);
    void (*config_set_dither_mode)(ChafaCanvasConfig *, int);
    void (*config_set_color_space)(ChafaCanvasConfig *, int);
    void (*config_set_optimizations)(ChafaCanvasConfig *, int);
    void (*config_set_work_factor)(ChafaCanvasConfig *, float);
    ChafaCanvas *(*canvas_new)(const ChafaCanvasConfig *);
    void (*canvas_unref)(ChafaCanvas *);
    void (*canvas_draw_all_pixels)(ChafaCanvas *, int, const uint8_t *, int, int, int);
    uint32_t (*canvas_get_char_at)(ChafaCanvas *, int, int);
    void (*canvas_get_colors_at)(ChafaCanvas *, int, int, int *, int *);
    void (*canvas_get_raw_colors_at)(ChafaCanvas *, int, int, int *, int *);
    GString *(*canvas_print)(ChafaCanvas *, ChafaTermInfo *);
    ChafaTermDb *(*term_db_get_default)(void);
    ChafaTermInfo *(*term_db_get_fallback_info)(ChafaTermDb *);
    void (*term_info_unref)(ChafaTermInfo *);
    char *(*g_string_free)(GString *, int);
} chafa;

static int loaded;
static char load_error[256];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

#define LOAD(FIELD, NAME)                                                                                     \
    do {                                                                                                      \
        *(void **)(&chafa.FIELD) = dlsym(library, NAME);                                                      \
        if (!chafa.FIELD) {                                                                                   \
            snprintf(load_error, sizeof load_error, "libchafa.so.0 lacks %s (chafa 1.12 or later is needed)", \
                     NAME);                                                                                   \
            return;                                                                                           \
        }                                                                                                     \
    } while (0)

static void load(void) {
    void *library = dlopen("libchafa.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(load_error, sizeof load_error, "cannot load libchafa.so.0 (install libchafa0)");
        return;
    }
    LOAD(symbol_map_new, "chafa_symbol_map_new");
    LOAD(symbol_map_add_by_tags, "chafa_symbol_map_add_by_tags");
    LOAD(symbol_map_remove_by_tags, "chafa_symbol_map_remove_by_tags");
    LOAD(symbol_map_unref, "chafa_symbol_map_unref");
    LOAD(config_new, "chafa_canvas_config_new");
    LOAD(config_unref, "chafa_canvas_config_unref");
    LOAD(config_set_geometry, "chafa_canvas_config_set_geometry");
    LOAD(config_set_cell_geometry, "chafa_canvas_config_set_cell_geometry");
    LOAD(config_set_canvas_mode, "chafa_canvas_config_set_canvas_mode");
    LOAD(config_set_pixel_mode, "chafa_canvas_config_set_pixel_mode");
    LOAD(config_set_symbol_map, "chafa_canvas_config_set_symbol_map");
    LOAD(config_set_dither_mode, "chafa_canvas_config_set_dither_mode");
    LOAD(config_set_color_space, "chafa_canvas_config_set_color_space");
    LOAD(config_set_optimizations, "chafa_canvas_config_set_optimizations");
    LOAD(config_set_work_factor, "chafa_canvas_config_set_work_factor");
    LOAD(canvas_new, "chafa_canvas_new");
    LOAD(canvas_unref, "chafa_canvas_unref");
    LOAD(canvas_draw_all_pixels, "chafa_canvas_draw_all_pixels");
    LOAD(canvas_get_char_at, "chafa_canvas_get_char_at");
    LOAD(canvas_get_colors_at, "chafa_canvas_get_colors_at");
    LOAD(canvas_get_raw_colors_at, "chafa_canvas_get_raw_colors_at");
    LOAD(canvas_print, "chafa_canvas_print");
    LOAD(term_db_get_default, "chafa_term_db_get_default");
    LOAD(term_db_get_fallback_info, "chafa_term_db_get_fallback_info");
    LOAD(term_info_unref, "chafa_term_info_unref");
    LOAD(g_string_free, "g_string_free");  // glib, which libchafa links
    // One thread: a frame is a few milliseconds of work, which chafa's thread pool spreads at more total cost
    // (and the decoder already keeps the other cores busy).
    void (*set_threads)(int) = (void (*)(int))dlsym(library, "chafa_set_n_threads");
    if (set_threads) set_threads(1);
    loaded = 1;
}

int stories_chafa_load(char *error, size_t size) {
    pthread_once(&load_once, load);
    if (!loaded && error && size > 0) snprintf(error, size, "%s", load_error);
    return loaded;
}

struct stories_chafa {
    ChafaCanvas *canvas;
    int columns, rows, color_mode;
    uint8_t *rgba;
    size_t rgba_capacity;
};

stories_chafa *stories_chafa_new(int columns, int rows, int color_mode, int pixel_mode, unsigned symbols,
                                 unsigned exclude, int dither, int cell_width, int cell_height, int perceptual,
                                 float work) {
    if (!stories_chafa_load(NULL, 0) || columns <= 0 || rows <= 0) return NULL;
    ChafaSymbolMap *map = chafa.symbol_map_new();
    chafa.symbol_map_add_by_tags(map, symbols);
    if (exclude) chafa.symbol_map_remove_by_tags(map, exclude);
    ChafaCanvasConfig *config = chafa.config_new();
    chafa.config_set_geometry(config, columns, rows);
    if (cell_width > 0 && cell_height > 0) chafa.config_set_cell_geometry(config, cell_width, cell_height);
    chafa.config_set_canvas_mode(config, color_mode);
    chafa.config_set_pixel_mode(config, pixel_mode);
    chafa.config_set_symbol_map(config, map);
    chafa.config_set_dither_mode(config, dither);
    if (perceptual) chafa.config_set_color_space(config, CHAFA_COLOR_SPACE_DIN99D);
    if (work > 0) chafa.config_set_work_factor(config, work);
    // Every cell is read back one by one; printing (sixels) needs no attribute reuse either.
    chafa.config_set_optimizations(config, CHAFA_OPTIMIZATION_NONE);
    ChafaCanvas *canvas = chafa.canvas_new(config);
    chafa.config_unref(config);
    chafa.symbol_map_unref(map);
    if (!canvas) return NULL;
    stories_chafa *result = calloc(1, sizeof *result);
    if (!result) {
        chafa.canvas_unref(canvas);
        return NULL;
    }
    result->canvas = canvas;
    result->columns = columns;
    result->rows = rows;
    result->color_mode = color_mode;
    return result;
}

void stories_chafa_draw(stories_chafa *canvas, const uint8_t *rgb, int width, int height, int stride) {
    if (!canvas || !rgb || width <= 0 || height <= 0) return;
    // chafa 1.12 misreads packed RGB rows whose length is not a multiple of 4 (odd widths: a sheared picture), so
    // it is given RGBA.
    size_t count = (size_t)width * (size_t)height;
    if (count > canvas->rgba_capacity) {
        uint8_t *grown = realloc(canvas->rgba, count * 4);
        if (!grown) return;
        canvas->rgba = grown;
        canvas->rgba_capacity = count;
    }
    for (int y = 0; y < height; y++) {
        const uint8_t *from = rgb + (size_t)y * (size_t)stride;
        uint8_t *to = canvas->rgba + (size_t)y * (size_t)width * 4;
        for (int x = 0; x < width; x++) {
            to[4 * x] = from[3 * x];
            to[4 * x + 1] = from[3 * x + 1];
            to[4 * x + 2] = from[3 * x + 2];
            to[4 * x + 3] = 255;
        }
    }
    chafa.canvas_draw_all_pixels(canvas->canvas, CHAFA_PIXEL_RGBA8_UNASSOCIATED, canvas->rgba, width, height,
                                 width * 4);
}

void stories_chafa_cells(stories_chafa *canvas, uint32_t *characters, int32_t *foregrounds, int32_t *backgrounds) {
    if (!canvas) return;
    int raw = canvas->color_mode != STORIES_CHAFA_TRUECOLOR;
    for (int y = 0; y < canvas->rows; y++) {
        for (int x = 0; x < canvas->columns; x++) {
            int i = y * canvas->columns + x;
            int fg = -1, bg = -1;
            characters[i] = chafa.canvas_get_char_at(canvas->canvas, x, y);
            if (raw) {
                chafa.canvas_get_raw_colors_at(canvas->canvas, x, y, &fg, &bg);
            } else {
                // Packed 0xRRGGBB; -1 for a transparent colour (the terminal's default).
                chafa.canvas_get_colors_at(canvas->canvas, x, y, &fg, &bg);
                fg = fg < 0 ? -1 : (fg & 0xffffff);
                bg = bg < 0 ? -1 : (bg & 0xffffff);
            }
            foregrounds[i] = fg < 0 ? -1 : fg;
            backgrounds[i] = bg < 0 ? -1 : bg;
        }
    }
}

char *stories_chafa_print(stories_chafa *canvas, size_t *length) {
    *length = 0;
    if (!canvas) return NULL;
    ChafaTermInfo *info = chafa.term_db_get_fallback_info(chafa.term_db_get_default());
    GString *printed = chafa.canvas_print(canvas->canvas, info);
    chafa.term_info_unref(info);
    if (!printed) return NULL;
    char *bytes = malloc(printed->len + 1);
    if (bytes) {
        memcpy(bytes, printed->str, printed->len);
        bytes[printed->len] = 0;
        *length = printed->len;
    }
    chafa.g_string_free(printed, 1);
    return bytes;
}

void stories_chafa_free(stories_chafa *canvas) {
    if (!canvas) return;
    chafa.canvas_unref(canvas->canvas);
    free(canvas->rgba);
    free(canvas);
}
