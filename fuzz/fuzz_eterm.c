/* fuzz_eterm.c — libFuzzer target for the external-term-format decoder
 * (dist/eterm.h).
 *
 * Any input either fails with a one-line message whose offset lies inside
 * the input, or decodes into a tree that walks cleanly (every text
 * NUL-terminated, sizes and items consistent, depth and memory within their
 * caps) and prints, under several caps, as printable UTF-8 no longer than the
 * cap. A tree without OTHER terms, encoded again with ei_x_encode_* and
 * decoded, prints the same. A leading 131 selects bs_eterm_decode_versioned;
 * after a term, the rest of the input is decoded as further terms (up to 4).
 * The input is copied to the end of a page followed by an unreadable one:
 * libei is not instrumented, so a read past the input has to crash to be
 * seen. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <ei.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dist/eterm.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Walks t: every accessor agrees with every other; returns the terms seen. */
static size_t walk(const bs_eterm *t, unsigned depth, int *has_other)
{
    CHECK(t != NULL && depth <= BS_ETERM_MAX_DEPTH);
    bs_eterm_kind k = bs_eterm_kind_of(t);
    CHECK(k >= BS_ET_INT && k <= BS_ET_OTHER);
    CHECK(strcmp(bs_eterm_kind_name(k), "") != 0);
    int ok;
    bs_eterm_int(t, &ok);
    CHECK(ok == (k == BS_ET_INT));
    bs_eterm_float(t, &ok);
    CHECK(ok == (k == BS_ET_FLOAT));
    const char *text = bs_eterm_text(t);
    CHECK((text != NULL) == (k == BS_ET_ATOM || k == BS_ET_BINARY || k == BS_ET_STRING));
    if (text)
        CHECK(text[bs_eterm_text_len(t)] == '\0');
    CHECK((bs_eterm_pid_of(t) != NULL) == (k == BS_ET_PID));
    if (k == BS_ET_PID)
        CHECK(bs_eterm_pid_of(t)->node != NULL);
    CHECK((bs_eterm_other_kind(t) != BS_ET_OTHER_NONE) == (k == BS_ET_OTHER));
    if (k == BS_ET_OTHER)
        *has_other = 1;
    size_t n = bs_eterm_size(t), seen = 1;
    size_t items = k == BS_ET_MAP ? 2 * n : n;
    CHECK(n == 0 || k == BS_ET_TUPLE || k == BS_ET_LIST || k == BS_ET_MAP);
    for (size_t i = 0; i < items; i++)
        seen += walk(bs_eterm_item(t, i), depth + 1, has_other);
    CHECK(bs_eterm_item(t, items) == NULL);
    if (k == BS_ET_MAP) {
        for (size_t i = 0; i < n; i++) {
            const bs_eterm *key = bs_eterm_map_key(t, i);
            CHECK(key == bs_eterm_item(t, 2 * i) && bs_eterm_map_value(t, i) == bs_eterm_item(t, 2 * i + 1));
            /* a key without NULs is found (maybe in an earlier pair with the same name) */
            if ((bs_eterm_kind_of(key) == BS_ET_ATOM || bs_eterm_kind_of(key) == BS_ET_BINARY) &&
                strlen(bs_eterm_text(key)) == bs_eterm_text_len(key))
                CHECK(bs_eterm_map_get(t, bs_eterm_text(key)) != NULL);
        }
    }
    const bs_eterm *tail = bs_eterm_tail(t);
    if (tail) {
        CHECK(k == BS_ET_LIST && n > 0);
        CHECK(!(bs_eterm_kind_of(tail) == BS_ET_LIST && bs_eterm_size(tail) == 0 && !bs_eterm_tail(tail)));
        seen += walk(tail, depth + 1, has_other);
    }
    if (k == BS_ET_TUPLE && n == 2 && bs_eterm_kind_of(bs_eterm_item(t, 0)) == BS_ET_ATOM &&
        strlen(bs_eterm_text(bs_eterm_item(t, 0))) == bs_eterm_text_len(bs_eterm_item(t, 0)))
        CHECK(bs_eterm_tagged(t, bs_eterm_text(bs_eterm_item(t, 0))) == bs_eterm_item(t, 1));
    return seen;
}

/* t encoded again with libei; -1 when libei refuses (non-finite floats,
 * atoms it will not encode) or t holds OTHER terms. */
