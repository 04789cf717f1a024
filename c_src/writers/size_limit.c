/* size_limit.c — recursion folded by default where a file would be too big
 * for any viewer (see size_limit.h). */
#include "size_limit.h"

#include <errno.h>
#include <stdlib.h>

#include "../engine/collapse_recursion.h"
#include "output_size.h"

uint64_t bs_openable_bytes(void)
{
    const char *s = getenv("BEAMSPY_OPENABLE_BYTES");
    if (s && *s && s[0] != '-') {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (!errno && !*end && v > 0)
            return v;
    }
    return BS_OPENABLE_BYTES;
}

int bs_size_limit_applies(bs_format f)
{
    const bs_format_desc *d = bs_format_desc_of(f);
    return d && d->collapse_when_big;
}

int bs_fit_openable(bs_profile *p, bs_format f, const bs_render_opts *o, bs_write_report *r)
{
    if (o->full || o->collapse_recursion || !bs_size_limit_applies(f))
        return 0;
    uint64_t limit = o->openable_bytes ? o->openable_bytes : bs_openable_bytes();
    uint64_t bytes = bs_projected_bytes(f, p, o);
    if (bytes <= limit)
        return 0;
    r->full_bytes = bytes;
    const bs_collapse_mode modes[] = {BS_COLLAPSE_DIRECT, BS_COLLAPSE_ALL};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0] && bytes > limit; i++) {
        if (bs_profile_collapse_recursion_mode(p, modes[i]) < 0)
            return -1;
        r->auto_collapse = (int)modes[i];
        bytes = bs_projected_bytes(f, p, o);
    }
    r->openable_bytes = limit;
    r->projected_bytes = bytes;
    return 0;
}
