/* test_seq.c — seq_trace flows (seq_flow.c) and their writers (seq_*.c).
 *
 * A request passed along a chain of three nodes and answered back, given as
 * the collectors report it (events of each node, in an order that is not
 * causal): pairing of sends with receives, causal order from the serials,
 * participants grouped per node, exact Mermaid text, JSON that parses and
 * holds every message, the Chrome trace's flows, well-formed SVG. Also:
 * message kinds, Mermaid escaping of hostile text, the noise filter and
 * user patterns, unmatched sends and receives, duplicate events, the caps
 * (events, label length, participants, Mermaid size) and atomic files. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/seq_flow.h"
#include "writers/seq_writers.h"
#include "json_check.h"
#include "xml_check.h"

#define OK(x) assert_int_equal((x), 0)

typedef int (*seq_writer)(FILE *, const bs_seq_diagram *, const bs_seq_opts *, bs_seq_write_info *);

static char *write_mem(seq_writer w, const bs_seq_diagram *d, const bs_seq_opts *o, bs_seq_write_info *info)
{
    char *text = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&text, &n);
    assert_non_null(out);
    OK(w(out, d, o, info));
    assert_int_equal(fclose(out), 0);
    return text;
}

static void ev(bs_seq_flow *f, bs_seq_kind k, uint64_t prev, uint64_t cur, int64_t ts, const char *fn,
               const char *fp, const char *tn, const char *tp, const char *text)
{
    bs_seq_event e = {k, prev, cur, ts, "1", fn, fp, tn, tp, text};
    assert_int_equal(bs_seq_flow_add(f, &e), 0);
}

#define A "a@h"
#define B "b@h"
#define C "c@h"

/* client on a -> chain_a (gen_server call) -> b's server (plain message)
 * -> c's server -> back to b -> reply to a -> reply to client. Events are
 * added node by node (c first), receives before sends: not causal order. */
static void chain_flow(bs_seq_flow *f)
{
    bs_seq_flow_init(f, 0);
    /* node c */
    ev(f, BS_SEQ_RECV, 2, 3, 900, B, "<0.90.0>", C, "<0.70.0>", "{hop,<0.90.0>,2,req}");
    ev(f, BS_SEQ_SEND, 3, 4, 910, C, "<0.70.0>", B, "<0.90.0>", "{back,2,<<\"c\">>}");
    /* node b */
    ev(f, BS_SEQ_RECV, 3, 4, 500, C, "<0.70.0>", B, "<0.90.0>", "{back,2,<<\"c\">>}");
    ev(f, BS_SEQ_RECV, 1, 2, 480, A, "<0.80.0>", B, "<0.90.0>", "{hop,<0.80.0>,1,req}");
    ev(f, BS_SEQ_SEND, 2, 3, 490, B, "<0.90.0>", C, "c_srv", "{hop,<0.90.0>,2,req}");
    ev(f, BS_SEQ_SEND, 4, 5, 510, B, "<0.90.0>", A, "<0.80.0>", "{back,1,<<\"bc\">>}");
    /* node a */
    ev(f, BS_SEQ_SEND, 0, 1, 100, A, "<0.95.0>", A, "<0.80.0>",
       "{'$gen_call',{<0.95.0>,[alias|#Ref<0.1.2.3>]},{get,key}}");
    ev(f, BS_SEQ_RECV, 0, 1, 101, A, "<0.95.0>", A, "<0.80.0>",
       "{'$gen_call',{<0.95.0>,[alias|#Ref<0.1.2.3>]},{get,key}}");
    ev(f, BS_SEQ_SEND, 1, 2, 102, A, "<0.80.0>", B, "<0.90.0>", "{hop,<0.80.0>,1,req}");
    ev(f, BS_SEQ_RECV, 4, 5, 120, B, "<0.90.0>", A, "<0.80.0>", "{back,1,<<\"bc\">>}");
    ev(f, BS_SEQ_SEND, 5, 6, 121, A, "<0.80.0>", A, "<0.95.0>", "{[alias|#Ref<0.1.2.3>],{ok,<<\"bc\">>}}");
    ev(f, BS_SEQ_RECV, 5, 6, 122, A, "<0.80.0>", A, "<0.95.0>", "{[alias|#Ref<0.1.2.3>],{ok,<<\"bc\">>}}");
    OK(bs_seq_flow_name(f, A, "<0.95.0>", "client"));
    OK(bs_seq_flow_name(f, A, "<0.80.0>", "chain_a"));
    OK(bs_seq_flow_name(f, B, "<0.90.0>", "chain_b"));
    OK(bs_seq_flow_name(f, C, "<0.70.0>", "chain_c"));
}

