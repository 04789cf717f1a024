/* open_page.h — `--open`: the flame graph just written, opened in the
 * user's browser, or, without one to open it with, a line on stderr saying
 * where it is. */
#ifndef BS_OPEN_PAGE_H
#define BS_OPEN_PAGE_H

/* Opens the first HTML file among paths, else the first SVG ($BROWSER,
 * else xdg-open when $DISPLAY or $WAYLAND_DISPLAY is set, open on macOS),
 * started detached from this process. Says on stderr when there is nothing
 * to open or nothing to open it with. Never fails the command. */
void bs_cli_open_page(const char *const *paths, int n);

#endif
