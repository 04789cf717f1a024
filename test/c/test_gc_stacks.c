/* test_gc_stacks.c — the Erlang stacks of sampled collections, taken as
 * they end on the collecting thread and found by the drain by time
 * (c_src/cpu/gc_stacks.h). The stacks here are built in this process's
 * memory, read back through process_vm_readv as the VM's are. */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cpu/gc_stacks.h"

#define RA 0x7f0000001234ull /* the return address into the collection's caller */

/* An Erlang stack in words: the collecting fragment's frame at the top
 * (caller's frame pointer, RA), then the caller's and its caller's frames,
 * each (frame pointer, return address), the last one's frame pointer 0. */
typedef struct fake_stack {
    uint64_t w[16];
} fake_stack;

static uint64_t build(fake_stack *s, uint64_t ra, uint64_t r1, uint64_t r2)
{
    memset(s, 0, sizeof *s);
    uint64_t base = (uint64_t)(uintptr_t)s->w;
    s->w[0] = base + 4 * 8; /* the fragment's frame: the caller's frame is at w[4] */
    s->w[1] = ra;
    s->w[2] = 0x11, s->w[3] = 0x22; /* the caller's y registers */
    s->w[4] = base + 8 * 8, s->w[5] = r1;
    s->w[8] = 0, s->w[9] = r2;
    return base;
}

/* Stacks of n threads, thread 0 sampled through f->head. */
typedef struct fixture {
    bs_gc_stacks g;
    bs_proc_mem mem;
    uint64_t head;
} fixture;

static void setup(fixture *f, unsigned n)
{
    bs_proc_mem_init(&f->mem, (int)getpid());
    assert_int_equal(bs_gc_stacks_init(&f->g, n), 0);
    f->head = 0;
    bs_gc_stacks_bind(&f->g, 0, &f->head);
}

static void test_taken_only_when_sampled(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 2);
    bs_gc_stack_log *log = &f.g.logs[0];
    fake_stack s;
    uint64_t stop = build(&s, RA, 0x7f0000002000, 0x7f0000003000);
    /* No sample in it: the ring's head did not move; nothing is taken. */
    bs_gc_stack_start(log, 100, RA);
    assert_int_equal(bs_gc_stack_end(&f.g, log, 200, stop, BS_GC_TOP_FRAGMENT, &f.mem), 0);
    /* A sample in it. */
    bs_gc_stack_start(log, 300, RA);
    f.head += 1024;
    assert_int_equal(bs_gc_stack_end(&f.g, log, 400, stop, BS_GC_TOP_FRAGMENT, &f.mem), 1);
    assert_int_equal(atomic_load(&f.g.taken), 1);
    uint64_t out[BS_GC_STACK_FRAMES];
    assert_int_equal(bs_gc_stack_at(log, 150, RA, out, BS_GC_STACK_FRAMES), 0); /* the unsampled one */
    assert_int_equal(bs_gc_stack_at(log, 350, RA, out, BS_GC_STACK_FRAMES), 3);
    assert_int_equal(out[0], RA);
    assert_int_equal(out[1], 0x7f0000002000);
    assert_int_equal(out[2], 0x7f0000003000);
    /* Another caller at that time: not this collection's sample. */
    assert_int_equal(bs_gc_stack_at(log, 360, RA + 8, out, BS_GC_STACK_FRAMES), 0);
    /* At most cap frames. */
    assert_int_equal(bs_gc_stack_at(log, 370, RA, out, 2), 2);
    /* A sample after it: none, and the reader is past it for good. */
    assert_int_equal(bs_gc_stack_at(log, 450, RA, out, BS_GC_STACK_FRAMES), 0);
    assert_int_equal(bs_gc_stack_at(log, 380, RA, out, BS_GC_STACK_FRAMES), 0);
    /* A collection whose start took no caller takes nothing. */
    bs_gc_stack_start(log, 500, 0);
    f.head += 1024;
    assert_int_equal(bs_gc_stack_end(&f.g, log, 600, stop, BS_GC_TOP_FRAGMENT, &f.mem), 0);
    /* An unbound thread (not sampled) takes nothing. */
    bs_gc_stack_start(&f.g.logs[1], 700, RA);
    assert_int_equal(bs_gc_stack_end(&f.g, &f.g.logs[1], 800, stop, BS_GC_TOP_FRAGMENT, &f.mem), 0);
    bs_gc_stacks_free(&f.g);
}