static void merge(const bs_seq_flow *f, const bs_seq_opts *o, bs_seq_diagram *d)
{
    int bad = 0;
    OK(bs_seq_merge(f, o, d, &bad));
    assert_int_equal(bad, 0);
}

static const char CHAIN_MMD[] =
    "sequenceDiagram\n"
    "    box a@h\n"
    "    participant P1 as a@h #lt;0.95.0#gt; client\n"
    "    participant P2 as a@h #lt;0.80.0#gt; chain_a\n"
    "    end\n"
    "    box b@h\n"
    "    participant P3 as b@h #lt;0.90.0#gt; chain_b\n"
    "    end\n"
    "    box c@h\n"
    "    participant P4 as c@h #lt;0.70.0#gt; chain_c\n"
    "    end\n"
    "    P1->>P2: call {get,key}\n"
    "    P2->>P3: {hop,#lt;0.80.0#gt;,1,req}\n"
    "    P3->>P4: {hop,#lt;0.90.0#gt;,2,req}\n"
    "    P4->>P3: {back,2,#lt;#lt;\"c\"#gt;#gt;}\n"
    "    P3->>P2: {back,1,#lt;#lt;\"bc\"#gt;#gt;}\n"
    "    P2-->>P1: reply {ok,#lt;#lt;\"bc\"#gt;#gt;}\n";

static void chain_in_causal_order(void **state)
{
    (void)state;
    bs_seq_flow f;
    chain_flow(&f);
    bs_seq_diagram d;
    merge(&f, NULL, &d);
    assert_int_equal(d.n_parts, 4);
    assert_int_equal(d.n_msgs, 6);
    for (size_t i = 0; i < d.n_msgs; i++) {
        assert_int_equal(d.msgs[i].cur, i + 1);
        assert_true(d.msgs[i].sent && d.msgs[i].received);
    }
    /* The send to a registered name is drawn to the process that got it. */
    assert_string_equal(d.parts[d.msgs[2].to].pid, "<0.70.0>");
    assert_int_equal(d.msgs[0].kind, BS_SEQ_MSG_CALL);
    assert_int_equal(d.msgs[5].kind, BS_SEQ_MSG_REPLY);
    char *mmd = write_mem(bs_write_seq_mermaid, &d, &(bs_seq_opts){0}, NULL);
    assert_string_equal(mmd, CHAIN_MMD);
    free(mmd);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
}

static void json_has_every_message(void **state)
{
    (void)state;
    bs_seq_flow f;
    chain_flow(&f);
    bs_seq_diagram d;
    merge(&f, NULL, &d);
    char *json = write_mem(bs_write_seq_json, &d, &(bs_seq_opts){0}, NULL);
    jc_val v;
    char why[200];
    OK(jc_parse(json, strlen(json), &v, why, sizeof why));
    const jc_val *msgs = jc_get(&v, "messages"), *parts = jc_get(&v, "participants");
    assert_non_null(msgs);
    assert_int_equal(msgs->n, 6);
    assert_int_equal(parts->n, 4);
    assert_string_equal(jc_get(&parts->items[0], "name")->str, "client");
    assert_string_equal(jc_get(&msgs->items[0], "kind")->str, "call");
    assert_string_equal(jc_get(&msgs->items[0], "text")->str,
                        "{'$gen_call',{<0.95.0>,[alias|#Ref<0.1.2.3>]},{get,key}}");
    assert_string_equal(jc_get(&msgs->items[5], "label")->str, "reply {ok,<<\"bc\">>}");
    jc_free(&v);
    free(json);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
}

