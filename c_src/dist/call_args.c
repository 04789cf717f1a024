/* call_args.c — argument lists for remote calls (see call_args.h). */
#include "call_args.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int bs_call_args(ei_x_buff *x, const char *spec, ...)
{
    if (ei_x_new(x) < 0)
        return -1;
    va_list ap;
    va_start(ap, spec);
    int rc = 0;
    size_t n = strlen(spec);
    if (n > 0 && ei_x_encode_list_header(x, (long)n) < 0)
        rc = -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        switch (spec[i]) {
        case 'a':
            rc = ei_x_encode_atom(x, va_arg(ap, const char *));
            break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            rc = ei_x_encode_string_len(x, s, (int)strlen(s));
            break;
        }
        case 'b': {
            const void *p = va_arg(ap, const void *);
            size_t len = va_arg(ap, size_t);
            rc = ei_x_encode_binary(x, p, (long)len);
            break;
        }
        case 'i':
            rc = ei_x_encode_longlong(x, va_arg(ap, long long));
            break;
        case 'p':
            rc = ei_x_encode_pid(x, va_arg(ap, const erlang_pid *));
            break;
        case 't': {
            const ei_x_buff *t = va_arg(ap, const ei_x_buff *);
            rc = ei_x_append_buf(x, t->buff, t->index);
            break;
        }
        case 'f': {
            erlang_fun f;
            memset(&f, 0, sizeof f);
            const char *mod = va_arg(ap, const char *), *fun = va_arg(ap, const char *);
            f.arity = va_arg(ap, int);
            f.type = EI_FUN_EXPORT;
            snprintf(f.module, sizeof f.module, "%s", mod);
            f.u.exprt.func = (char *)fun;
            rc = ei_x_encode_fun(x, &f);
            break;
        }
        case 'A': {
            const char *const *names = va_arg(ap, const char *const *);
            unsigned count = va_arg(ap, unsigned);
            if (count && ei_x_encode_list_header(x, count) < 0)
                rc = -1;
            for (unsigned k = 0; k < count && rc == 0; k++)
                rc = ei_x_encode_atom(x, names[k]);
            if (rc == 0)
                rc = ei_x_encode_empty_list(x);
            break;
        }
        default:
            rc = -1;
        }
    }
    if (rc == 0 && ei_x_encode_empty_list(x) < 0)
        rc = -1;
    va_end(ap);
    if (rc < 0) {
        ei_x_free(x);
        return -1;
    }
    return 0;
}
