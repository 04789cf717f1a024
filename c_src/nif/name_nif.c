/* name_nif.c — beamspy_tracer:frame_name/2, the one speller of frames and
 * process labels (frame_name.h) offered to Erlang, and atom texts and
 * labels for the NIF (see name_nif.h). */
#include "name_nif.h"

#include <string.h>


/* Atom text as UTF-8. OTP 25's enif_get_atom only speaks latin-1; atoms with
 * characters beyond it fall back to the printed form without quotes. */
size_t bs_nif_atom_text(ErlNifEnv *env, ERL_NIF_TERM atom, char *buf, size_t cap)
{
    char latin1[512];
    int n = enif_get_atom(env, atom, latin1, sizeof latin1, ERL_NIF_LATIN1);
    if (n > 0) {
        size_t o = 0;
        for (int i = 0; i < n - 1 && o + 2 < cap; i++) {
            unsigned char c = (unsigned char)latin1[i];
            if (c < 0x80) {
                buf[o++] = (char)c;
            } else {
                buf[o++] = (char)(0xC0 | (c >> 6));
                buf[o++] = (char)(0x80 | (c & 0x3F));
            }
        }
        buf[o] = '\0';
        return o;
    }
    int m = enif_snprintf(buf, cap, "%T", atom);
    if (m <= 0)
        return 0;
    size_t len = (size_t)m < cap ? (size_t)m : cap - 1;
    if (len >= 2 && buf[0] == '\'' && buf[len - 1] == '\'') {
        memmove(buf, buf + 1, len - 2);
        len -= 2;
        buf[len] = '\0';
    }
    return len;
}

/* {M, F, Arity} or {M, F, Args}: its atoms' texts and arity; 0 if it is not one. */
static int get_mfa(ErlNifEnv *env, ERL_NIF_TERM t, char *mod, size_t *ml, char *fun, size_t *fl, size_t cap,
                   unsigned *arity)
{
    const ERL_NIF_TERM *mfa;
    int n = 0;
    if (!enif_get_tuple(env, t, &n, &mfa) || n != 3 || !enif_is_atom(env, mfa[0]) || !enif_is_atom(env, mfa[1]))
        return 0;
    if ((!enif_get_uint(env, mfa[2], arity) && !enif_get_list_length(env, mfa[2], arity)) || *arity > 255)
        return 0;
    *ml = bs_nif_atom_text(env, mfa[0], mod, cap);
    *fl = bs_nif_atom_text(env, mfa[1], fun, cap);
    return 1;
}

size_t bs_nif_label(ErlNifEnv *env, ERL_NIF_TERM label, bs_name_style style, char *buf, size_t cap)
{
    const ERL_NIF_TERM *t;
    int n = 0;
    ErlNifBinary pid;
    char mod[512], fun[512];
    size_t ml = 0, fl = 0;
    unsigned arity = 0;
    if (!enif_get_tuple(env, label, &n, &t) || n != 2 || !enif_inspect_binary(env, t[0], &pid))
        return 0;
    if (enif_is_empty_list(env, t[1]))
        return bs_format_label(buf, cap, style, (const char *)pid.data, pid.size, NULL, 0, NULL, 0, 0);
    if (enif_is_atom(env, t[1])) {
        ml = bs_nif_atom_text(env, t[1], mod, sizeof mod);
        return bs_format_label(buf, cap, style, (const char *)pid.data, pid.size, mod, ml, NULL, 0, 0);
    }
    if (get_mfa(env, t[1], mod, &ml, fun, &fl, sizeof mod, &arity))
        return bs_format_label(buf, cap, style, (const char *)pid.data, pid.size, mod, ml, fun, fl, arity);
    return 0;
}

size_t bs_nif_process_name(ErlNifEnv *env, ERL_NIF_TERM who, bs_name_style style, char *buf, size_t cap)
{
    char mod[512], fun[512];
    size_t ml = 0, fl = 0;
    unsigned arity = 0;
    if (enif_is_atom(env, who)) {
        ml = bs_nif_atom_text(env, who, mod, sizeof mod);
        return bs_format_registered(buf, cap, style, mod, ml);
    }
    if (get_mfa(env, who, mod, &ml, fun, &fl, sizeof mod, &arity))
        return bs_format_mfa(buf, cap, style, mod, ml, fun, fl, arity);
    return 0;
}

ERL_NIF_TERM bs_nif_frame_name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    char style_name[16], name[1024];
    if (enif_get_atom(env, argv[1], style_name, sizeof style_name, ERL_NIF_LATIN1) <= 0 ||
        (strcmp(style_name, "erlang") != 0 && strcmp(style_name, "elixir") != 0))
        return enif_make_badarg(env);
    bs_name_style style = strcmp(style_name, "elixir") == 0 ? BS_NAMES_ELIXIR : BS_NAMES_ERLANG;
    size_t len, ml, fl;
    unsigned arity = 0;
    char mod[512], fun[512];
    ErlNifBinary text;
    if (get_mfa(env, argv[0], mod, &ml, fun, &fl, sizeof mod, &arity)) {
        len = bs_format_mfa(name, sizeof name, style, mod, ml, fun, fl, arity);
    } else if (enif_is_tuple(env, argv[0])) {
        len = bs_nif_label(env, argv[0], style, name, sizeof name);
        if (len == 0)
            return enif_make_badarg(env);
    } else if (enif_inspect_iolist_as_binary(env, argv[0], &text)) {
        len = bs_sanitize_name(name, sizeof name, (const char *)text.data, text.size);
    } else {
        return enif_make_badarg(env);
    }
    ERL_NIF_TERM out;
    unsigned char *dst = enif_make_new_binary(env, len, &out);
    if (!dst)
        return enif_make_badarg(env);
    memcpy(dst, name, len);
    return out;
}