static void chrome_trace_flows(void **state)
{
    (void)state;
    bs_seq_flow f;
    chain_flow(&f);
    bs_seq_diagram d;
    merge(&f, NULL, &d);
    char *json = write_mem(bs_write_seq_chrome, &d, &(bs_seq_opts){0}, NULL);
    jc_val v;
    char why[200];
    OK(jc_parse(json, strlen(json), &v, why, sizeof why));
    const jc_val *evs = jc_get(&v, "traceEvents");
    assert_non_null(evs);
    size_t s = 0, fl = 0, x = 0, threads = 0, procs = 0;
    for (size_t i = 0; i < evs->n; i++) {
        const char *ph = jc_get(&evs->items[i], "ph")->str;
        assert_true(jc_is_uint(jc_get(&evs->items[i], "pid")));
        s += !strcmp(ph, "s"), fl += !strcmp(ph, "f"), x += !strcmp(ph, "X");
        if (!strcmp(ph, "M")) {
            const char *name = jc_get(&evs->items[i], "name")->str;
            threads += !strcmp(name, "thread_name"), procs += !strcmp(name, "process_name");
        }
        if (!strcmp(ph, "f"))
            assert_string_equal(jc_get(&evs->items[i], "bp")->str, "e");
    }
    assert_int_equal(s, 6);
    assert_int_equal(fl, 6);
    assert_int_equal(x, 12);
    assert_int_equal(threads, 4);
    assert_int_equal(procs, 4); /* three nodes and the trace itself */
    jc_free(&v);
    free(json);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
}

static void svg_is_well_formed(void **state)
{
    (void)state;
    bs_seq_flow f;
    chain_flow(&f);
    ev(&f, BS_SEQ_SEND, 6, 7, 130, A, "<0.95.0>", A, "<0.95.0>", "{self,\"</title><script>&\"}");
    bs_seq_diagram d;
    merge(&f, NULL, &d);
    char *svg = write_mem(bs_write_seq_svg, &d, &(bs_seq_opts){.title = "a <b> & c"}, NULL);
    char why[200];
    OK(xc_check(svg, strlen(svg), why, sizeof why));
    assert_null(strstr(svg, "<script"));
    assert_non_null(strstr(svg, "{&#39;$gen_call&#39;,{&lt;0.95.0&gt;"));
    assert_non_null(strstr(svg, "class=\"msg lost\""));
    free(svg);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
}

static void classify_kinds(void **state)
{
    (void)state;
    size_t s, n;
    assert_int_equal(bs_seq_classify("{'$gen_cast',{put,\"a,b\",{x,y}}}", &s, &n), BS_SEQ_MSG_CAST);
    assert_int_equal(n, strlen("{put,\"a,b\",{x,y}}"));
    assert_int_equal(bs_seq_classify("{#Ref<0.1.2.3>,ok}", &s, &n), BS_SEQ_MSG_REPLY);
    assert_int_equal(bs_seq_classify("{'EXIT',<0.1.0>,normal}", &s, &n), BS_SEQ_MSG_EXIT);
    assert_int_equal(bs_seq_classify("{'$gen_call',x}", &s, &n), BS_SEQ_MSG_SEND);
    assert_int_equal(bs_seq_classify("{'$gen_call',a,b,c}", &s, &n), BS_SEQ_MSG_SEND);
    assert_int_equal(bs_seq_classify("{'$gen_cast',<<\"}\">>}", &s, &n), BS_SEQ_MSG_CAST);
    assert_int_equal(bs_seq_classify("{'$gen_cast','a}b'}", &s, &n), BS_SEQ_MSG_CAST);
    assert_int_equal(bs_seq_classify("{", &s, &n), BS_SEQ_MSG_SEND);
    assert_int_equal(bs_seq_classify("{a}}", &s, &n), BS_SEQ_MSG_SEND);
    assert_int_equal(bs_seq_classify("", &s, &n), BS_SEQ_MSG_SEND);
}

/* Every character Mermaid misreads is written as an entity; a label is cut
 * at label_chars characters, never inside a UTF-8 character. */