static void test_stack_checked(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 1);
    bs_gc_stack_log *log = &f.g.logs[0];
    fake_stack s;
    uint64_t stop = build(&s, RA + 16, 0x7f0000002000, 0x7f0000003000);
    /* The top frame does not return to the caller the start took. */
    bs_gc_stack_start(log, 100, RA);
    f.head++;
    assert_int_equal(bs_gc_stack_end(&f.g, log, 200, stop, BS_GC_TOP_FRAGMENT, &f.mem), 0);
    /* A stack top that is not mapped: nothing read, no fault. */
    bs_gc_stack_start(log, 300, RA);
    f.head++;
    assert_int_equal(bs_gc_stack_end(&f.g, log, 400, 16, BS_GC_TOP_FRAGMENT, &f.mem), 0);
    /* A frame pointer chain that loops back stops there. */
    stop = build(&s, RA, 0x7f0000002000, 0x7f0000003000);
    s.w[4] = stop; /* the caller's frame points back up */
    bs_gc_stack_start(log, 500, RA);
    f.head++;
    assert_int_equal(bs_gc_stack_end(&f.g, log, 600, stop, BS_GC_TOP_FRAGMENT, &f.mem), 1);
    uint64_t out[BS_GC_STACK_FRAMES];
    assert_int_equal(bs_gc_stack_at(log, 550, RA, out, BS_GC_STACK_FRAMES), 2);
    assert_int_equal(out[1], 0x7f0000002000);
    assert_int_equal(atomic_load(&f.g.taken), 1);
    bs_gc_stacks_free(&f.g);
}

/* A collection on a dirty scheduler: the process's own frame on top (it
 * was scheduled out at ra, in the function it runs), taken as the
 * collection starts and open until it ends; found by time whatever ra. */
static void test_open_until_closed(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 1);
    bs_gc_stack_log *log = &f.g.logs[0];
    fake_stack s;
    uint64_t stop = build(&s, 0x7f0000002000, 0x7f0000003000, 0x7f0000004000);
    /* The process's frame is w[0..1]: its caller's return address at w[1]. */
    assert_int_equal(bs_gc_stack_take_open(&f.g, log, 1000, RA, stop, 0, &f.mem), 1);
    uint64_t out[BS_GC_STACK_FRAMES];
    /* Open: any sample after its start is in it, with or without a caller asked. */
    assert_int_equal(bs_gc_stack_at(log, 5000, 0, out, BS_GC_STACK_FRAMES), 4);
    assert_int_equal(out[0], RA);
    assert_int_equal(out[1], 0x7f0000002000);
    assert_int_equal(out[2], 0x7f0000003000);
    assert_int_equal(out[3], 0x7f0000004000);
    assert_int_equal(bs_gc_stack_at(log, 6000, RA, out, BS_GC_STACK_FRAMES), 4);
    bs_gc_stack_close(log, 7000);
    assert_int_equal(bs_gc_stack_at(log, 6500, 0, out, BS_GC_STACK_FRAMES), 4);
    assert_int_equal(bs_gc_stack_at(log, 7500, 0, out, BS_GC_STACK_FRAMES), 0);
    /* Closing twice, or with nothing open, changes nothing. */
    bs_gc_stack_close(log, 9000);
    assert_int_equal(bs_gc_stack_at(log, 8000, 0, out, BS_GC_STACK_FRAMES), 0);
    /* No caller known: nothing taken. */
    assert_int_equal(bs_gc_stack_take_open(&f.g, log, 10000, 0, stop, 0, &f.mem), 0);
    bs_gc_stacks_free(&f.g);
}

/* A process scheduled out inside a function with y registers (a
 * collection a BIF asked for): its frame pointer, saved with its stack top,
 * is above them; the walk starts there. A frame pointer outside the copied
 * stack takes nothing. */
static void test_open_from_frame_pointer(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 1);
    bs_gc_stack_log *log = &f.g.logs[0];
    fake_stack s;
    uint64_t stop = build(&s, 0x7f0000001000, 0x7f0000002000, 0x7f0000003000);
    /* w[0..3] are the running function's y registers now; its frame is w[4..5]. */
    s.w[0] = 0x5b, s.w[1] = 0x6b;
    assert_int_equal(bs_gc_stack_take_open(&f.g, log, 1000, RA, stop, stop + 4 * 8, &f.mem), 1);
    uint64_t out[BS_GC_STACK_FRAMES];
    assert_int_equal(bs_gc_stack_at(log, 2000, 0, out, BS_GC_STACK_FRAMES), 3);
    assert_int_equal(out[0], RA);
    assert_int_equal(out[1], 0x7f0000002000);
    assert_int_equal(out[2], 0x7f0000003000);
    bs_gc_stack_close(log, 3000);
    assert_int_equal(bs_gc_stack_take_open(&f.g, log, 4000, RA, stop, stop - 16, &f.mem), 0);
    assert_int_equal(bs_gc_stack_take_open(&f.g, log, 4000, RA, stop, stop + BS_GC_STACK_COPY, &f.mem), 0);
    assert_int_equal(atomic_load(&f.g.taken), 1);
    bs_gc_stacks_free(&f.g);
}

