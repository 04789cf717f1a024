/* test_stack_rebuild.c — the stack-rebuilding rules (stack_rebuild.h,
 * the rules of the VM's call/return_to events) on synthetic event sequences: body calls and
 * returns, self time charged to the stack current during each interval, call
 * counts, tail calls with {caller}, chains of tail calls, a 1,000,000-iteration
 * tail-recursive loop, even/odd mutual recursion, 100,000-deep body recursion
 * (run on a thread with a small stack, through the profile, totals, merge and
 * the folded writer), exceptions, return_to undefined / unknown frames,
 * already-running processes (seeded or not), SLEEP and GC leaves, the
 * WAIT/RUNNABLE split told by receive events (tree and timeline; empty
 * leaves not exported) and whole-VM filtering (WAIT left out and said,
 * processes by running time), exit, and
 * one process's events fed from two threads in turn, a process whose
 * recording the budget refused (left alone), and a finished tree trimmed. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>

#include "engine/filter.h"
#include "readers/readers.h"
#include "writers/folded.h"
#include "test_util.h"

static const bs_key TOP = KEY(M_M, F_TOP, 0), A = KEY(M_M, F_A, 0), B = KEY(M_M, F_B, 0),
                    C = KEY(M_M, F_C, 0), PHASH2 = KEY(M_ERLANG, F_PHASH2, 1),
                    LOOP = KEY(M_M, F_LOOP, 2), STEP = KEY(M_M, F_STEP, 1),
                    EVEN = KEY(M_M, F_EVEN, 1), ODD = KEY(M_M, F_ODD, 1), F = KEY(M_M, F_F, 1),
                    MID = KEY(M_M, F_MID, 0), LEAF = KEY(M_M, F_LEAF, 0),
                    ERR = KEY(M_ERLANG, F_ERROR, 1), X = KEY(M_M, F_X, 0),
                    RUN = KEY(M_M, F_RUN, 2), INIT = KEY(M_GEN, F_INIT, 1),
                    LOOPG = KEY(M_GEN, F_LOOP, 7), WAIT = KEY(M_GEN, F_WAIT, 0),
                    MONO = KEY(M_M, F_MONO, 0), WORKER = KEY(M_M, F_WORKER, 3);

/* One event, asserting it was accepted. */
#define CALL(p, callee, caller, t) assert_int_equal(bs_proc_call((p), &(callee), BS_CALLER_FRAME, &(caller), (t)), 0)
#define CALL_ROOT(p, callee, t) assert_int_equal(bs_proc_call((p), &(callee), BS_CALLER_ROOT, NULL, (t)), 0)
#define CALL_UNKNOWN(p, callee, t) assert_int_equal(bs_proc_call((p), &(callee), BS_CALLER_UNKNOWN, NULL, (t)), 0)
#define CALL_UNDEF(p, callee, t) assert_int_equal(bs_proc_call((p), &(callee), BS_CALLER_UNDEFINED, NULL, (t)), 0)
#define RET(p, to, t) assert_int_equal(bs_proc_return_to((p), &(to), (t)), 0)
#define RET_UNDEF(p, t) assert_int_equal(bs_proc_return_to((p), NULL, (t)), 0)
#define CALL_OWN(p, callee, t) assert_int_equal(bs_proc_call((p), &(callee), BS_CALLER_OWN_CODE, NULL, (t)), 0)
#define RET_OWN(p, t) assert_int_equal(bs_proc_return_to_own_code((p), (t)), 0)

static void assert_stack(const bs_proc *p, const char *expected)
{
    char *s = tu_current(p);
    assert_string_equal(s, expected);
    free(s);
}

static void assert_tree(const bs_proc *p, const char *expected)
{
    char *s = tu_dump(p);
    assert_string_equal(s, expected);
    free(s);
}

static void new_proc(bs_proc *p, uint64_t start, int sleep, int gc)
{
    assert_int_equal(bs_proc_init(p, NULL, start, sleep, gc), 0);
}

/* ------------------------------------------------------------------ */

static void test_body_calls_and_returns(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    assert_int_equal(bs_proc_depth(&p), 0);
    CALL_ROOT(&p, TOP, 100); /* [0,100) ran before any frame: the root */
    assert_stack(&p, "m:top/0");
    assert_int_equal(p.tree.nodes[0].self_ns, 100);
    CALL(&p, A, TOP, 110); /* [100,110) top */
    assert_stack(&p, "m:top/0;m:a/0");
    CALL(&p, B, A, 130); /* [110,130) a */
    assert_stack(&p, "m:top/0;m:a/0;m:b/0");
    assert_int_equal(bs_proc_depth(&p), 3);
    /* charged to the stack current DURING the interval: a, not b */
    assert_tree(&p, "<root> 100 0\n"
                    "m:top/0 10 1\n"
                    "m:top/0;m:a/0 20 1\n"
                    "m:top/0;m:a/0;m:b/0 0 1\n");
    RET(&p, A, 160); /* [130,160) b */
    assert_stack(&p, "m:top/0;m:a/0");
    CALL(&p, B, A, 170); /* [160,170) a; same node, second call */
    RET(&p, A, 175);     /* [170,175) b */
    RET(&p, TOP, 200);   /* [175,200) a */
    assert_stack(&p, "m:top/0");
    CALL(&p, C, TOP, 230); /* [200,230) top */
    RET(&p, TOP, 231);     /* [230,231) c */
    RET_UNDEF(&p, 300);    /* [231,300) top */
    assert_int_equal(bs_proc_depth(&p), 0);
    bs_proc_flush(&p, 400); /* [300,400) the root again */
    assert_tree(&p, "<root> 200 0\n"
                    "m:top/0 109 1\n"
                    "m:top/0;m:a/0 55 1\n"
                    "m:top/0;m:a/0;m:b/0 35 2\n"
                    "m:top/0;m:c/0 1 1\n");
    assert_int_equal(tu_total_self(&p), 400);
    assert_int_equal(p.events, 10);
    assert_int_equal(p.dropped, 0);
    assert_false(p.truncated);
    bs_proc_free(&p);
}

/* Clock readings a few ns out of order never make a negative interval. */
static void test_time_never_negative(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 1000, 1, 1);
    CALL_ROOT(&p, TOP, 900); /* earlier than start: nothing charged */
    CALL(&p, A, TOP, 1100);  /* [1000,1100) top */
    RET(&p, TOP, 1050);      /* out of order: 0 */
    CALL(&p, B, TOP, 1200);  /* [1100,1200) top */
    assert_tree(&p, "<root> 0 0\n"
                    "m:top/0 200 1\n"
                    "m:top/0;m:a/0 0 1\n"
                    "m:top/0;m:b/0 0 1\n");
    bs_proc_free(&p);
}

/* Observed chain (internals.md 1b): top -> a (body) -> b (tail) -> c (tail)
 * -> erlang:phash2 (BIF): a, b and c all report caller top; phash2 reports c;
 * then return_to c, return_to top, return_to undefined. */
