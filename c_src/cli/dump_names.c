/* dump_names.c — Erlang or Elixir spelling of the frames, reasons and names
 * of a dump (see dump_names.h). Frames arrive raw and are spelled once, by
 * the engine (bs_term_frame), never parsed back from text. */
#include "dump_names.h"

#include <stdio.h>
#include <string.h>

#include "term_frame.h"

static bs_name_style style_of(int elixir)
{
    return elixir ? BS_NAMES_ELIXIR : BS_NAMES_ERLANG;
}

const char *bs_dump_frame(const bs_eterm *entry, int elixir, char *buf, size_t cap)
{
    const bs_eterm *where = bs_eterm_item(entry, 1);
    if (bs_eterm_kind_of(entry) != BS_ET_TUPLE || bs_eterm_size(entry) != 2 ||
        bs_eterm_kind_of(where) != BS_ET_BINARY)
        return bs_term_frame(entry, style_of(elixir), buf, cap);
    bs_term_frame(bs_eterm_item(entry, 0), style_of(elixir), buf, cap);
    size_t n = strlen(buf);
    if (bs_eterm_text_len(where) > 0 && n + 4 < cap)
        snprintf(buf + n, cap - n, " (%.*s)", (int)bs_eterm_text_len(where), bs_eterm_text(where));
    return buf;
}

const char *bs_dump_reason(const bs_eterm *reason, int elixir, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    if (bs_eterm_kind_of(reason) != BS_ET_LIST)
        return bs_term_frame(reason, style_of(elixir), buf, cap);
    for (size_t i = 0; i < bs_eterm_size(reason) && o + 1 < cap; i++) {
        const bs_eterm *part = bs_eterm_item(reason, i);
        char frame[1024];
        const char *text = bs_eterm_kind_of(part) == BS_ET_BINARY
                               ? bs_eterm_text(part)
                               : bs_term_frame(part, style_of(elixir), frame, sizeof frame);
        int w = snprintf(buf + o, cap - o, "%s", text);
        if (w < 0)
            break;
        o = o + (size_t)w < cap ? o + (size_t)w : cap - 1;
    }
    return buf;
}

const char *bs_dump_name(const char *name, int elixir, char *buf, size_t cap)
{
    bs_format_registered(buf, cap, style_of(elixir), name, strlen(name));
    return buf;
}
