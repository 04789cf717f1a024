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
#include "eterm.h"
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

/* Which of beamspy's modules the node has loaded (code:all_loaded/0, one
 * call), and whether each came from a file (so it can be reloaded). */
static bs_node_status loaded_modules(bs_node *n, int loaded[], int from_file[], unsigned tmo, char *err,
                                     size_t err_size)
{
    ei_x_buff a;
    call_result c;
    if (bs_call_args(&a, "") < 0)
        return BS_NODE_FAILED;
    bs_node_status st = call(n, "code", "all_loaded", &a, tmo, &c, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    int i = c.index, len = 0, arity, type, size;
    if (ei_decode_list_header(c.r.buff, &i, &len) < 0)
        len = 0;
    for (int k = 0; k < len; k++) {
        char mod[MAXATOMLEN_UTF8];
        if (ei_decode_tuple_header(c.r.buff, &i, &arity) < 0 || arity != 2 || ei_decode_atom(c.r.buff, &i, mod) < 0 ||
            ei_get_type(c.r.buff, &i, &type, &size) < 0)
            break;
        for (unsigned m = 0; m < bs_payload_module_count && m < BS_DELIVERY_MAX_MODULES; m++)
            if (strcmp(mod, bs_payload_modules[m].name) == 0) {
                loaded[m] = 1;
                from_file[m] = type == ERL_STRING_EXT || type == ERL_LIST_EXT;
            }
        char file[8];
        if (bs_eterm_describe(c.r.buff, c.r.index, &i, file, sizeof file) < 0) /* skipped: not recursive */
            break;
    }
    ei_x_free(&c.r);
    return BS_NODE_OK;
}

/* Marks same[m] for the loaded modules whose MD5 equals the payload's:
 * lists:zipwith(fun erlang:get_module_info/2, Modules, [md5, ...]), one
 * call. A module unloaded meanwhile fails the call: then none is "same". */
static bs_node_status same_versions(bs_node *n, const int loaded[], int same[], unsigned tmo, char *err,
                                    size_t err_size)
{
    const char *mods[BS_DELIVERY_MAX_MODULES], *md5[BS_DELIVERY_MAX_MODULES];
    unsigned idx[BS_DELIVERY_MAX_MODULES], count = 0;
    for (unsigned m = 0; m < bs_payload_module_count && m < BS_DELIVERY_MAX_MODULES; m++)
        if (loaded[m]) {
            idx[count] = m;
            md5[count] = "md5";
            mods[count++] = bs_payload_modules[m].name;
        }
    if (count == 0)
        return BS_NODE_OK;
    ei_x_buff a;
    call_result c;
    if (bs_call_args(&a, "fAA", "erlang", "get_module_info", 2, mods, count, md5, count) < 0)
        return BS_NODE_FAILED;
    bs_node_status st = call(n, "lists", "zipwith", &a, tmo, &c, err, err_size);
    if (st == BS_NODE_FAILED)
        return BS_NODE_OK;
    if (st != BS_NODE_OK)
        return st;
    int i = c.index, len = 0, type, size;
    if (ei_decode_list_header(c.r.buff, &i, &len) == 0 && (unsigned)len == count)
        for (unsigned k = 0; k < count; k++) {
            unsigned char digest[16];
            long got = 0;
            if (ei_get_type(c.r.buff, &i, &type, &size) < 0 || type != ERL_BINARY_EXT || size != 16 ||
                ei_decode_binary(c.r.buff, &i, digest, &got) < 0)
                break;
            char hex[33];
            hex16(digest, hex);
            same[idx[k]] = strcmp(hex, bs_payload_modules[idx[k]].md5_hex) == 0;
        }
    ei_x_free(&c.r);
    return BS_NODE_OK;
}

/* lists:foreach(fun code:F/1, Modules): one call for all. */
static bs_node_status for_each_module(bs_node *n, const char *code_fun, const char *const *mods, unsigned count,
                                      unsigned tmo, char *err, size_t err_size)
{
    ei_x_buff a;
    call_result c;
    if (count == 0)
        return BS_NODE_OK;
    if (bs_call_args(&a, "fA", "code", code_fun, 1, mods, count) < 0)
        return BS_NODE_FAILED;
    bs_node_status st = call(n, "lists", "foreach", &a, tmo, &c, err, err_size);
    if (st == BS_NODE_OK)
        ei_x_free(&c.r);
    return st;
}

/* Prints an unexpected result into err. */
static void unexpected(const call_result *c, const char *what, const char *node, char *err, size_t err_size)
{
    char text[201];
    int i = c->index;
    (void)bs_eterm_describe(c->r.buff, c->r.index, &i, text, sizeof text);
    snprintf(err, err_size, "%s on %s failed: %s", what, node, text);
}

/* Loads the modules `load` (indexes into the payload) under file names in
 * dir/ebin (nothing is written there: the name tells a module where it
 * came from). All but beamspy_tracer at once with code:atomic_load/1;
 * beamspy_tracer (it has an on_load function, which atomic_load refuses)
 * with code:load_binary/3. */
static bs_node_status load_modules(bs_node *n, const unsigned *load, unsigned count, const char *dir,
                                   unsigned tmo, char *err, size_t err_size)
{
    ei_x_buff list, a;
    call_result c;
    char path[2048];
    int tracer = -1, plain = 0;
    if (ei_x_new(&list) < 0)
        return BS_NODE_FAILED;
    for (unsigned k = 0; k < count; k++) {
        const bs_payload_module *m = &bs_payload_modules[load[k]];
        if (strcmp(m->name, "beamspy_tracer") == 0) {
            tracer = (int)load[k];
            continue;
        }
        snprintf(path, sizeof path, "%s/ebin/%s.beam", dir, m->name);
        if (ei_x_encode_list_header(&list, 1) < 0 || ei_x_encode_tuple_header(&list, 3) < 0 ||
            ei_x_encode_atom(&list, m->name) < 0 || ei_x_encode_string(&list, path) < 0 ||
            ei_x_encode_binary(&list, m->start, (long)(m->end - m->start)) < 0) {
            ei_x_free(&list);
            return BS_NODE_FAILED;
        }
        plain++;
    }
    bs_node_status st = BS_NODE_OK;
    if (plain) {
        if (ei_x_encode_empty_list(&list) < 0 || bs_call_args(&a, "t", &list) < 0) {
            ei_x_free(&list);
            return BS_NODE_FAILED;
        }
        st = call(n, "code", "atomic_load", &a, tmo, &c, err, err_size);
        if (st == BS_NODE_OK) {
            if (!decode_is_atom(&c, "ok")) {
                unexpected(&c, "loading beamspy's modules", n->name, err, err_size);
                st = BS_NODE_FAILED;
            }
            ei_x_free(&c.r);
        }
    }
    ei_x_free(&list);
    if (st != BS_NODE_OK || tracer < 0)
        return st;
    const bs_payload_module *m = &bs_payload_modules[tracer];
    snprintf(path, sizeof path, "%s/ebin/%s.beam", dir, m->name);
    if (bs_call_args(&a, "asb", m->name, path, (const void *)m->start, (size_t)(m->end - m->start)) < 0)
        return BS_NODE_FAILED;
    st = call(n, "code", "load_binary", &a, tmo, &c, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    int i = c.index, arity;
    char tag[MAXATOMLEN_UTF8];
    if (ei_decode_tuple_header(c.r.buff, &i, &arity) < 0 || arity != 2 || ei_decode_atom(c.r.buff, &i, tag) < 0 ||
        strcmp(tag, "module") != 0) {
        unexpected(&c, "loading beamspy's NIF module", n->name, err, err_size);
        st = BS_NODE_FAILED;
    }
    ei_x_free(&c.r);
    return st;
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
        unexpected(&c, what, n->name, err, err_size);
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
    const char *steps[][2] = {{"delete", "/beamspy_nif.so"}, {"del_dir", ""}};
    for (size_t i = 0; i < 2; i++) {
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

/* Writes the NIF library to dir and points beamspy_tracer at it. */
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
    snprintf(path, sizeof path, "%s/beamspy_nif.so", dir);
    if (bs_call_args(&a, "sb", path, (const void *)bs_payload_nif_start,
                     (size_t)(bs_payload_nif_stop - bs_payload_nif_start)) < 0)
        return BS_NODE_FAILED;
    if ((st = call_ok(n, "file", "write_file", &a, tmo, "writing the NIF library", err, err_size)))
        return st;
    if (bs_call_args(&a, "aas", "beamspy", "nif_dir", dir) < 0)
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
    int loaded[BS_DELIVERY_MAX_MODULES] = {0}, from_file[BS_DELIVERY_MAX_MODULES] = {0};
    int same[BS_DELIVERY_MAX_MODULES] = {0};
    if ((st = loaded_modules(n, loaded, from_file, tmo, err, err_size)) ||
        (st = same_versions(n, loaded, same, tmo, err, err_size)))
        return st;
    unsigned need[BS_DELIVERY_MAX_MODULES], n_need = 0;
    const char *names[BS_DELIVERY_MAX_MODULES];
    int nif_needed = 0;
    for (unsigned m = 0; m < bs_payload_module_count && m < BS_DELIVERY_MAX_MODULES; m++)
        if (!same[m]) {
            names[n_need] = bs_payload_modules[m].name;
            need[n_need++] = m;
            nif_needed |= strcmp(bs_payload_modules[m].name, "beamspy_tracer") == 0;
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
    /* Old code of another version would make loading fail: purged first. */
    st = for_each_module(n, "purge", names, n_need, tmo, err, err_size);
    if (st == BS_NODE_OK)
        st = load_modules(n, need, n_need, dir, tmo, err, err_size);
    if (nif_needed)
        remove_private_files(n, dir, tmo);
    for (unsigned k = 0; k < n_need; k++) {
        d->loaded[k] = need[k];
        d->reload[k] = loaded[need[k]] && from_file[need[k]];
    }
    d->n_loaded = n_need;
    if (st != BS_NODE_OK) {
        /* A delivery that failed halfway: nothing of it runs yet. */
        static const char *const steps[] = {"purge", "delete", "purge"};
        char ignored[256];
        for (size_t k = 0; k < 3; k++)
            (void)for_each_module(n, steps[k], names, n_need, tmo, ignored, sizeof ignored);
        d->n_loaded = 0;
    }
    d->load_ms = elapsed_ms(&t0);
    return st;
}

/* Until no unload of beamspy holds the node's lock (the registered name
 * beamspy_unloading, taken by whoever removes beamspy's code), at most
 * tmo ms: erlang:whereis/1 every 50 ms. */
static bs_node_status await_unload(bs_node *n, unsigned tmo, char *err, size_t err_size)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        ei_x_buff a;
        call_result c;
        if (bs_call_args(&a, "a", "beamspy_unloading") < 0)
            return BS_NODE_FAILED;
        bs_node_status st = call(n, "erlang", "whereis", &a, tmo, &c, err, err_size);
        if (st != BS_NODE_OK)
            return st;
        int over = decode_is_atom(&c, "undefined");
        ei_x_free(&c.r);
        if (over)
            return BS_NODE_OK;
        if (elapsed_ms(&t0) > tmo) {
            snprintf(err, err_size, "beamspy's code was being removed from %s for more than %u ms", n->name, tmo);
            return BS_NODE_TIMEOUT;
        }
        struct timespec pause = {0, 50 * 1000000L};
        nanosleep(&pause, NULL);
    }
}

bs_node_status bs_redeliver_code(bs_node *n, bs_delivery *d, unsigned tmo, char *err, size_t err_size)
{
    bs_delivery before = *d;
    bs_node_status st = await_unload(n, tmo, err, err_size);
    if (st == BS_NODE_OK)
        st = bs_deliver_code(n, d, tmo, err, err_size);
    /* What the first delivery loaded is the tool's to remove as well. */
    for (unsigned k = 0; k < before.n_loaded; k++) {
        unsigned m = before.loaded[k], have = 0;
        while (have < d->n_loaded && d->loaded[have] != m)
            have++;
        if (have == d->n_loaded && d->n_loaded < BS_DELIVERY_MAX_MODULES) {
            d->loaded[d->n_loaded] = m;
            d->reload[d->n_loaded++] = before.reload[k];
        } else if (have < d->n_loaded) {
            d->reload[have] = before.reload[k];
        }
    }
    d->load_ms += before.load_ms;
    return st;
}

bs_node_status bs_remove_code(bs_node *n, const bs_delivery *d, unsigned tmo, int *deferred, char *err,
                              size_t err_size)
{
    const char *names[BS_DELIVERY_MAX_MODULES];
    *deferred = 0;
    for (unsigned k = 0; k < d->n_loaded; k++)
        names[k] = bs_payload_modules[d->loaded[k]].name;
    if (d->n_loaded == 0)
        return BS_NODE_OK;
    /* The node removes the code itself, and only when no beamspy job runs
     * there (whoever started it): else the last job to end removes it
     * (beamspy_agent:release/1). It never kills: old code still run by a
     * process is purged by the node once the process leaves it. The call
     * may wait for jobs that are ending (5 s) and for another unload
     * (20 s): its own time on top of the tool's. */
    ei_x_buff a;
    call_result c;
    if (bs_call_args(&a, "A", names, d->n_loaded) < 0)
        return BS_NODE_FAILED;
    bs_node_status st = call(n, "beamspy_agent", "release", &a, tmo + 30000u, &c, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    int unloaded = decode_is_atom(&c, "unloaded");
    *deferred = decode_is_atom(&c, "deferred");
    if (!unloaded && !*deferred) {
        if (decode_is_atom(&c, "busy"))
            snprintf(err, err_size, "another unload of beamspy was in progress on %s for 20 s: beamspy's code was "
                     "left there", n->name);
        else
            unexpected(&c, "removing beamspy's code", n->name, err, err_size);
        ei_x_free(&c.r);
        return BS_NODE_FAILED;
    }
    ei_x_free(&c.r);
    if (*deferred)
        return BS_NODE_OK;
    /* The node's own version of a module we replaced comes back. */
    for (unsigned k = 0; k < d->n_loaded; k++)
        if (d->reload[k]) {
            if (bs_call_args(&a, "a", names[k]) == 0 && call(n, "code", "load_file", &a, tmo, &c, err, err_size) == BS_NODE_OK)
                ei_x_free(&c.r);
        }
    return BS_NODE_OK;
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