static void test_tail_calls_pop_to_caller(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    CALL_ROOT(&p, TOP, 0);
    CALL(&p, A, TOP, 10);
    assert_stack(&p, "m:top/0;m:a/0");
    CALL(&p, B, TOP, 20); /* tail call from a: a's frame is gone */
    assert_stack(&p, "m:top/0;m:b/0");
    CALL(&p, C, TOP, 40); /* tail call from b */
    assert_stack(&p, "m:top/0;m:c/0");
    assert_int_equal(bs_proc_depth(&p), 2);
    CALL(&p, PHASH2, C, 70);
    assert_stack(&p, "m:top/0;m:c/0;erlang:phash2/1");
    RET(&p, C, 71);
    assert_stack(&p, "m:top/0;m:c/0");
    RET(&p, TOP, 100);
    assert_stack(&p, "m:top/0");
    RET_UNDEF(&p, 150);
    assert_tree(&p, "<root> 0 0\n"
                    "m:top/0 60 1\n"
                    "m:top/0;m:a/0 10 1\n"
                    "m:top/0;m:b/0 20 1\n"
                    "m:top/0;m:c/0 59 1\n"
                    "m:top/0;m:c/0;erlang:phash2/1 1 1\n");
    bs_proc_free(&p);
}

/* A chain of tail calls deep in a stack, then a single return_to. With
 * {caller} the chain never grows the stack; without it (UNKNOWN/UNDEFINED:
 * keep the stack) it does, and the one return_to still unwinds it all. */
static void test_tail_chain_then_one_return(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    CALL_ROOT(&p, RUN, 0);
    CALL(&p, TOP, RUN, 1);
    CALL(&p, A, TOP, 2); /* body */
    CALL(&p, B, TOP, 3); /* tail */
    CALL(&p, C, TOP, 4); /* tail */
    CALL(&p, X, TOP, 5); /* tail */
    assert_stack(&p, "m:run/2;m:top/0;m:x/0");
    RET(&p, TOP, 6);
    assert_stack(&p, "m:run/2;m:top/0");
    bs_proc_free(&p);

    new_proc(&p, 0, 1, 1);
    CALL_ROOT(&p, RUN, 0);
    CALL_UNKNOWN(&p, TOP, 1);
    CALL_UNKNOWN(&p, A, 2);
    CALL_UNDEF(&p, B, 3);
    CALL_UNKNOWN(&p, C, 4);
    assert_stack(&p, "m:run/2;m:top/0;m:a/0;m:b/0;m:c/0");
    RET(&p, TOP, 6); /* pops c, then b and a */
    assert_stack(&p, "m:run/2;m:top/0");
    RET(&p, RUN, 7);
    assert_stack(&p, "m:run/2");
    bs_proc_free(&p);
}

/* loop(N, Acc) -> loop(N-1, step(Acc)): per iteration `call loop` (caller
 * top, a tail call), `call step` (caller loop), `return_to loop`. */
static void test_tail_recursive_loop(void **state)
{
    (void)state;
    const uint64_t n = tu_small() ? 200000 : 1000000;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    CALL_ROOT(&p, TOP, 0);
    uint64_t t = 0;
    uint32_t nodes_after_first = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (bs_proc_call(&p, &LOOP, BS_CALLER_FRAME, &TOP, ++t) != 0)
            fail_msg("call loop refused at %llu", (unsigned long long)i);
        if (bs_proc_call(&p, &STEP, BS_CALLER_FRAME, &LOOP, ++t) != 0)
            fail_msg("call step refused at %llu", (unsigned long long)i);
        if (bs_proc_depth(&p) != 3)
            fail_msg("depth %u in step at %llu", bs_proc_depth(&p), (unsigned long long)i);
        if (bs_proc_return_to(&p, &LOOP, ++t) != 0)
            fail_msg("return_to refused at %llu", (unsigned long long)i);
        if (bs_proc_depth(&p) != 2)
            fail_msg("depth %u after iteration %llu", bs_proc_depth(&p), (unsigned long long)i);
        if (i == 0)
            nodes_after_first = p.tree.n_nodes;
        else if (p.tree.n_nodes != nodes_after_first)
            fail_msg("node count grew to %u at %llu", p.tree.n_nodes, (unsigned long long)i);
    }
    assert_int_equal(nodes_after_first, 4); /* root, top, loop, step */
    RET(&p, TOP, ++t);
    bs_proc_flush(&p, t);
    char expected[256];
    /* step runs 1 ns per iteration; loop 1 ns before step and 1 ns after,
     * except after the last step where the return_to top comes 1 ns later. */
    snprintf(expected, sizeof expected,
             "<root> 0 0\nm:top/0 1 1\nm:top/0;m:loop/2 %llu %llu\nm:top/0;m:loop/2;m:step/1 %llu %llu\n",
             (unsigned long long)(2 * n), (unsigned long long)n, (unsigned long long)n,
             (unsigned long long)n);
    assert_tree(&p, expected);
    bs_proc_free(&p);
}

/* even(0) -> true; even(N) -> not odd(N-1). odd(0) -> false; odd(N) -> not even(N-1).
 * Body calls: the caller is always the current top. */
static void test_mutual_recursion_depth(void **state)
{
    (void)state;
    const uint32_t n = 1000;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    CALL_ROOT(&p, TOP, 0);
    uint64_t t = 0;
    CALL(&p, EVEN, TOP, ++t);
    for (uint32_t k = n; k > 0; k--) {
        int is_even = (n - k) % 2 == 0; /* the frame making this call */
        const bs_key callee = is_even ? ODD : EVEN, caller = is_even ? EVEN : ODD;
        CALL(&p, callee, caller, ++t);
        assert_int_equal(bs_proc_depth(&p), 2 + (n - k) + 1);
    }
    assert_int_equal(bs_proc_depth(&p), n + 2); /* top + even(n) .. x(0) */
    assert_int_equal(p.tree.n_nodes, n + 3);
    /* names alternate even/odd from the bottom up */
    uint32_t at = p.current;
    for (uint32_t d = n + 2; d >= 2; d--, at = p.tree.nodes[at].parent) {
        int even = (d % 2) == 0;
        assert_true(bs_key_eq(&p.tree.nodes[at].key, even ? &EVEN : &ODD));
        assert_int_equal(p.tree.nodes[at].depth, d);
    }
    assert_true(bs_key_eq(&p.tree.nodes[at].key, &TOP));
    /* unwind: each return_to names the frame below */
    for (uint32_t d = n + 2; d > 2; d--) {
        const bs_key to = (d - 1) % 2 == 0 ? EVEN : ODD;
        RET(&p, to, ++t);
        assert_int_equal(bs_proc_depth(&p), d - 1);
    }
    RET(&p, TOP, ++t);
    assert_int_equal(bs_proc_depth(&p), 1);
    assert_int_equal(p.tree.n_nodes, n + 3);
    for (uint32_t i = 2; i < p.tree.n_nodes; i++) {
        assert_int_equal(p.tree.nodes[i].calls, 1);
        /* 1 ns before calling down, 1 ns after the callee returned; the
         * deepest frame only ran once, 1 ns */
        assert_int_equal(p.tree.nodes[i].self_ns, i == p.tree.n_nodes - 1 ? 1 : 2);
    }
    bs_proc_free(&p);
}

/* ---- 100,000-deep body recursion, on a thread with a 512 KiB stack ---- */

typedef struct deep_result {
    uint32_t n;
    char err[256];
} deep_result;

