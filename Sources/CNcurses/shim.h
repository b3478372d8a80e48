#ifndef STORIES_CNCURSES_SHIM_H
#define STORIES_CNCURSES_SHIM_H

// SwiftPM drops pkg-config's -D flags, so the wide-character API is switched on here.
#define NCURSES_WIDECHAR 1
#ifndef _XOPEN_SOURCE_EXTENDED
#define _XOPEN_SOURCE_EXTENDED 1
#endif

#include <stdio.h>
#include <locale.h>
#include <langinfo.h>
#include <ncursesw/curses.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

// Swift 6 rejects mutable C globals and cannot import function-like macros: read them through these.
static inline WINDOW *stories_stdscr(void) { return stdscr; }
static inline int stories_lines(void) { return LINES; }
static inline int stories_cols(void) { return COLS; }
static inline int stories_color_pair(int n) { return (int)COLOR_PAIR(n); }
static inline int stories_a_bold(void) { return (int)A_BOLD; }
static inline int stories_a_reverse(void) { return (int)A_REVERSE; }
static inline int stories_a_dim(void) { return (int)A_DIM; }
static inline int stories_a_underline(void) { return (int)A_UNDERLINE; }
static inline int stories_a_italic(void) { return (int)A_ITALIC; }
static inline mmask_t stories_button1_mask(void) { return BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON1_RELEASED; }
static inline int stories_button1_pressed(mmask_t state) {
    return (state & (BUTTON1_PRESSED | BUTTON1_CLICKED)) != 0;
}
static inline int stories_colors(void) { return COLORS; }
static inline int stories_color_pairs(void) { return COLOR_PAIRS; }
// Sets a window's attributes and colour pair; pairs above 32767 (ncurses 6 extended pairs) go through the opts
// pointer.
static inline int stories_set_attributes(WINDOW *window, int attributes, int pair) {
    return wattr_set(window, (attr_t)attributes, 0, &pair);
}
static inline FILE *stories_stdout(void) { return stdout; }
static inline FILE *stories_stdin(void) { return stdin; }
static inline const char *stories_codeset(void) { return nl_langinfo(CODESET); }
static inline int stories_cury(void) { return getcury(stdscr); }
static inline int stories_curx(void) { return getcurx(stdscr); }
// The window's size in cells and pixels (TIOCGWINSZ; ioctl is variadic, which Swift cannot call). 0 on success.
static inline int stories_window_size(int fd, int *columns, int *rows, int *width, int *height) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0) return -1;
    *columns = size.ws_col;
    *rows = size.ws_row;
    *width = size.ws_xpixel;
    *height = size.ws_ypixel;
    return 0;
}

#endif
