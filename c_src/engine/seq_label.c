/* seq_label.c — what a printed message is (call, cast, reply, exit) and
 * the short label diagrams show (see seq_flow.h). Reads Erlang's printed
 * form of a term: quoted atoms, strings and nested brackets are skipped
 * whole, so a comma or a brace inside them never splits an element. */
#include "seq_flow.h"

#include <stdio.h>
#include <string.h>

/* Index just past the element that starts at s[i] (a printed Erlang term),
 * stopping at a top-level ',' or a closing bracket. Quoted atoms, strings
 * and nested brackets are skipped whole. */
static size_t skip_element(const char *s, size_t i, size_t n)
{
    int depth = 0;
    while (i < n) {
        char c = s[i];
        if (c == '"' || c == '\'') {
            for (i++; i < n && s[i] != c; i++)
                if (s[i] == '\\' && i + 1 < n)
                    i++;
            i++;
            continue;
        }
        if (c == '{' || c == '[' || c == '(' || (c == '<' && i + 1 < n && s[i + 1] == '<'))
            depth++, i += c == '<' ? 2 : 1;
        else if (c == '}' || c == ']' || c == ')' || (c == '>' && i + 1 < n && s[i + 1] == '>' && depth > 0)) {
            if (depth == 0)
                return i;
            depth--, i += c == '>' ? 2 : 1;
        } else if (c == ',' && depth == 0)
            return i;
        else
            i++;
    }
    return n;
}

static int starts(const char *s, size_t n, const char *prefix)
{
    size_t m = strlen(prefix);
    return n >= m && memcmp(s, prefix, m) == 0;
}

const char *bs_seq_msg_kind_name(bs_seq_msg_kind k)
{
    switch (k) {
    case BS_SEQ_MSG_CALL: return "call";
    case BS_SEQ_MSG_CAST: return "cast";
    case BS_SEQ_MSG_REPLY: return "reply";
    case BS_SEQ_MSG_EXIT: return "exit";
    default: return "send";
    }
}

bs_seq_msg_kind bs_seq_classify(const char *text, size_t *start, size_t *len)
{
    size_t n = strlen(text);
    *start = 0, *len = n;
    if (n < 3 || text[0] != '{' || text[n - 1] != '}')
        return BS_SEQ_MSG_SEND;
    /* The tuple's elements (only tuples of 2 or 3 are recognised). */
    size_t st[3], en[3], count = 0, i = 1, end = n - 1;
    while (i < end) {
        if (count == 3)
            return BS_SEQ_MSG_SEND;
        size_t j = skip_element(text, i, end);
        st[count] = i, en[count] = j, count++;
        if (j < end && text[j] == ',')
            i = j + 1;
        else if (j >= end)
            break;
        else
            return BS_SEQ_MSG_SEND; /* a stray closing bracket */
    }
    if (count < 2)
        return BS_SEQ_MSG_SEND;
    const char *first = text + st[0];
    size_t first_len = en[0] - st[0];
    size_t last = count - 1;
#define IS(word) (first_len == strlen(word) && memcmp(first, word, first_len) == 0)
    bs_seq_msg_kind k = BS_SEQ_MSG_SEND;
    if (count == 3 && IS("'$gen_call'"))
        k = BS_SEQ_MSG_CALL;
    else if (count == 2 && IS("'$gen_cast'"))
        k = BS_SEQ_MSG_CAST;
    else if (count == 3 && IS("'EXIT'"))
        k = BS_SEQ_MSG_EXIT;
    else if (count == 2 && (starts(first, first_len, "#Ref<") || starts(first, first_len, "[alias|#Ref<")))
        k = BS_SEQ_MSG_REPLY;
#undef IS
    if (k != BS_SEQ_MSG_SEND)
        *start = st[last], *len = en[last] - st[last];
    return k;
}

size_t bs_seq_message_label(const bs_seq_message *m, size_t max_chars, char *buf, size_t cap)
{
    if (cap == 0)
        return 0;
    if (max_chars == 0)
        max_chars = BS_SEQ_LABEL_CHARS_DEFAULT;
    size_t o = 0;
    if (m->kind != BS_SEQ_MSG_SEND) {
        const char *w = m->kind == BS_SEQ_MSG_EXIT ? "EXIT" : bs_seq_msg_kind_name(m->kind);
        o = (size_t)snprintf(buf, cap, "%s ", w);
        if (o >= cap)
            return buf[cap - 1] = '\0', cap - 1;
    }
    const char *s = m->text + m->payload;
    size_t n = m->payload_len, chars = 0;
    for (size_t i = 0; i < n; i++)
        chars += ((unsigned char)s[i] & 0xC0) != 0x80;
    size_t take = n;
    int cut = 0;
    if (chars > max_chars) {
        /* Keep max_chars - 3 characters and "...". */
        size_t keep = max_chars > 3 ? max_chars - 3 : 0, seen = 0;
        for (take = 0; take < n; take++)
            if (((unsigned char)s[take] & 0xC0) != 0x80 && seen++ == keep)
                break;
        cut = 1;
    }
    if (o + take + 4 > cap) {
        take = cap > o + 4 ? cap - o - 4 : 0;
        cut = 1;
    }
    while (take > 0 && take < n && ((unsigned char)s[take] & 0xC0) == 0x80)
        take--;
    memcpy(buf + o, s, take);
    o += take;
    if (cut) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return o;
}