static void mermaid_escapes_and_cuts(void **state)
{
    (void)state;
    bs_seq_flow f;
    bs_seq_flow_init(&f, 0);
    ev(&f, BS_SEQ_SEND, 0, 1, 1, A, "<0.1.0>", A, "<0.2.0>", "a;b #{x => 1} & c\n#Ref<0.1.2> \x01 d\xff");
    ev(&f, BS_SEQ_SEND, 1, 2, 2, A, "<0.2.0>", A, "<0.1.0>", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
    OK(bs_seq_flow_name(&f, A, "<0.1.0>", "x;y"));
    bs_seq_diagram d;
    merge(&f, NULL, &d);
    char *mmd = write_mem(bs_write_seq_mermaid, &d, &(bs_seq_opts){.label_chars = 5}, NULL);
    assert_non_null(strstr(mmd, "participant P1 as a@h #lt;0.1.0#gt; x#59;y\n"));
    assert_non_null(strstr(mmd, "P1-xP2: a#59;...\n")); /* 2 characters and "..." */
    assert_non_null(strstr(mmd, "P2-xP1: \xc3\xa9\xc3\xa9...\n"));
    free(mmd);
    mmd = write_mem(bs_write_seq_mermaid, &d, &(bs_seq_opts){.label_chars = 200}, NULL);
    assert_non_null(strstr(mmd, "P1-xP2: a#59;b #35;{x =#gt; 1} #38; c #35;Ref#lt;0.1.2#gt;   d\xef\xbf\xbd\n"));
    free(mmd);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
}

static void noise_and_user_filters(void **state)
{
    (void)state;
    bs_seq_flow f;
    chain_flow(&f);
    ev(&f, BS_SEQ_SEND, 6, 7, 1, A, "<0.95.0>", A, "<0.50.0>", "{code_call,<0.95.0>,{ensure_loaded,m}}");
    ev(&f, BS_SEQ_SEND, 7, 8, 2, A, "<0.50.0>", A, "<0.10.0>", "{<0.50.0>,{get_file,\"m.beam\"}}");
    ev(&f, BS_SEQ_SEND, 8, 9, 3, A, "<0.95.0>", A, "<0.64.0>", "{io_request,<0.95.0>,x,y}");
    OK(bs_seq_flow_name(&f, A, "<0.50.0>", "code_server"));
    OK(bs_seq_flow_name(&f, A, "<0.10.0>", "erl_prim_loader"));
    bs_seq_diagram d;
    merge(&f, NULL, &d);
    assert_int_equal(d.n_msgs, 6);
    assert_int_equal(d.noise, 3);
    bs_seq_diagram_free(&d);
    merge(&f, &(bs_seq_opts){.keep_noise = 1}, &d);
    assert_int_equal(d.n_msgs, 9);
    bs_seq_diagram_free(&d);
    merge(&f, &(bs_seq_opts){.exclude_re = "chain_c|hop"}, &d);
    assert_int_equal(d.n_msgs, 3); /* the call, its reply, chain_b's answer */
    assert_int_equal(d.filtered, 3);
    bs_seq_diagram_free(&d);
    merge(&f, &(bs_seq_opts){.include_re = "^\\{back"}, &d);
    assert_int_equal(d.n_msgs, 2);
    bs_seq_diagram_free(&d);
    int bad = 0;
    assert_int_equal(bs_seq_merge(&f, &(bs_seq_opts){.include_re = "("}, &d, &bad), -1);
    assert_int_equal(bad, 1);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
}

/* A send never received, a receive whose send was not seen, and the same
 * event reported twice: each message once. */
static void unmatched_and_duplicates(void **state)
{
    (void)state;
    bs_seq_flow f;
    bs_seq_flow_init(&f, 0);
    ev(&f, BS_SEQ_SEND, 0, 1, 1, A, "<0.1.0>", B, "<0.9.0>", "lost");
    ev(&f, BS_SEQ_RECV, 1, 2, 5, C, "<0.3.0>", A, "<0.1.0>", "from c");
    ev(&f, BS_SEQ_SEND, 2, 3, 6, A, "<0.1.0>", A, "<0.2.0>", "twice");
    ev(&f, BS_SEQ_SEND, 2, 3, 6, A, "<0.1.0>", A, "<0.2.0>", "twice");
    ev(&f, BS_SEQ_RECV, 2, 3, 7, A, "<0.1.0>", A, "<0.2.0>", "twice");
    bs_seq_diagram d;
    merge(&f, NULL, &d);
    assert_int_equal(d.n_msgs, 3);
    assert_true(d.msgs[0].sent && !d.msgs[0].received);
    assert_true(!d.msgs[1].sent && d.msgs[1].received);
    assert_true(d.msgs[2].sent && d.msgs[2].received);
    char *mmd = write_mem(bs_write_seq_mermaid, &d, &(bs_seq_opts){0}, NULL);
    assert_non_null(strstr(mmd, "-x"));
    free(mmd);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
}

/* Concurrent branches with equal serials come out in the same order
 * whatever order the events arrived in. */
static void deterministic_ties(void **state)
{
    (void)state;
    char *out[2];
    for (int round = 0; round < 2; round++) {
        bs_seq_flow f;
        bs_seq_flow_init(&f, 0);
        for (int k = 0; k < 2; k++) {
            int i = round ? 1 - k : k;
            ev(&f, BS_SEQ_SEND, 0, 1, 10, A, i ? "<0.5.0>" : "<0.4.0>", B, "<0.9.0>", i ? "b" : "a");
        }
        bs_seq_diagram d;
        merge(&f, NULL, &d);
        out[round] = write_mem(bs_write_seq_json, &d, &(bs_seq_opts){0}, NULL);
        bs_seq_diagram_free(&d);
        bs_seq_flow_free(&f);
    }
    assert_string_equal(out[0], out[1]);
    free(out[0]), free(out[1]);
}

static void caps(void **state)
{
    (void)state;
    /* Events past max_events are counted, not kept. */
    bs_seq_flow f;
    bs_seq_flow_init(&f, 3);
    for (int i = 0; i < 5; i++) {
        bs_seq_event e = {BS_SEQ_SEND, (uint64_t)i, (uint64_t)i + 1, i, "1", A, "<0.1.0>", A, "<0.2.0>", "m"};
        assert_int_equal(bs_seq_flow_add(&f, &e), i < 3 ? 0 : 1);
    }
    assert_int_equal(f.dropped, 2);
    bs_seq_flow_free(&f);

    /* Texts are cut at BS_SEQ_TEXT_MAX bytes. */
    char *big = malloc(5000);
    assert_non_null(big);
    memset(big, 'x', 4999);
    big[4999] = '\0';
    bs_seq_flow_init(&f, 0);
    ev(&f, BS_SEQ_SEND, 0, 1, 1, A, "<0.1.0>", A, "<0.2.0>", big);
    assert_int_equal(strlen(f.events[0].e.text), BS_SEQ_TEXT_MAX);
    free(big);
    bs_seq_flow_free(&f);

    /* 12 processes, 5 participants at most: the rest of each node is one
     * "other processes" participant, placed with its node. */
    bs_seq_flow_init(&f, 0);
    char pid[32], pid2[32];
    for (int i = 0; i < 12; i++) {
        snprintf(pid, sizeof pid, "<0.%d.0>", 100 + i);
        snprintf(pid2, sizeof pid2, "<0.%d.0>", 200 + i);
        ev(&f, BS_SEQ_SEND, (uint64_t)i, (uint64_t)i + 1, i, i % 2 ? A : B, pid, i % 2 ? A : B, pid2, "m");
    }
    bs_seq_diagram d;
    merge(&f, &(bs_seq_opts){.max_participants = 5}, &d);
    assert_int_equal(d.n_parts, 7);
    assert_int_equal(d.folded, 19);
    for (size_t i = 1; i < d.n_parts; i++) /* grouped: the node changes once */
        if (strcmp(d.parts[i].node, d.parts[i - 1].node))
            for (size_t k = i; k < d.n_parts; k++)
                assert_string_equal(d.parts[k].node, d.parts[i].node);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);

    /* Mermaid stops at its message cap and says how many were left out. */
    bs_seq_flow_init(&f, 0);
    for (unsigned i = 0; i < BS_SEQ_MERMAID_MAX_MESSAGES + 10; i++)
        ev(&f, BS_SEQ_SEND, i, i + 1, i, A, "<0.1.0>", A, "<0.2.0>", "{a_message,with,some,text}");
    merge(&f, NULL, &d);
    bs_seq_write_info info;
    char *mmd = write_mem(bs_write_seq_mermaid, &d, &(bs_seq_opts){0}, &info);
    assert_int_equal(info.written, BS_SEQ_MERMAID_MAX_MESSAGES);
    assert_int_equal(info.left_out, 10);
    assert_non_null(strstr(mmd, "Note over P1: 10 more messages not shown"));
    assert_true(strlen(mmd) < BS_SEQ_MERMAID_MAX_BYTES);
    free(mmd);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);

    /* ... or at its byte cap, with long labels. */
    bs_seq_flow_init(&f, 0);
    char text[400];
    memset(text, ';', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    for (unsigned i = 0; i < 300; i++)
        ev(&f, BS_SEQ_SEND, i, i + 1, i, A, "<0.1.0>", A, "<0.2.0>", text);
    merge(&f, NULL, &d);
    mmd = write_mem(bs_write_seq_mermaid, &d, &(bs_seq_opts){.label_chars = 300}, &info);
    assert_true(strlen(mmd) < BS_SEQ_MERMAID_MAX_BYTES);
    assert_true(info.left_out > 0);
    assert_int_equal(info.written + info.left_out, 300);
    free(mmd);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
}