static int encode(ei_x_buff *x, const bs_eterm *t)
{
    size_t n = bs_eterm_size(t);
    int ok;
    switch (bs_eterm_kind_of(t)) {
    case BS_ET_INT:
        return ei_x_encode_longlong(x, bs_eterm_int(t, &ok));
    case BS_ET_FLOAT:
        return ei_x_encode_double(x, bs_eterm_float(t, &ok));
    case BS_ET_ATOM:
        return ei_x_encode_atom_len_as(x, bs_eterm_text(t), (int)bs_eterm_text_len(t), ERLANG_UTF8, ERLANG_UTF8);
    case BS_ET_BINARY:
        return ei_x_encode_binary(x, bs_eterm_text(t), (int)bs_eterm_text_len(t));
    case BS_ET_STRING:
        return ei_x_encode_string_len(x, bs_eterm_text(t), (int)bs_eterm_text_len(t));
    case BS_ET_TUPLE:
    case BS_ET_MAP:
        if ((bs_eterm_kind_of(t) == BS_ET_TUPLE ? ei_x_encode_tuple_header(x, (long)n)
                                                 : ei_x_encode_map_header(x, (long)n)) < 0)
            return -1;
        if (bs_eterm_kind_of(t) == BS_ET_MAP)
            n *= 2;
        for (size_t i = 0; i < n; i++)
            if (encode(x, bs_eterm_item(t, i)) < 0)
                return -1;
        return 0;
    case BS_ET_LIST:
        if (n && ei_x_encode_list_header(x, (long)n) < 0)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (encode(x, bs_eterm_item(t, i)) < 0)
                return -1;
        return bs_eterm_tail(t) ? encode(x, bs_eterm_tail(t)) : ei_x_encode_empty_list(x);
    case BS_ET_PID: {
        const bs_eterm_pid *p = bs_eterm_pid_of(t);
        erlang_pid pid;
        memset(&pid, 0, sizeof pid);
        if (strlen(p->node) >= sizeof pid.node)
            return -1;
        strcpy(pid.node, p->node);
        pid.num = p->number;
        pid.serial = p->serial;
        pid.creation = p->creation;
        return ei_x_encode_pid(x, &pid);
    }
    case BS_ET_OTHER:
        break;
    }
    return -1;
}

/* Prints t under a few caps: never longer than the cap, always printable
 * UTF-8, and each cut rendering a prefix of the full one plus "...", short
 * of the cap by less than one piece of output. */
static char *check_print(const bs_eterm *t, size_t input_size)
{
    size_t full_cap = 8 * input_size + 256; /* renderings take at most about 5 bytes per input byte */
    char *full = malloc(full_cap);
    CHECK(full != NULL);
    size_t full_len = bs_eterm_format(full, full_cap, t);
    CHECK(full_len < full_cap && strlen(full) == full_len);
    CHECK(tu_utf8_valid(full, full_len));
    for (size_t i = 0; i < full_len; i++)
        CHECK((unsigned char)full[i] >= 0x20 && full[i] != 0x7F);
    const size_t caps[] = {0, 1, 3, 4, 17, input_size % 97 + 3};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        char out[128];
        size_t len = bs_eterm_format(out, caps[c] + 1, t);
        CHECK(len <= caps[c] && strlen(out) == len);
        if (full_len <= caps[c]) {
            CHECK(len == full_len && memcmp(out, full, len) == 0);
        } else if (caps[c] >= 3) {
            CHECK(len >= 3 && memcmp(out + len - 3, "...", 3) == 0 && memcmp(out, full, len - 3) == 0);
            CHECK(len + 64 > caps[c]); /* cut at most one piece short (a number, an escape...) */
        }
    }
    return full;
}

static void check_term(const bs_eterm_tree *tree, size_t available, size_t input_size)
{
    const bs_eterm *root = bs_eterm_root(tree);
    int has_other = 0;
    size_t terms = walk(root, 0, &has_other);
    CHECK(terms <= BS_ETERM_MAX_NODES);
    CHECK(bs_eterm_tree_memory(tree) <= BS_ETERM_MEMORY_PER_BYTE * available + BS_ETERM_MEMORY_SLACK);
    char *printed = check_print(root, input_size);
    if (!has_other) {
        ei_x_buff x;
        CHECK(ei_x_new(&x) == 0);
        if (encode(&x, root) == 0) {
            int index = 0;
            bs_eterm_tree *again = NULL;
            char err[256];
            if (bs_eterm_decode(x.buff, x.index, &index, &again, err, sizeof err) != 0) {
                fprintf(stderr, "re-encoded term does not decode: %s\n", err);
                abort();
            }
            CHECK(index == x.index);
            char *printed_again = check_print(bs_eterm_root(again), input_size);
            if (strcmp(printed, printed_again) != 0) {
                fprintf(stderr, "round trip differs:\n  %s\n  %s\n", printed, printed_again);
                abort();
            }
            free(printed_again);
            bs_eterm_free(again);
        }
        ei_x_free(&x);
    }
    free(printed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (size_t)INT32_MAX / 2)
        return 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (size + page - 1) / page + 1;
    char *map = mmap(NULL, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED);
    CHECK(mprotect(map + (pages - 1) * page, page, PROT_NONE) == 0);
    char *buf = map + (pages - 1) * page - size;
    if (size)
        memcpy(buf, data, size);

    int index = 0;
    for (int term = 0; term < 4 && (term == 0 || index < (int)size); term++) {
        bs_eterm_tree *t = (bs_eterm_tree *)buf; /* must be overwritten */
        char err[200];
        int start = index;
        int versioned = term == 0 && size > 0 && data[0] == BS_ETERM_VERSION_MAGIC;
        int rc = versioned ? bs_eterm_decode_versioned(buf, (int)size, &index, &t, err, sizeof err)
                           : bs_eterm_decode(buf, (int)size, &index, &t, err, sizeof err);
        if (rc != 0) {
            int offset = -1;
            CHECK(rc == -1 && t == NULL && index == start);
            CHECK(sscanf(err, "offset %d: ", &offset) == 1);
            CHECK(offset >= start && offset <= (int)size);
            CHECK(strchr(err, '\n') == NULL && strlen(err) > strlen("offset 0: "));
            break;
        }
        CHECK(t != NULL && index > start && index <= (int)size);
        check_term(t, size - (size_t)start, size);
        bs_eterm_free(t);
    }
    munmap(map, pages * page);
    return 0;
}