#define DEEP_CHECK(r, cond, ...)                                   \
    do {                                                           \
        if (!(cond) && !(r)->err[0])                               \
            snprintf((r)->err, sizeof (r)->err, __VA_ARGS__);      \
    } while (0)

static int deeper_line_ok(const char *text, size_t len, uint32_t frames, const char *leaf, const char *count)
{
    tu_str want = {0};
    tu_put(&want, "<0.1.0>");
    for (uint32_t i = 0; i < frames; i++)
        tu_put(&want, ";m:f/1");
    tu_put(&want, "%s %s\n", leaf, count);
    int ok = want.len <= len && memcmp(text + len - want.len, want.s, want.len) == 0;
    free(want.s);
    return ok;
}

static void *deep_thread(void *arg)
{
    deep_result *r = arg;
    const uint32_t n = r->n;
    bs_proc p;
    if (bs_proc_init(&p, NULL, 0, 1, 1) < 0) {
        snprintf(r->err, sizeof r->err, "init");
        return NULL;
    }
    /* fib-like self recursion: f calls f, caller f; no time passes on the way down */
    DEEP_CHECK(r, bs_proc_call(&p, &F, BS_CALLER_ROOT, NULL, 1) == 0, "first call");
    for (uint32_t i = 1; i < n; i++)
        DEEP_CHECK(r, bs_proc_call(&p, &F, BS_CALLER_FRAME, &F, 1) == 0, "call %u", i);
    DEEP_CHECK(r, bs_proc_depth(&p) == n, "depth %u, want %u", bs_proc_depth(&p), n);
    DEEP_CHECK(r, p.tree.n_nodes == n + 1, "nodes %u", p.tree.n_nodes);
    /* 1000 ns at the bottom, then unwind exactly one frame per return_to */
    for (uint32_t d = n; d > 1; d--) {
        DEEP_CHECK(r, bs_proc_return_to(&p, &F, 1001) == 0, "return %u", d);
        DEEP_CHECK(r, bs_proc_depth(&p) == d - 1, "depth %u after return at %u", bs_proc_depth(&p), d);
    }
    DEEP_CHECK(r, bs_proc_return_to(&p, NULL, 2001) == 0, "return_to undefined");
    DEEP_CHECK(r, bs_proc_depth(&p) == 0, "not empty at the end");
    bs_proc_flush(&p, 2001);
    DEEP_CHECK(r, p.tree.nodes[1].self_ns == 1000 && p.tree.nodes[n].self_ns == 1000, "self times");
    DEEP_CHECK(r, p.tree.nodes[n].depth == n, "deepest node depth");

    bs_profile prof;
    DEEP_CHECK(r, bs_profile_init(&prof) == 0, "profile init");
    DEEP_CHECK(r, bs_profile_add_proc(&prof, &p, "<0.1.0>", tu_namer, NULL) == 0, "add_proc");
    bs_proc_free(&p);
    bs_profile_compute_totals(&prof);
    DEEP_CHECK(r, prof.trees[0].nodes[0].total_ns == 2001, "root total %llu",
               (unsigned long long)prof.trees[0].nodes[0].total_ns);
    DEEP_CHECK(r, prof.trees[0].nodes[1].total_ns == 2000, "f total");

    for (int pass = 0; pass < 2; pass++) {
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);
        bs_folded_opts fo = {0};
        if (pass == 0)
            fo.max_depth = n + 10; /* every frame drawn */
        DEEP_CHECK(r, bs_write_folded(out, &prof, &fo) == 0, "write_folded pass %d", pass);
        fclose(out);
        char why[128] = "";
        DEEP_CHECK(r, tu_check_folded(text, len, why, sizeof why) == 0, "grammar: %s", why);
        /* line 1: the outermost f; line 2: the deepest f, or the [deeper] leaf */
        static const char first[] = "<0.1.0>;m:f/1 1\n";
        DEEP_CHECK(r, len > sizeof first && memcmp(text, first, sizeof first - 1) == 0, "first line");
        if (pass == 0) {
            DEEP_CHECK(r, len == (sizeof first - 1) + 7 + 6 * (size_t)n + 3, "length %zu", len);
            DEEP_CHECK(r, deeper_line_ok(text, len, n, "", "1"), "deepest line");
        } else {
            DEEP_CHECK(r, deeper_line_ok(text, len, 4096, ";[deeper]", "1"), "[deeper] line");
        }
        free(text);
    }

    DEEP_CHECK(r, bs_profile_merge_processes(&prof, "all") == 0, "merge");
    DEEP_CHECK(r, prof.n_trees == 1 && prof.trees[0].n_nodes == n + 1, "merged shape");
    DEEP_CHECK(r, prof.trees[0].nodes[0].total_ns == 2001, "merged total");
    bs_profile_free(&prof);
    return NULL;
}

static void test_deep_body_recursion(void **state)
{
    (void)state;
    deep_result r = {.n = tu_small() ? 30000 : 100000};
    pthread_attr_t attr;
    pthread_t th;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, 512 * 1024), 0);
    assert_int_equal(pthread_create(&th, &attr, deep_thread, &r), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    pthread_attr_destroy(&attr);
    if (r.err[0])
        fail_msg("%s", r.err);
}

/* exc_top -> try exc_mid() -> exc_leaf() -> erlang:error(boom): the VM sends
 * one return_to exc_top, which pops three frames. */
static void test_exception_unwinds_several_frames(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    CALL_ROOT(&p, TOP, 0);
    CALL(&p, MID, TOP, 10);
    CALL(&p, LEAF, MID, 20);
    CALL(&p, ERR, LEAF, 30);
    assert_int_equal(bs_proc_depth(&p), 4);
    RET(&p, TOP, 35); /* [30,35) erlang:error/1 */
    assert_stack(&p, "m:top/0");
    CALL(&p, X, TOP, 50); /* [35,50) top: the catch clause */
    assert_stack(&p, "m:top/0;m:x/0");
    assert_tree(&p, "<root> 0 0\n"
                    "m:top/0 25 1\n"
                    "m:top/0;m:mid/0 10 1\n"
                    "m:top/0;m:mid/0;m:leaf/0 10 1\n"
                    "m:top/0;m:mid/0;m:leaf/0;erlang:error/1 5 1\n"
                    "m:top/0;m:x/0 0 1\n");
    bs_proc_free(&p);

    /* No return_to at all (the catch is in untraced code's frame): the next
     * call's {caller} repairs the stack. */
    new_proc(&p, 0, 1, 1);
    CALL_ROOT(&p, TOP, 0);
    CALL(&p, MID, TOP, 1);
    CALL(&p, LEAF, MID, 2);
    CALL(&p, ERR, LEAF, 3);
    CALL(&p, X, TOP, 4);
    assert_stack(&p, "m:top/0;m:x/0");
    bs_proc_free(&p);
}