static void files_by_extension(void **state)
{
    (void)state;
    assert_int_equal(bs_seq_format_from_path("x.mmd"), BS_SEQ_FORMAT_MERMAID);
    assert_int_equal(bs_seq_format_from_path("x.seq.svg"), BS_SEQ_FORMAT_SVG);
    assert_int_equal(bs_seq_format_from_path("x.trace.json"), BS_SEQ_FORMAT_CHROME);
    assert_int_equal(bs_seq_format_from_path("x.JSON"), BS_SEQ_FORMAT_JSON);
    assert_int_equal(bs_seq_format_from_path("x.folded"), BS_SEQ_FORMAT_UNKNOWN);
    bs_seq_flow f;
    chain_flow(&f);
    bs_seq_diagram d;
    merge(&f, NULL, &d);
    char dir[] = "/tmp/bs_seq_test_XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/flow.mmd", dir);
    OK(bs_seq_write_file(path, BS_SEQ_FORMAT_UNKNOWN, &d, NULL, NULL));
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    char buf[2048];
    size_t n = fread(buf, 1, sizeof buf - 1, in);
    buf[n] = '\0';
    fclose(in);
    assert_string_equal(buf, CHAIN_MMD);
    snprintf(path, sizeof path, "%s/flow.png", dir);
    assert_int_equal(bs_seq_write_file(path, BS_SEQ_FORMAT_UNKNOWN, &d, NULL, NULL), -1);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/flow.mmd", dir);
    unlink(path);
    rmdir(dir);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
}

