/* code_delivery.c — loading beamspy onto a node and removing it (see
 * code_delivery.h). Every step is a plain remote call of an OTP function,
 * so it works on a node that has nothing of beamspy. */
#include "code_delivery.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "call_args.h"
#include "payload.h"

/* The result of one call, decoded by the caller from r.buff at index. */
typedef struct call_result {
    ei_x_buff r;
    int index;
} call_result;

static bs_node_status call(bs_node *n, const char *mod, const char *fun, ei_x_buff *args, unsigned timeout_ms,
                           call_result *out, char *err, size_t err_size)
{
    bs_node_status st = bs_node_call(n, mod, fun, args, timeout_ms, &out->r, &out->index, err, err_size);
    ei_x_free(args);
    return st;
}

/* Decodes a string-or-list-of-bytes result into buf. */
static int decode_text(const call_result *c, char *buf, size_t size)
{
    int type, len, i = c->index;
    if (ei_get_type(c->r.buff, &i, &type, &len) < 0 || (size_t)len >= size)
        return -1;
    if (type == ERL_STRING_EXT)
        return ei_decode_string(c->r.buff, &i, buf);
    if (type == ERL_NIL_EXT) {
        buf[0] = '\0';
        return 0;
    }
    return -1;
}

static int decode_is_atom(const call_result *c, const char *atom)
{
    char a[MAXATOMLEN_UTF8];
    int i = c->index;
    return ei_decode_atom(c->r.buff, &i, a) == 0 && strcmp(a, atom) == 0;
}