static void test_return_to_undefined_and_unknown(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    CALL_ROOT(&p, TOP, 0);
    CALL(&p, A, TOP, 1);
    CALL(&p, B, A, 2);
    RET_UNDEF(&p, 3);
    assert_int_equal(bs_proc_depth(&p), 0);
    assert_int_equal(p.current, 0);
    /* return_to a frame never seen: a new root frame */
    CALL_ROOT(&p, TOP, 10);
    CALL(&p, A, TOP, 11);
    RET(&p, INIT, 12);
    assert_stack(&p, "gen_server:init/1");
    assert_int_equal(p.tree.nodes[p.current].parent, 0);
    CALL(&p, X, INIT, 20); /* [12,20) init */
    RET(&p, INIT, 21);
    bs_proc_flush(&p, 30); /* [21,30) init */
    assert_tree(&p, "<root> 7 0\n"
                    "m:top/0 2 2\n"
                    "m:top/0;m:a/0 2 2\n"
                    "m:top/0;m:a/0;m:b/0 1 1\n"
                    "gen_server:init/1 17 0\n"
                    "gen_server:init/1;m:x/0 1 1\n");
    /* return_to on an empty stack also makes a root */
    RET_UNDEF(&p, 31);
    RET(&p, WAIT, 32);
    assert_stack(&p, "gen_server:wait/0");
    /* BS_CALLER_ROOT empties the stack before pushing */
    CALL_ROOT(&p, RUN, 33);
    assert_stack(&p, "m:run/2");
    /* a call whose caller is not on the stack: the caller was entered
     * before tracing began and becomes a root frame */
    CALL(&p, A, TOP, 34);
    assert_stack(&p, "m:top/0;m:a/0");
    /* so a tail-recursive loop called from it stays flat */
    CALL(&p, A, TOP, 35);
    CALL(&p, A, TOP, 36);
    assert_stack(&p, "m:top/0;m:a/0");
    bs_proc_free(&p);
}

/* A process already inside gen_server:loop -> wait when tracing started. */
static void test_already_running_seeded(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    const bs_key frames[] = {INIT, LOOPG, WAIT};
    assert_int_equal(bs_proc_seed(&p, frames, 3, 0, 5), 0); /* [0,5) root */
    assert_stack(&p, "gen_server:init/1;gen_server:loop/7;gen_server:wait/0");
    RET(&p, LOOPG, 25); /* [5,25) wait */
    assert_stack(&p, "gen_server:init/1;gen_server:loop/7");
    CALL(&p, X, LOOPG, 30); /* [25,30) loop */
    RET(&p, LOOPG, 40);     /* [30,40) x */
    CALL(&p, WAIT, INIT, 41); /* tail call from loop back to wait: caller init */
    assert_stack(&p, "gen_server:init/1;gen_server:wait/0");
    bs_proc_flush(&p, 50);
    assert_tree(&p, "<root> 5 0\n"
                    "gen_server:init/1 0 0\n"
                    "gen_server:init/1;gen_server:loop/7 6 0\n"
                    "gen_server:init/1;gen_server:loop/7;gen_server:wait/0 20 0\n"
                    "gen_server:init/1;gen_server:loop/7;m:x/0 10 1\n"
                    "gen_server:init/1;gen_server:wait/0 9 1\n");
    /* seeding again replaces the stack */
    const bs_key other[] = {RUN};
    assert_int_equal(bs_proc_seed(&p, other, 1, 0, 60), 0);
    assert_stack(&p, "m:run/2");
    assert_int_equal(bs_proc_seed(&p, NULL, 0, 0, 61), 0);
    assert_int_equal(bs_proc_depth(&p), 0);
    bs_proc_free(&p);
}

/* A process that profiles itself: seeded while it waits inside
 * beamspy:start (own code, left out), it returns from there, works, and
 * calls beamspy:stop from a deeper frame. beamspy's calls and returns stay
 * on the process's stack instead of cutting it in two. */
static void test_seeded_own_code(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    const bs_key frames[] = {TOP, RUN};
    assert_int_equal(bs_proc_seed(&p, frames, 2, 1, 5), 0); /* [0,5) root */
    CALL_OWN(&p, MONO, 10); /* [5,10) run: own code runs on it */
    assert_stack(&p, "m:top/0;m:run/2;m:mono/0");
    RET_OWN(&p, 12);        /* [10,12) mono */
    assert_stack(&p, "m:top/0;m:run/2");
    RET(&p, RUN, 15);       /* [12,15) run: beamspy:start returns to run */
    assert_stack(&p, "m:top/0;m:run/2");
    CALL(&p, A, RUN, 20);   /* [15,20) run */
    CALL(&p, B, A, 25);     /* [20,25) a */
    RET(&p, A, 30);         /* [25,30) b */
    CALL_OWN(&p, X, 35);    /* [30,35) a: a calls beamspy:stop, unseen */
    assert_stack(&p, "m:top/0;m:run/2;m:a/0;m:x/0");
    CALL_OWN(&p, LEAF, 40); /* [35,40) x, which tail-calls leaf */
    assert_stack(&p, "m:top/0;m:run/2;m:a/0;m:leaf/0");
    RET_OWN(&p, 45);        /* [40,45) leaf */
    CALL_OWN(&p, MID, 50);  /* [45,50) a */
    assert_stack(&p, "m:top/0;m:run/2;m:a/0;m:mid/0");
    RET_OWN(&p, 55);        /* [50,55) mid */
    RET(&p, A, 60);         /* [55,60) a: beamspy:stop returns to a */
    assert_stack(&p, "m:top/0;m:run/2;m:a/0");
    RET(&p, RUN, 65);       /* [60,65) a */
    assert_stack(&p, "m:top/0;m:run/2");
    bs_proc_flush(&p, 70);  /* [65,70) run */
    assert_tree(&p, "<root> 5 0\n"
                    "m:top/0 0 0\n"
                    "m:top/0;m:run/2 18 0\n"
                    "m:top/0;m:run/2;m:mono/0 2 1\n"
                    "m:top/0;m:run/2;m:a/0 25 1\n"
                    "m:top/0;m:run/2;m:a/0;m:b/0 5 1\n"
                    "m:top/0;m:run/2;m:a/0;m:x/0 5 1\n"
                    "m:top/0;m:run/2;m:a/0;m:leaf/0 5 1\n"
                    "m:top/0;m:run/2;m:a/0;m:mid/0 5 1\n");
    bs_proc_free(&p);

    /* Not seeded (apply's wrapper at the bottom of the process): own code
     * is the root, as BS_CALLER_ROOT and return_to undefined. */
    new_proc(&p, 0, 1, 1);
    CALL(&p, A, TOP, 10);
    CALL_OWN(&p, B, 20);
    assert_stack(&p, "m:b/0");
    RET_OWN(&p, 30);
    assert_int_equal(bs_proc_depth(&p), 0);
    bs_proc_free(&p);
}

/* The fib(5) trace of internals.md without seeding: the worker was inside its
 * fun; its first call's caller is not on the empty stack, and the following
 * return_to into the fun makes the fun a root. */
static void test_already_running_unseeded(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    CALL(&p, MONO, WORKER, 10); /* the worker fun was entered before tracing */
    assert_stack(&p, "m:'-worker/2-fun-0-'/3;m:mono/0");
    RET(&p, WORKER, 20);
    assert_stack(&p, "m:'-worker/2-fun-0-'/3");
    CALL(&p, RUN, WORKER, 30);
    CALL(&p, F, WORKER, 40); /* run/2 tail-calls fib */
    assert_stack(&p, "m:'-worker/2-fun-0-'/3;m:f/1");
    RET(&p, WORKER, 50);
    bs_proc_flush(&p, 55);
    assert_tree(&p, "<root> 10 0\n"
                    "m:'-worker/2-fun-0-'/3 15 0\n"
                    "m:'-worker/2-fun-0-'/3;m:mono/0 10 1\n"
                    "m:'-worker/2-fun-0-'/3;m:run/2 10 1\n"
                    "m:'-worker/2-fun-0-'/3;m:f/1 10 1\n");
    bs_proc_free(&p);
}

