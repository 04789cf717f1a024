/* open_page.c — `--open` (see open_page.h). The browser runs under a shell
 * that puts it in the background with /dev/null for its input and output
 * and exits at once; the paths go as positional parameters, never through
 * the shell's parser. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "open_page.h"

#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int has_extension(const char *path, const char *ext)
{
    size_t n = strlen(path), m = strlen(ext);
    return n >= m && strcasecmp(path + n - m, ext) == 0;
}

static const char *page_of(const char *const *paths, int n)
{
    for (int i = 0; i < n; i++)
        if (has_extension(paths[i], ".html"))
            return paths[i];
    for (int i = 0; i < n; i++)
        if (has_extension(paths[i], ".svg"))
            return paths[i];
    return NULL;
}

/* name found on $PATH (or as given, when it holds a '/') into buf. */
static int find_program(const char *name, size_t len, char *buf, size_t cap)
{
    if (len == 0 || len >= cap)
        return -1;
    if (memchr(name, '/', len)) {
        memcpy(buf, name, len);
        buf[len] = '\0';
        return access(buf, X_OK);
    }
    const char *path = getenv("PATH");
    for (const char *dir = path ? path : "/usr/bin:/bin"; *dir;) {
        const char *end = strchr(dir, ':');
        size_t dl = end ? (size_t)(end - dir) : strlen(dir);
        if (dl + 1 + len < cap) {
            snprintf(buf, cap, "%.*s/%.*s", (int)dl, dir, (int)len, name);
            if (access(buf, X_OK) == 0)
                return 0;
        }
        dir += dl + (end ? 1 : 0);
    }
    return -1;
}

/* The program that opens a page here, or why there is none. */
static const char *launcher(char *buf, size_t cap)
{
    const char *browser = getenv("BROWSER");
    if (browser && *browser) {
        size_t len = strcspn(browser, " ");
        if (find_program(browser, len, buf, cap) == 0)
            return NULL;
        return "$BROWSER names no program found";
    }
#ifdef __APPLE__
    if (find_program("open", 4, buf, cap) == 0)
        return NULL;
#endif
    const char *display = getenv("DISPLAY"), *wayland = getenv("WAYLAND_DISPLAY");
    if ((!display || !*display) && (!wayland || !*wayland))
        return "no display here (DISPLAY and BROWSER are not set)";
    if (find_program("xdg-open", 8, buf, cap) == 0)
        return NULL;
    return "xdg-open is not installed";
}

void bs_cli_open_page(const char *const *paths, int n)
{
    const char *page = page_of(paths, n);
    if (!page) {
        fprintf(stderr, "beamspy: --open: no HTML or SVG among the outputs (add -o x.html)\n");
        return;
    }
    char abs[PATH_MAX], program[PATH_MAX];
    if (!realpath(page, abs))
        snprintf(abs, sizeof abs, "%s", page);
    const char *why = launcher(program, sizeof program);
    if (why) {
        fprintf(stderr, "beamspy: --open: %s: open file://%s in a browser\n", why, abs);
        return;
    }
    char *argv[] = {"sh", "-c", "\"$0\" \"$1\" </dev/null >/dev/null 2>&1 &", program, abs, NULL};
    pid_t pid;
    int status = 0;
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0 || waitpid(pid, &status, 0) < 0 ||
        !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "beamspy: --open: %s could not start: open file://%s in a browser\n", program, abs);
}