/* "erlang:system_info(Item)" as text. */
static bs_node_status system_text(bs_node *n, const char *item, char *buf, size_t size, unsigned tmo, char *err,
                                  size_t err_size)
{
    ei_x_buff a;
    call_result c;
    if (bs_call_args(&a, "a", item) < 0)
        return BS_NODE_FAILED;
    bs_node_status st = call(n, "erlang", "system_info", &a, tmo, &c, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    if (decode_text(&c, buf, size) < 0) {
        snprintf(err, err_size, "unexpected answer to erlang:system_info(%s) from %s", item, n->name);
        st = BS_NODE_FAILED;
    }
    ei_x_free(&c.r);
    return st;
}

static bs_node_status wordsize(bs_node *n, long *out, unsigned tmo, char *err, size_t err_size)
{
    ei_x_buff a, t;
    call_result c;
    if (ei_x_new(&t) < 0 || ei_x_encode_tuple_header(&t, 2) < 0 || ei_x_encode_atom(&t, "wordsize") < 0 ||
        ei_x_encode_atom(&t, "external") < 0 || bs_call_args(&a, "t", &t) < 0) {
        ei_x_free(&t);
        return BS_NODE_FAILED;
    }
    ei_x_free(&t);
    bs_node_status st = call(n, "erlang", "system_info", &a, tmo, &c, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    int i = c.index;
    if (ei_decode_long(c.r.buff, &i, out) < 0) {
        snprintf(err, err_size, "unexpected word size from %s", n->name);
        st = BS_NODE_FAILED;
    }
    ei_x_free(&c.r);
    return st;
}

static void hex16(const unsigned char *md5, char *out)
{
    for (int i = 0; i < 16; i++)
        sprintf(out + 2 * i, "%02x", md5[i]);
}

/* What the node has of module m: 0 nothing, 1 the same version, 2 another
 * version (*from_file: loaded from a file it can be reloaded from). */
static bs_node_status module_state(bs_node *n, const bs_payload_module *m, int *state, int *from_file,
                                   unsigned tmo, char *err, size_t err_size)
{
    ei_x_buff a;
    call_result c;
    *state = 0;
    *from_file = 0;
    if (bs_call_args(&a, "a", m->name) < 0)
        return BS_NODE_FAILED;
    bs_node_status st = call(n, "code", "is_loaded", &a, tmo, &c, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    int i = c.index, arity, type, len;
    if (ei_decode_tuple_header(c.r.buff, &i, &arity) == 0 && arity == 2) {
        char tag[MAXATOMLEN_UTF8];
        if (ei_decode_atom(c.r.buff, &i, tag) == 0 && ei_get_type(c.r.buff, &i, &type, &len) == 0)
            *from_file = type == ERL_STRING_EXT || type == ERL_LIST_EXT;
        *state = 2;
    }
    ei_x_free(&c.r);
    if (*state == 0)
        return BS_NODE_OK;
    if (bs_call_args(&a, "a", "md5") < 0)
        return BS_NODE_FAILED;
    st = call(n, m->name, "module_info", &a, tmo, &c, err, err_size);
    if (st == BS_NODE_FAILED) { /* a module of that name that is not ours */
        *state = 2;
        return BS_NODE_OK;
    }
    if (st != BS_NODE_OK)
        return st;
    unsigned char md5[16];
    long got = 0;
    i = c.index;
    if (ei_get_type(c.r.buff, &i, &type, &len) == 0 && type == ERL_BINARY_EXT && len == 16 &&
        ei_decode_binary(c.r.buff, &i, md5, &got) == 0) {
        char hex[33];
        hex16(md5, hex);
        if (strcmp(hex, m->md5_hex) == 0)
            *state = 1;
    }
    ei_x_free(&c.r);
    return BS_NODE_OK;
}

/* A directory name nobody can guess: <TMPDIR or /tmp>/beamspy-<random>. */
static bs_node_status private_dir_name(bs_node *n, char *dir, size_t size, unsigned tmo, char *err,
                                       size_t err_size)
{
    ei_x_buff a;
    call_result c;
    char base[1024] = "/tmp";
    if (bs_call_args(&a, "s", "TMPDIR") < 0)
        return BS_NODE_FAILED;
    bs_node_status st = call(n, "os", "getenv", &a, tmo, &c, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    if (decode_text(&c, base, sizeof base) < 0 || base[0] != '/')
        snprintf(base, sizeof base, "/tmp");
    ei_x_free(&c.r);
    unsigned char rnd[12] = {0};
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, rnd, sizeof rnd) != (ssize_t)sizeof rnd) {
        if (fd >= 0)
            close(fd);
        snprintf(err, err_size, "cannot read /dev/urandom");
        return BS_NODE_FAILED;
    }
    close(fd);
    char hex[25];
    for (int i = 0; i < 12; i++)
        sprintf(hex + 2 * i, "%02x", rnd[i]);
    snprintf(dir, size, "%s/beamspy-%s", base, hex);
    return BS_NODE_OK;
}

/* mod:fun(...) that must return ok. */
static bs_node_status call_ok(bs_node *n, const char *mod, const char *fun, ei_x_buff *args, unsigned tmo,
                              const char *what, char *err, size_t err_size)
{
    call_result c;
    bs_node_status st = call(n, mod, fun, args, tmo, &c, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    if (!decode_is_atom(&c, "ok")) {
        char *text = NULL;
        int i = c.index;
        ei_s_print_term(&text, c.r.buff, &i);
        snprintf(err, err_size, "%s on %s failed: %.200s", what, n->name, text ? text : "?");
        free(text);
        st = BS_NODE_FAILED;
    }
    ei_x_free(&c.r);
    return st;
}

/* Loads module m from the payload, under a file name in dir/ebin (nothing
 * is written there: the name only tells the module where it came from). */
static bs_node_status load_module(bs_node *n, const bs_payload_module *m, const char *dir, unsigned tmo, char *err,
                                  size_t err_size)
{
    ei_x_buff a;
    call_result c;
    char path[2048];
    snprintf(path, sizeof path, "%s/ebin/%s.beam", dir, m->name);
    if (bs_call_args(&a, "a", m->name) < 0)
        return BS_NODE_FAILED;
    bs_node_status st = call(n, "code", "purge", &a, tmo, &c, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    ei_x_free(&c.r);
    if (bs_call_args(&a, "asb", m->name, path, (const void *)m->start, (size_t)(m->end - m->start)) < 0)
        return BS_NODE_FAILED;
    st = call(n, "code", "load_binary", &a, tmo, &c, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    int i = c.index, arity;
    char tag[MAXATOMLEN_UTF8];
    if (ei_decode_tuple_header(c.r.buff, &i, &arity) < 0 || arity != 2 || ei_decode_atom(c.r.buff, &i, tag) < 0 ||
        strcmp(tag, "module") != 0) {
        char *text = NULL;
        int j = c.index;
        ei_s_print_term(&text, c.r.buff, &j);
        snprintf(err, err_size, "loading %s on %s failed: %.200s", m->name, n->name, text ? text : "?");
        free(text);
        st = BS_NODE_FAILED;
    }
    ei_x_free(&c.r);
    return st;
}

/* Removes the NIF file and the private directory (whatever exists). */
static void remove_private_files(bs_node *n, const char *dir, unsigned tmo)
{
    char path[2048], err[256];
    ei_x_buff a;
    call_result c;
    const char *steps[][2] = {{"delete", "/priv/beamspy_nif.so"}, {"del_dir", "/priv"}, {"del_dir", ""}};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s%s", dir, steps[i][1]);
        if (bs_call_args(&a, "s", path) < 0)
            continue;
        if (call(n, "file", steps[i][0], &a, tmo, &c, err, sizeof err) == BS_NODE_OK)
            ei_x_free(&c.r);
    }
    if (bs_call_args(&a, "aa", "beamspy", "nif_dir") == 0 &&
        call(n, "application", "unset_env", &a, tmo, &c, err, sizeof err) == BS_NODE_OK)
        ei_x_free(&c.r);
}

/* Writes the NIF library to dir/priv and points beamspy_tracer at it. */
static bs_node_status place_nif(bs_node *n, const char *dir, unsigned tmo, char *err, size_t err_size)
{
    char path[2048];
    ei_x_buff a;
    bs_node_status st;
    if (bs_call_args(&a, "s", dir) < 0)
        return BS_NODE_FAILED;
    if ((st = call_ok(n, "file", "make_dir", &a, tmo, "creating a temporary directory", err, err_size)))
        return st;
    if (bs_call_args(&a, "si", dir, 0700LL) < 0)
        return BS_NODE_FAILED;
    if ((st = call_ok(n, "file", "change_mode", &a, tmo, "protecting the temporary directory", err, err_size)))
        return st;
    snprintf(path, sizeof path, "%s/priv", dir);
    if (bs_call_args(&a, "s", path) < 0)
        return BS_NODE_FAILED;
    if ((st = call_ok(n, "file", "make_dir", &a, tmo, "creating a temporary directory", err, err_size)))
        return st;
    snprintf(path, sizeof path, "%s/priv/beamspy_nif.so", dir);
    if (bs_call_args(&a, "sb", path, (const void *)bs_payload_nif_start,
                     (size_t)(bs_payload_nif_stop - bs_payload_nif_start)) < 0)
        return BS_NODE_FAILED;
    if ((st = call_ok(n, "file", "write_file", &a, tmo, "writing the NIF library", err, err_size)))
        return st;
    snprintf(path, sizeof path, "%s/priv", dir);
    if (bs_call_args(&a, "aas", "beamspy", "nif_dir", path) < 0)
        return BS_NODE_FAILED;
    return call_ok(n, "application", "set_env", &a, tmo, "setting beamspy's nif_dir", err, err_size);
}

static double elapsed_ms(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

bs_node_status bs_deliver_code(bs_node *n, bs_delivery *d, unsigned tmo, char *err, size_t err_size)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(d, 0, sizeof *d);
    bs_node_status st = system_text(n, "otp_release", d->otp_release, sizeof d->otp_release, tmo, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    if (atoi(d->otp_release) < BS_MIN_OTP_RELEASE) {
        snprintf(err, err_size, "node %s runs OTP %s, too old: beamspy needs OTP %d or later", n->name,
                 d->otp_release, BS_MIN_OTP_RELEASE);
        return BS_NODE_INCOMPATIBLE;
    }
    unsigned need[BS_DELIVERY_MAX_MODULES];
    int reload[BS_DELIVERY_MAX_MODULES];
    unsigned n_need = 0;
    int nif_needed = 0;
    for (unsigned i = 0; i < bs_payload_module_count && i < BS_DELIVERY_MAX_MODULES; i++) {
        int state, from_file;
        st = module_state(n, &bs_payload_modules[i], &state, &from_file, tmo, err, err_size);
        if (st != BS_NODE_OK)
            return st;
        if (state != 1) {
            reload[n_need] = state == 2 && from_file;
            need[n_need++] = i;
            if (strcmp(bs_payload_modules[i].name, "beamspy_tracer") == 0)
                nif_needed = 1;
        }
    }
    if (n_need == 0) {
        d->load_ms = elapsed_ms(&t0);
        return BS_NODE_OK;
    }
    char arch[256];
    long words = 0;
    if ((st = system_text(n, "system_architecture", arch, sizeof arch, tmo, err, err_size)) ||
        (st = wordsize(n, &words, tmo, err, err_size)))
        return st;
    if (strcmp(d->otp_release, bs_payload_otp_release) != 0 || strcmp(arch, bs_payload_arch) != 0 ||
        words != bs_payload_wordsize) {
        snprintf(err, err_size,
                 "node %s runs OTP %s on %s (%ld-bit) but this beamspy was built for OTP %s on %s (%d-bit): "
                 "its code cannot be loaded there (install beamspy on the node, or use a beamspy built for it)",
                 n->name, d->otp_release, arch, words * 8, bs_payload_otp_release, bs_payload_arch,
                 bs_payload_wordsize * 8);
        return BS_NODE_INCOMPATIBLE;
    }
    char dir[1100];
    if ((st = private_dir_name(n, dir, sizeof dir, tmo, err, err_size)))
        return st;
    if (nif_needed && (st = place_nif(n, dir, tmo, err, err_size)) != BS_NODE_OK) {
        remove_private_files(n, dir, tmo);
        return st;
    }
    for (unsigned k = 0; k < n_need && st == BS_NODE_OK; k++) {
        st = load_module(n, &bs_payload_modules[need[k]], dir, tmo, err, err_size);
        if (st == BS_NODE_OK) {
            d->loaded[d->n_loaded] = need[k];
            d->reload[d->n_loaded++] = reload[k];
        }
    }
    if (nif_needed)
        remove_private_files(n, dir, tmo);
    if (st != BS_NODE_OK) {
        char ignored[256];
        bs_remove_code(n, d, tmo, ignored, sizeof ignored);
        d->n_loaded = 0;
    }
    d->load_ms = elapsed_ms(&t0);
    return st;
}

bs_node_status bs_remove_code(bs_node *n, const bs_delivery *d, unsigned tmo, char *err, size_t err_size)
{
    static const char *const steps[] = {"purge", "delete", "purge"};
    bs_node_status worst = BS_NODE_OK;
    for (unsigned k = 0; k < d->n_loaded; k++) {
        const char *name = bs_payload_modules[d->loaded[k]].name;
        for (size_t s = 0; s < 3; s++) {
            ei_x_buff a;
            call_result c;
            if (bs_call_args(&a, "a", name) < 0)
                return BS_NODE_FAILED;
            bs_node_status st = call(n, "code", steps[s], &a, tmo, &c, err, err_size);
            if (st == BS_NODE_OK)
                ei_x_free(&c.r);
            else if (worst == BS_NODE_OK)
                worst = st;
            if (st == BS_NODE_LOST || st == BS_NODE_TIMEOUT)
                return st;
        }
        if (d->reload[k]) {
            ei_x_buff a;
            call_result c;
            if (bs_call_args(&a, "a", name) == 0 &&
                call(n, "code", "load_file", &a, tmo, &c, err, err_size) == BS_NODE_OK)
                ei_x_free(&c.r);
        }
    }
    return worst;
}

int bs_delivery_encode_modules(const bs_delivery *d, ei_x_buff *x)
{
    if (d->n_loaded && ei_x_encode_list_header(x, d->n_loaded) < 0)
        return -1;
    for (unsigned k = 0; k < d->n_loaded; k++)
        if (ei_x_encode_atom(x, bs_payload_modules[d->loaded[k]].name) < 0)
            return -1;
    return ei_x_encode_empty_list(x);
}