static void run_sleep_gc(bs_proc *p)
{
    CALL_ROOT(p, TOP, 0);
    CALL(p, A, TOP, 100);                             /* [0,100) top */
    assert_int_equal(bs_proc_sched_out(p, 300), 0);   /* [100,300) a */
    assert_int_equal(bs_proc_sched_out(p, 350), 0);   /* repeated: ignored */
    assert_int_equal(bs_proc_sched_in(p, 1300), 0);   /* [300,1300) scheduled out */
    assert_int_equal(bs_proc_sched_in(p, 1310), 0);   /* repeated: charged to a at the next event */
    assert_int_equal(bs_proc_gc_start(p, 1400), 0);   /* [1300,1400) a */
    assert_int_equal(bs_proc_gc_end(p, 1450), 0);     /* [1400,1450) GC */
    RET(p, TOP, 1500);                                /* [1450,1500) a: 200+100+50 */
    assert_int_equal(bs_proc_sched_out(p, 1600), 0);  /* [1500,1600) top */
    assert_int_equal(bs_proc_gc_start(p, 1700), 0);   /* [1600,1700) out */
    assert_int_equal(bs_proc_gc_end(p, 1720), 0);     /* [1700,1720) GC */
    assert_int_equal(bs_proc_sched_in(p, 2000), 0);   /* [1720,2000) out again */
    bs_proc_flush(p, 2100);                           /* [2000,2100) top */
}

static void test_sleep_and_gc_leaves(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    run_sleep_gc(&p);
    assert_tree(&p, "<root> 0 0\n"
                    "m:top/0 300 1\n"
                    "m:top/0;m:a/0 350 1\n"
                    "m:top/0;m:a/0;SLEEP 1000 1\n"
                    "m:top/0;m:a/0;GC 50 1\n"
                    "m:top/0;SLEEP 380 1\n"
                    "m:top/0;GC 20 1\n");
    assert_int_equal(tu_total_self(&p), 2100);
    bs_proc_free(&p);

    /* charge_sleep off: the scheduled-out time is charged nowhere */
    new_proc(&p, 0, 0, 1);
    run_sleep_gc(&p);
    assert_tree(&p, "<root> 0 0\n"
                    "m:top/0 300 1\n"
                    "m:top/0;m:a/0 350 1\n"
                    "m:top/0;m:a/0;GC 50 1\n"
                    "m:top/0;GC 20 1\n");
    assert_int_equal(tu_total_self(&p), 2100 - 1000 - 380); /* 300+350+50+20 */
    bs_proc_free(&p);

    /* neither */
    new_proc(&p, 0, 0, 0);
    run_sleep_gc(&p);
    assert_tree(&p, "<root> 0 0\n"
                    "m:top/0 300 1\n"
                    "m:top/0;m:a/0 350 1\n");
    bs_proc_free(&p);
}

/* With the split, an out interval is WAIT when the first event after its
 * `in' is a receive (woken by a message or a timeout), RUNNABLE otherwise
 * (preempted): in the tree and in the timeline. */
static void test_wait_and_runnable_leaves(void **state)
{
    (void)state;
    bs_span_quota quota;
    bs_span_quota_init(&quota, 1000);
    bs_proc p;
    new_proc(&p, 0, 1, 0);
    bs_proc_split_waits(&p);
    bs_proc_enable_timeline(&p, &quota);
    CALL_ROOT(&p, TOP, 0);
    CALL(&p, A, TOP, 100);
    assert_int_equal(bs_proc_sched_out(&p, 200), 0); /* in a receive */
    assert_int_equal(bs_proc_sched_in(&p, 1200), 0);
    assert_int_equal(bs_proc_received(&p, 1210), 0); /* woken by a message: [200,1200) WAIT */
    assert_int_equal(bs_proc_received(&p, 1220), 0); /* not after an in: changes nothing */
    CALL(&p, B, A, 1300);
    assert_int_equal(bs_proc_sched_out(&p, 1400), 0); /* preempted */
    assert_int_equal(bs_proc_sched_in(&p, 1450), 0);
    RET(&p, A, 1500); /* [1400,1450) RUNNABLE */
    assert_int_equal(bs_proc_sched_out(&p, 1600), 0); /* preempted, then out again at once */
    assert_int_equal(bs_proc_sched_in(&p, 1620), 0);
    assert_int_equal(bs_proc_sched_out(&p, 1630), 0); /* nothing ran: not told yet */
    assert_int_equal(bs_proc_sched_in(&p, 1700), 0);
    bs_proc_flush(&p, 1800); /* running at the end, no receive: both RUNNABLE */
    /* b's WAIT leaf is left empty (writers draw no empty leaf) */
    assert_tree(&p, "<root> 0 0\n"
                    "m:top/0 100 1\n"
                    "m:top/0;m:a/0 410 1\n"
                    "m:top/0;m:a/0;WAIT 1000 1\n"
                    "m:top/0;m:a/0;m:b/0 150 1\n"
                    "m:top/0;m:a/0;m:b/0;WAIT 0 0\n"
                    "m:top/0;m:a/0;m:b/0;RUNNABLE 50 1\n"
                    "m:top/0;m:a/0;RUNNABLE 90 2\n");
    /* the timeline's spans name the same leaves */
    uint64_t wait_ns = 0, runnable_ns = 0;
    for (uint32_t i = 0; i < p.timeline.n; i++) {
        const bs_span *sp = &p.timeline.spans[i];
        const bs_key *k = &p.tree.nodes[sp->node].key;
        if (bs_key_is_pseudo(k))
            *(k->function == BS_PSEUDO_WAIT ? &wait_ns : &runnable_ns) += sp->end_ns - sp->start_ns;
    }
    assert_int_equal(wait_ns, 1000);
    assert_int_equal(runnable_ns, 140);
    bs_proc_free(&p);

    /* killed while waiting: in, then out_exited: the wait stays WAIT */
    new_proc(&p, 0, 1, 0);
    bs_proc_split_waits(&p);
    CALL_ROOT(&p, TOP, 0);
    assert_int_equal(bs_proc_sched_out(&p, 100), 0);
    assert_int_equal(bs_proc_sched_in(&p, 900), 0);
    bs_proc_exit(&p, 910);
    assert_tree(&p, "<root> 0 0\n"
                    "m:top/0 110 1\n"
                    "m:top/0;WAIT 800 1\n");
    bs_proc_free(&p);

    /* without the split (no receive events): SLEEP, as before */
    new_proc(&p, 0, 1, 0);
    CALL_ROOT(&p, TOP, 0);
    assert_int_equal(bs_proc_sched_out(&p, 100), 0);
    assert_int_equal(bs_proc_sched_in(&p, 300), 0);
    assert_int_equal(bs_proc_received(&p, 310), 0);
    bs_proc_flush(&p, 400);
    assert_tree(&p, "<root> 0 0\n"
                    "m:top/0 200 1\n"
                    "m:top/0;SLEEP 200 1\n");
    bs_proc_free(&p);
}