static void empty_flow(void **state)
{
    (void)state;
    bs_seq_flow f;
    bs_seq_flow_init(&f, 0);
    bs_seq_diagram d;
    merge(&f, NULL, &d);
    char *t = write_mem(bs_write_seq_mermaid, &d, &(bs_seq_opts){0}, NULL);
    assert_string_equal(t, "sequenceDiagram\n");
    free(t);
    t = write_mem(bs_write_seq_svg, &d, &(bs_seq_opts){0}, NULL);
    char why[200];
    OK(xc_check(t, strlen(t), why, sizeof why));
    free(t);
    t = write_mem(bs_write_seq_chrome, &d, &(bs_seq_opts){0}, NULL);
    jc_val v;
    OK(jc_parse(t, strlen(t), &v, why, sizeof why));
    jc_free(&v);
    free(t);
    bs_seq_diagram_free(&d);
    bs_seq_flow_free(&f);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chain_in_causal_order),
        cmocka_unit_test(json_has_every_message),
        cmocka_unit_test(chrome_trace_flows),
        cmocka_unit_test(svg_is_well_formed),
        cmocka_unit_test(classify_kinds),
        cmocka_unit_test(mermaid_escapes_and_cuts),
        cmocka_unit_test(noise_and_user_filters),
        cmocka_unit_test(unmatched_and_duplicates),
        cmocka_unit_test(deterministic_ties),
        cmocka_unit_test(caps),
        cmocka_unit_test(files_by_extension),
        cmocka_unit_test(empty_flow),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