/* More sampled collections than the ring holds before the drain: the
 * oldest are gone (not found), the newest found. */
static void test_ring_laps(void **state)
{
    (void)state;
    fixture f;
    setup(&f, 1);
    bs_gc_stack_log *log = &f.g.logs[0];
    fake_stack s;
    for (uint64_t i = 0; i < BS_GC_STACK_RING + 5; i++) {
        uint64_t stop = build(&s, RA, 0x7f0000100000 + i, 0x7f0000003000);
        bs_gc_stack_start(log, 1000 * i, RA);
        f.head++;
        assert_int_equal(bs_gc_stack_end(&f.g, log, 1000 * i + 500, stop, BS_GC_TOP_FRAGMENT, &f.mem), 1);
    }
    uint64_t out[BS_GC_STACK_FRAMES];
    assert_int_equal(bs_gc_stack_at(log, 2100, RA, out, BS_GC_STACK_FRAMES), 0);
    uint64_t last = BS_GC_STACK_RING + 4;
    assert_int_equal(bs_gc_stack_at(log, 1000 * (last - 3) + 100, RA, out, BS_GC_STACK_FRAMES), 3);
    assert_int_equal(out[1], 0x7f0000100000 + last - 3);
    assert_int_equal(bs_gc_stack_at(log, 1000 * last + 499, RA, out, BS_GC_STACK_FRAMES), 3);
    assert_int_equal(out[1], 0x7f0000100000 + last);
    bs_gc_stacks_free(&f.g);
}

/* One thread publishes while another reads, as the collecting thread and
 * the drain do: whatever is found is one whole entry (its frames match its
 * time), never a mix of two. */
typedef struct race {
    bs_gc_stacks g;
    bs_proc_mem mem;
    uint64_t head;
    _Atomic int done;
} race;

#define RACE_ROUNDS 20000u

static void *writer(void *arg)
{
    race *r = arg;
    fake_stack s;
    for (uint64_t i = 1; i <= RACE_ROUNDS; i++) {
        uint64_t stop = build(&s, RA, 0x7f0000000000 + i, 0x7f1000000000 + i);
        bs_gc_stack_start(&r->g.logs[0], 10 * i, RA);
        __atomic_fetch_add(&r->head, 1, __ATOMIC_RELAXED);
        (void)bs_gc_stack_end(&r->g, &r->g.logs[0], 10 * i + 5, stop, BS_GC_TOP_FRAGMENT, &r->mem);
    }
    atomic_store(&r->done, 1);
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    static race r;
    bs_proc_mem_init(&r.mem, (int)getpid());
    assert_int_equal(bs_gc_stacks_init(&r.g, 1), 0);
    r.head = 0;
    atomic_store(&r.done, 0);
    bs_gc_stacks_bind(&r.g, 0, &r.head);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer, &r), 0);
    uint64_t found = 0, out[BS_GC_STACK_FRAMES];
    /* The drain's side: the newest collection published, whose entry the
     * writer may be overwriting a lap later. */
    for (uint64_t last = 0; !atomic_load(&r.done);) {
        uint64_t i = atomic_load(&r.g.logs[0].written);
        if (i == 0 || i == last)
            continue;
        last = i;
        uint32_t n = bs_gc_stack_at(&r.g.logs[0], 10 * i + 2, RA, out, BS_GC_STACK_FRAMES);
        if (n) {
            assert_int_equal(n, 3);
            assert_int_equal(out[1], 0x7f0000000000 + i);
            assert_int_equal(out[2], 0x7f1000000000 + i);
            found++;
        }
    }
    pthread_join(t, NULL);
    /* Once the writer is done, the newest entries are all there. */
    assert_int_equal(bs_gc_stack_at(&r.g.logs[0], 10 * RACE_ROUNDS + 3, RA, out, BS_GC_STACK_FRAMES), 3);
    assert_int_equal(out[1], 0x7f0000000000 + RACE_ROUNDS);
    print_message("found %llu entries while they were written\n", (unsigned long long)found);
    bs_gc_stacks_free(&r.g);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taken_only_when_sampled),
        cmocka_unit_test(test_stack_checked),
        cmocka_unit_test(test_open_until_closed),
        cmocka_unit_test(test_open_from_frame_pointer),
        cmocka_unit_test(test_ring_laps),
        cmocka_unit_test(test_concurrent),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