/* Time of the timeline's WAIT and RUNNABLE spans. */
static void pseudo_span_times(const bs_proc *p, uint64_t *wait_ns, uint64_t *runnable_ns)
{
    *wait_ns = *runnable_ns = 0;
    for (uint32_t i = 0; i < p->timeline.n; i++) {
        const bs_span *sp = &p->timeline.spans[i];
        const bs_key *k = &p->tree.nodes[sp->node].key;
        if (bs_key_is_pseudo(k) && k->function == BS_PSEUDO_WAIT)
            *wait_ns += sp->end_ns - sp->start_ns;
        else if (bs_key_is_pseudo(k) && k->function == BS_PSEUDO_RUNNABLE)
            *runnable_ns += sp->end_ns - sp->start_ns;
    }
}

/* A process waiting in a receive is scheduled in to handle signals (a
 * monitor, a link, process_info, a code purge check: `in' then `out' with
 * nothing between, as the VM reports them) or a GC request (`in', GC, `out'):
 * it ran no code, so it is still waiting; its time stays WAIT whether a
 * message, an exit or the end of the recording comes next. A preempted
 * process scheduled in and out again at once (a trapping BIF) is runnable
 * all along: the call it makes next says so for every interval. */
static void test_signals_keep_a_wait(void **state)
{
    (void)state;
    bs_span_quota quota;
    bs_span_quota_init(&quota, 1000);
    bs_proc p;
    uint64_t wait_ns, runnable_ns;

    /* signals, a GC request, then a message */
    new_proc(&p, 0, 1, 1);
    bs_proc_split_waits(&p);
    bs_proc_enable_timeline(&p, &quota);
    CALL_ROOT(&p, LOOPG, 0);
    assert_int_equal(bs_proc_sched_out(&p, 100), 0); /* in a receive */
    assert_int_equal(bs_proc_sched_in(&p, 1100), 0); /* a monitor */
    assert_int_equal(bs_proc_sched_out(&p, 1105), 0);
    assert_int_equal(bs_proc_sched_in(&p, 2105), 0); /* erlang:garbage_collect(Pid) */
    assert_int_equal(bs_proc_gc_start(&p, 2110), 0);
    assert_int_equal(bs_proc_gc_end(&p, 2130), 0);
    assert_int_equal(bs_proc_sched_out(&p, 2135), 0);
    assert_int_equal(bs_proc_sched_in(&p, 3135), 0);
    assert_int_equal(bs_proc_received(&p, 3140), 0); /* the message */
    CALL(&p, A, LOOPG, 3150);
    bs_proc_flush(&p, 3200);
    assert_tree(&p, "<root> 0 0\n"
                    "gen_server:loop/7 130 1\n"
                    "gen_server:loop/7;WAIT 3000 3\n"
                    "gen_server:loop/7;GC 20 1\n"
                    "gen_server:loop/7;m:a/0 50 1\n");
    pseudo_span_times(&p, &wait_ns, &runnable_ns);
    assert_int_equal(wait_ns, 3000);
    assert_int_equal(runnable_ns, 0);
    bs_proc_free(&p);

    /* a signal, then waiting to the end of the recording */
    new_proc(&p, 0, 1, 0);
    bs_proc_split_waits(&p);
    CALL_ROOT(&p, LOOPG, 0);
    assert_int_equal(bs_proc_sched_out(&p, 100), 0);
    assert_int_equal(bs_proc_sched_in(&p, 1100), 0);
    assert_int_equal(bs_proc_sched_out(&p, 1110), 0);
    bs_proc_flush(&p, 5110);
    assert_tree(&p, "<root> 0 0\n"
                    "gen_server:loop/7 110 1\n"
                    "gen_server:loop/7;WAIT 5000 2\n");
    bs_proc_free(&p);

    /* ... or to a GC of its own the recording ends in (charge_gc on) */
    new_proc(&p, 0, 1, 1);
    bs_proc_split_waits(&p);
    CALL_ROOT(&p, LOOPG, 0);
    assert_int_equal(bs_proc_sched_out(&p, 100), 0);
    assert_int_equal(bs_proc_sched_in(&p, 1100), 0);
    assert_int_equal(bs_proc_sched_out(&p, 1110), 0);
    assert_int_equal(bs_proc_gc_start(&p, 2110), 0);
    bs_proc_flush(&p, 2130);
    assert_tree(&p, "<root> 0 0\n"
                    "gen_server:loop/7 110 1\n"
                    "gen_server:loop/7;WAIT 2000 2\n"
                    "gen_server:loop/7;GC 20 1\n");
    bs_proc_free(&p);

    /* a signal, then killed */
    new_proc(&p, 0, 1, 0);
    bs_proc_split_waits(&p);
    CALL_ROOT(&p, LOOPG, 0);
    assert_int_equal(bs_proc_sched_out(&p, 100), 0);
    assert_int_equal(bs_proc_sched_in(&p, 1100), 0);
    assert_int_equal(bs_proc_sched_out(&p, 1110), 0);
    assert_int_equal(bs_proc_sched_in(&p, 2110), 0);
    bs_proc_exit(&p, 2120);
    assert_tree(&p, "<root> 0 0\n"
                    "gen_server:loop/7 120 1\n"
                    "gen_server:loop/7;WAIT 2000 2\n");
    bs_proc_free(&p);

    /* preempted, in and out at once, then code runs: RUNNABLE both times */
    new_proc(&p, 0, 1, 0);
    bs_proc_split_waits(&p);
    bs_proc_enable_timeline(&p, &quota);
    CALL_ROOT(&p, F, 0);
    assert_int_equal(bs_proc_sched_out(&p, 100), 0);
    assert_int_equal(bs_proc_sched_in(&p, 300), 0);
    assert_int_equal(bs_proc_sched_out(&p, 310), 0);
    assert_int_equal(bs_proc_sched_in(&p, 510), 0);
    CALL(&p, A, F, 520);
    /* then waits for a message, and gets one */
    assert_int_equal(bs_proc_sched_out(&p, 600), 0);
    assert_int_equal(bs_proc_sched_in(&p, 1600), 0);
    assert_int_equal(bs_proc_received(&p, 1605), 0);
    bs_proc_flush(&p, 1700);
    assert_tree(&p, "<root> 0 0\n"
                    "m:f/1 120 1\n"
                    "m:f/1;WAIT 0 0\n"
                    "m:f/1;RUNNABLE 400 2\n"
                    "m:f/1;m:a/0 180 1\n"
                    "m:f/1;m:a/0;WAIT 1000 1\n");
    pseudo_span_times(&p, &wait_ns, &runnable_ns);
    assert_int_equal(wait_ns, 1000);
    assert_int_equal(runnable_ns, 400);
    bs_proc_free(&p);
}

/* Whole-VM views: drop_wait leaves WAIT out and the notes say how much;
 * order_by_cpu puts the busiest process first; a WAIT leaf emptied by the
 * split is not exported. */
