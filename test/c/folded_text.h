/* folded_text.h — folded stacks given as text read into a profile by the
 * real folded reader, for the C tests that build their profiles that way
 * (header only; fails the calling cmocka case if the text does not read). */
#ifndef BS_FOLDED_TEXT_H
#define BS_FOLDED_TEXT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine/profile.h"
#include "readers/readers.h"

static inline void read_folded_text(const char *text, bs_profile *p)
{
    FILE *in = fmemopen((void *)text, strlen(text), "rb");
    assert_non_null(in);
    bs_read_error err;
    memset(&err, 0, sizeof err);
    assert_int_equal(bs_read_folded(in, "test", p, &err), 0);
    fclose(in);
}

#endif