static void test_whole_vm_filter(void **state)
{
    (void)state;
    bs_proc idle, busy;
    new_proc(&idle, 0, 1, 0);
    new_proc(&busy, 0, 1, 0);
    bs_proc_split_waits(&idle);
    bs_proc_split_waits(&busy);
    CALL_ROOT(&idle, LOOPG, 0);
    assert_int_equal(bs_proc_sched_out(&idle, 10), 0); /* waits to the end */
    bs_proc_flush(&idle, 2000000);
    CALL_ROOT(&busy, F, 0);
    assert_int_equal(bs_proc_sched_out(&busy, 1000000), 0); /* preempted */
    assert_int_equal(bs_proc_sched_in(&busy, 1000100), 0);
    CALL(&busy, A, F, 1000200);
    bs_proc_flush(&busy, 2000000);
    bs_profile prof;
    assert_int_equal(bs_profile_init(&prof), 0);
    assert_int_equal(bs_profile_add_proc(&prof, &idle, "<0.1.0> idle", tu_namer, NULL), 0);
    assert_int_equal(bs_profile_add_proc(&prof, &busy, "<0.2.0> busy", tu_namer, NULL), 0);
    /* busy's WAIT leaf went empty (its interval was RUNNABLE): not exported */
    for (uint32_t i = 0; i < prof.trees[1].n_nodes; i++)
        assert_int_not_equal(prof.trees[1].nodes[i].frame, prof.wait_frame);
    assert_int_equal(bs_profile_filter(&prof, &(bs_filter){.drop_wait = 1, .order_by_cpu = 1}), 0);
    assert_string_equal(bs_frame_name(&prof.frames, prof.trees[0].nodes[0].frame), "<0.2.0> busy");
    int runnable = 0;
    for (uint32_t t = 0; t < prof.n_trees; t++)
        for (uint32_t i = 0; i < prof.trees[t].n_nodes; i++) {
            assert_int_not_equal(prof.trees[t].nodes[i].frame, prof.wait_frame);
            runnable += prof.trees[t].nodes[i].frame == prof.runnable_frame;
        }
    assert_int_equal(runnable, 1);
    assert_non_null(strstr(prof.notes, "idle time left out: 0.002 s of WAIT in 1 processes"));
    assert_non_null(strstr(prof.notes, "RUNNABLE: able to run"));
    bs_profile_free(&prof);
    bs_proc_free(&idle);
    bs_proc_free(&busy);
}

/* A sampled profile (BS_UNIT_COUNT: weights are sample counts, as record
 * --mode sample and folded input give): the note on what drop_wait left out
 * counts samples. It read "0.000 s of WAIT" (counts taken as nanoseconds). */
static void test_whole_vm_filter_samples(void **state)
{
    (void)state;
    static const char folded[] = "<0.1.0> idle;gen_server:loop/7;WAIT 1500\n"
                                 "<0.2.0> busy;m:f/0 40\n"
                                 "<0.2.0> busy;m:f/0;WAIT 3\n"
                                 "<0.3.0> other;m:g/0 1\n";
    FILE *in = fmemopen((void *)folded, sizeof folded - 1, "r");
    assert_non_null(in);
    bs_profile prof;
    bs_read_error err;
    assert_int_equal(bs_read_folded(in, "sampled.folded", &prof, &err), 0);
    fclose(in);
    assert_int_equal(prof.unit, BS_UNIT_COUNT);
    assert_int_equal(bs_profile_filter(&prof, &(bs_filter){.drop_wait = 1, .order_by_cpu = 1}), 0);
    assert_non_null(strstr(prof.notes, "idle time left out: 1503 samples of WAIT in 2 processes"));
    assert_null(strstr(prof.notes, " s of WAIT"));
    bs_profile_free(&prof);
}

static void test_exit_stops_charging(void **state)
{
    (void)state;
    bs_proc p;
    new_proc(&p, 0, 1, 1);
    CALL_ROOT(&p, TOP, 0);
    CALL(&p, A, TOP, 10);
    bs_proc_exit(&p, 30); /* [10,30) a */
    assert_int_equal(bs_proc_depth(&p), 0);
    CALL(&p, B, A, 40); /* ignored after exit */
    RET(&p, TOP, 50);
    assert_int_equal(bs_proc_sched_out(&p, 60), 0);
    assert_int_equal(bs_proc_gc_start(&p, 60), 0);
    bs_proc_flush(&p, 100);
    assert_tree(&p, "<root> 0 0\n"
                    "m:top/0 10 1\n"
                    "m:top/0;m:a/0 20 1\n");
    assert_int_equal(p.events, 7);
    bs_proc_free(&p);
}

/* ---- migration: one process's events fed alternately by two threads ---- */

typedef struct handover {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int turn;        /* which thread may feed */
    size_t next;     /* next event index */
    const tu_event *ev;
    size_t n;
    bs_proc *p;
    uint64_t seed;
    int failed;
} handover;

typedef struct worker_arg {
    handover *h;
    int id;
} worker_arg;

static void *migrate_worker(void *arg)
{
    worker_arg *w = arg;
    handover *h = w->h;
    uint64_t s = h->seed + (uint64_t)w->id;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (h->turn != w->id && h->next < h->n)
            pthread_cond_wait(&h->cv, &h->mu);
        if (h->next >= h->n)
            break;
        /* run a slice as a scheduler would, then hand the process over */
        size_t slice = 1 + (size_t)(tu_rand(&s) % 40);
        for (size_t k = 0; k < slice && h->next < h->n; k++) {
            if (tu_feed(h->p, &h->ev[h->next]) != 0)
                h->failed = 1;
            h->next++;
        }
        h->turn = 1 - w->id;
        pthread_cond_broadcast(&h->cv);
    }
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static void assert_same_proc(const bs_proc *a, const bs_proc *b)
{
    assert_int_equal(a->tree.n_nodes, b->tree.n_nodes);
    for (uint32_t i = 0; i < a->tree.n_nodes; i++) {
        const bs_tree_node *x = &a->tree.nodes[i], *y = &b->tree.nodes[i];
        assert_true(bs_key_eq(&x->key, &y->key));
        assert_int_equal(x->parent, y->parent);
        assert_int_equal(x->depth, y->depth);
        assert_int_equal(x->self_ns, y->self_ns);
        assert_int_equal(x->calls, y->calls);
    }
    assert_int_equal(a->current, b->current);
    assert_int_equal(a->last_ns, b->last_ns);
    assert_int_equal(a->state, b->state);
    assert_int_equal(a->events, b->events);
    assert_int_equal(a->dropped, b->dropped);
}

static void test_migration_between_threads(void **state)
{
    (void)state;
    const size_t n = tu_small() ? 20000 : 200000;
    tu_event *ev = malloc(n * sizeof *ev);
    assert_non_null(ev);
    tu_random_events(ev, n, 0xBEA5, 12);

    bs_proc single, multi;
    new_proc(&single, 0, 1, 1);
    new_proc(&multi, 0, 1, 1);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(tu_feed(&single, &ev[i]), 0);
    assert_true(single.tree.n_nodes > 100); /* the script exercises a real tree */

    handover h = {.turn = 0, .ev = ev, .n = n, .p = &multi, .seed = 42};
    assert_int_equal(pthread_mutex_init(&h.mu, NULL), 0);
    assert_int_equal(pthread_cond_init(&h.cv, NULL), 0);
    pthread_t th[2];
    worker_arg wa[2] = {{&h, 0}, {&h, 1}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, migrate_worker, &wa[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
    assert_false(h.failed);
    assert_int_equal(h.next, n);

    bs_proc_flush(&single, ev[n - 1].t + 10);
    bs_proc_flush(&multi, ev[n - 1].t + 10);
    assert_same_proc(&single, &multi);
    char *a = tu_dump(&single), *b = tu_dump(&multi);
    assert_string_equal(a, b);
    free(a);
    free(b);
    bs_proc_free(&single);
    bs_proc_free(&multi);
    free(ev);
}

/* Whatever the event stream, the tree stays consistent: every node's parent
 * is older, depth = parent's depth + 1, no pseudo node has children, and the
 * time charged adds up when nothing is asleep. */
static void test_random_streams_keep_invariants(void **state)
{
    (void)state;
    const size_t n = 20000;
    tu_event *ev = malloc(n * sizeof *ev);
    assert_non_null(ev);
    for (uint64_t seed = 1; seed <= 8; seed++) {
        tu_random_events(ev, n, seed * 7919, 1 + (unsigned)seed * 3);
        bs_proc p;
        new_proc(&p, 0, 1, 1);
        if (seed % 2) {
            /* A seeded process running beamspy's own code: calls from the
             * root become calls from own code, half the returns into
             * undefined returns into own code. */
            const bs_key frames[] = {INIT, LOOPG};
            assert_int_equal(bs_proc_seed(&p, frames, 2, seed % 4 == 1, 0), 0);
            for (size_t i = 0; i < n; i++) {
                if (ev[i].kind == EV_CALL && ev[i].caller_kind == BS_CALLER_ROOT)
                    ev[i].caller_kind = BS_CALLER_OWN_CODE;
                if (ev[i].kind == EV_RETURN_TO && ev[i].undefined && i % 2)
                    ev[i].own_code = 1;
            }
        }
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(tu_feed(&p, &ev[i]), 0);
            assert_false(bs_key_is_pseudo(&p.tree.nodes[p.current].key) && p.current != 0);
        }
        bs_proc_flush(&p, ev[n - 1].t + 1);
        for (uint32_t i = 1; i < p.tree.n_nodes; i++) {
            const bs_tree_node *nd = &p.tree.nodes[i];
            assert_true(nd->parent < i);
            assert_int_equal(nd->depth, p.tree.nodes[nd->parent].depth + 1);
            assert_false(nd->parent != 0 && bs_key_is_pseudo(&p.tree.nodes[nd->parent].key));
        }
        /* with SLEEP and GC charged, every ns from 0 to the end is somewhere */
        assert_int_equal(tu_total_self(&p), ev[n - 1].t + 1);
        assert_int_equal(p.events, n);
        bs_proc_free(&p);
    }
    free(ev);
}

/* A process whose recording the budget refused (a capture's next one, once
 * memory ran out) has no tree: every event, the flush at session stop,
 * seeding and freeing must leave it alone (the flush once wrote through its
 * NULL node array and ended the VM). */
static void test_refused_init_left_alone(void **state)
{
    (void)state;
    bs_budget b;
    bs_budget_init(&b, 64); /* less than the first node array */
    bs_proc p;
    assert_int_equal(bs_proc_init(&p, &b, 5, 1, 1), -1);
    assert_null(p.tree.nodes);
    assert_int_equal(p.state, BS_EXITED);
    assert_int_equal(bs_proc_call(&p, &A, BS_CALLER_ROOT, NULL, 10), 0);
    assert_int_equal(bs_proc_sched_out(&p, 20), 0);
    assert_int_equal(bs_proc_sched_in(&p, 30), 0);
    assert_int_equal(bs_proc_gc_start(&p, 40), 0);
    assert_int_equal(bs_proc_gc_end(&p, 50), 0);
    assert_int_equal(bs_proc_return_to(&p, NULL, 60), 0);
    assert_int_equal(bs_proc_seed(&p, &TOP, 1, 0, 70), 0);
    bs_proc_flush(&p, 80);
    bs_proc_exit(&p, 90);
    assert_null(p.tree.nodes);
    bs_proc_free(&p);
}

/* A finished tree gives its unused node room back to the budget (100,000
 * captures of a tiny call keep 2 nodes each, not 64) and still grows. */
static void test_tree_trim(void **state)
{
    (void)state;
    bs_budget b;
    bs_budget_init(&b, 1 << 20);
    bs_proc p;
    assert_int_equal(bs_proc_init(&p, &b, 0, 0, 0), 0);
    assert_int_equal(bs_proc_call(&p, &A, BS_CALLER_ROOT, NULL, 10), 0);
    assert_int_equal(bs_proc_return_to(&p, NULL, 20), 0);
    size_t before = bs_call_tree_bytes(&p.tree), used = b.used;
    bs_call_tree_trim(&p.tree);
    assert_int_equal(p.tree.cap_nodes, 2);
    assert_int_equal(before - bs_call_tree_bytes(&p.tree), 62 * sizeof(bs_tree_node));
    assert_int_equal(used - b.used, 62 * sizeof(bs_tree_node));
    assert_int_equal(bs_proc_call(&p, &B, BS_CALLER_ROOT, NULL, 30), 0);
    assert_int_equal(bs_proc_call(&p, &C, BS_CALLER_FRAME, &B, 40), 0);
    assert_int_equal(p.tree.n_nodes, 4);
    assert_true(p.tree.cap_nodes >= 4);
    bs_proc_flush(&p, 50);
    char *dump = tu_dump(&p);
    assert_non_null(strstr(dump, "m:b/0;m:c/0"));
    free(dump);
    bs_proc_free(&p);
    assert_int_equal(b.used, 0);
}

/* argv[1], if given, runs only the test cases whose name matches it (run.sh
 * runs each case in its own process). */
int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_body_calls_and_returns),
        cmocka_unit_test(test_time_never_negative),
        cmocka_unit_test(test_tail_calls_pop_to_caller),
        cmocka_unit_test(test_tail_chain_then_one_return),
        cmocka_unit_test(test_tail_recursive_loop),
        cmocka_unit_test(test_mutual_recursion_depth),
        cmocka_unit_test(test_deep_body_recursion),
        cmocka_unit_test(test_exception_unwinds_several_frames),
        cmocka_unit_test(test_return_to_undefined_and_unknown),
        cmocka_unit_test(test_already_running_seeded),
        cmocka_unit_test(test_seeded_own_code),
        cmocka_unit_test(test_already_running_unseeded),
        cmocka_unit_test(test_sleep_and_gc_leaves),
        cmocka_unit_test(test_wait_and_runnable_leaves),
        cmocka_unit_test(test_signals_keep_a_wait),
        cmocka_unit_test(test_whole_vm_filter),
        cmocka_unit_test(test_whole_vm_filter_samples),
        cmocka_unit_test(test_exit_stops_charging),
        cmocka_unit_test(test_migration_between_threads),
        cmocka_unit_test(test_random_streams_keep_invariants),
        cmocka_unit_test(test_refused_init_left_alone),
        cmocka_unit_test(test_tree_trim),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
