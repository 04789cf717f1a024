/* test_misc.c — the memory budget (budget.h) alone and under a recording
 * process (events dropped with -1, p->truncated set, used never above the
 * cap, also with several threads sharing one budget), the call tree's child
 * lookup, atomic output files (atomic_file.h: commit shows the whole file,
 * abort and failures leave neither target nor temporary), and the lock-free
 * pid table (nif/pid_table.h: concurrent inserts from several threads all
 * found, a full table refuses, also when filled concurrently). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/text_fit.h"
#include "writers/folded.h"
#include "nif/pid_table.h"
#include "test_util.h"

#define OK(x) assert_int_equal((x), 0)

/* ------------------------------- budget ------------------------------- */

static void test_budget_accounting(void **state)
{
    (void)state;
    bs_budget b;
    bs_budget_init(&b, 100);
    OK(bs_budget_charge(&b, 60));
    assert_int_equal(bs_budget_charge(&b, 50), -1);
    assert_true(bs_budget_is_exhausted(&b));
    assert_int_equal(atomic_load(&b.used), 60);
    OK(bs_budget_charge(&b, 40)); /* exactly the cap is allowed */
    assert_int_equal(atomic_load(&b.used), 100);
    assert_int_equal(atomic_load(&b.peak), 100);
    assert_int_equal(bs_budget_charge(&b, 1), -1);
    assert_int_equal(bs_budget_charge(&b, SIZE_MAX), -1); /* no wrap-around */
    assert_int_equal(atomic_load(&b.used), 100);
    bs_budget_release(&b, 100);
    assert_int_equal(atomic_load(&b.used), 0);
    assert_int_equal(bs_budget_charge(&b, SIZE_MAX - 50), -1);
    assert_int_equal(atomic_load(&b.used), 0);
    assert_true(bs_budget_is_exhausted(&b)); /* never cleared */

    /* allocation helpers keep used equal to what is held */
    bs_budget_init(&b, 1000);
    char *p = bs_budget_alloc(&b, 10);
    assert_non_null(p);
    assert_int_equal(atomic_load(&b.used), 10);
    p = bs_budget_realloc(&b, p, 10, 300);
    assert_non_null(p);
    assert_int_equal(atomic_load(&b.used), 300);
    p = bs_budget_realloc(&b, p, 300, 20);
    assert_non_null(p);
    assert_int_equal(atomic_load(&b.used), 20);
    assert_null(bs_budget_realloc(&b, p, 20, 5000)); /* refused: p still valid */
    assert_int_equal(atomic_load(&b.used), 20);
    assert_null(bs_budget_alloc(&b, 1001));
    bs_budget_free(&b, p, 20);
    bs_budget_free(&b, NULL, 20); /* NULL is a no-op */
    assert_int_equal(atomic_load(&b.used), 0);
    assert_int_equal(atomic_load(&b.peak), 300);

    /* cap 0 = unlimited; NULL budget = no accounting */
    bs_budget_init(&b, 0);
    OK(bs_budget_charge(&b, SIZE_MAX / 2));
    assert_false(bs_budget_is_exhausted(&b));
    OK(bs_budget_charge(NULL, 12345));
    assert_false(bs_budget_is_exhausted(NULL));
    void *q = bs_budget_alloc(NULL, 16);
    assert_non_null(q);
    bs_budget_free(NULL, q, 16);
}

static void test_budget_caps_recording(void **state)
{
    (void)state;
    const size_t cap = 8192;
    bs_budget b;
    bs_budget_init(&b, cap);
    bs_proc p;
    OK(bs_proc_init(&p, &b, 0, 1, 1));
    assert_true(atomic_load(&b.used) > 0);
    assert_int_equal(atomic_load(&b.used), bs_call_tree_bytes(&p.tree));

    /* 10,000 distinct nested calls, with a sleep now and then */
    const bs_key root = KEY(M_M, F_TOP, 0);
    OK(bs_proc_call(&p, &root, BS_CALLER_ROOT, NULL, 1));
    int refused = 0, first_refused = -1;
    bs_key prev = root;
    uint64_t t = 1;
    for (int i = 0; i < 10000; i++) {
        bs_key k = KEY(M_M, 1000 + (uint64_t)i, 1);
        int rc = bs_proc_call(&p, &k, BS_CALLER_FRAME, &prev, ++t);
        assert_true(rc == 0 || rc == -1);
        if (rc < 0) {
            refused++;
            if (first_refused < 0)
                first_refused = i;
        } else {
            prev = k;
        }
        if (i % 100 == 99) {
            int r1 = bs_proc_sched_out(&p, ++t), r2 = bs_proc_sched_in(&p, ++t);
            assert_true(r1 == 0 || r1 == -1);
            assert_true(r2 == 0 || r2 == -1);
        }
        if (atomic_load(&b.used) > cap)
            fail_msg("used %zu > cap %zu at %d", (size_t)atomic_load(&b.used), cap, i);
    }
    assert_true(first_refused > 10); /* some calls fit */
    assert_true(refused > 9000);
    assert_true(p.truncated);
    assert_true(p.dropped >= (uint64_t)refused);
    assert_true(bs_budget_is_exhausted(&b));
    assert_true(atomic_load(&b.peak) <= cap);
    assert_int_equal(atomic_load(&b.used), bs_call_tree_bytes(&p.tree));
    /* events that need no memory still work: return into a known frame */
    OK(bs_proc_return_to(&p, &root, ++t));
    assert_int_equal(bs_proc_depth(&p), 1);

    /* the profile says it was cut short and still writes valid output */
    bs_profile prof;
    OK(bs_profile_init(&prof));
    OK(bs_profile_add_proc(&prof, &p, "<0.90.0>", tu_namer, NULL));
    assert_string_equal(prof.truncated, "max_memory");
    assert_int_equal(prof.trees[0].dropped, p.dropped);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    bs_folded_opts fo = {.ns_per_unit = 1};
    OK(bs_write_folded(out, &prof, &fo));
    fclose(out);
    char why[128] = "";
    if (tu_check_folded(text, len, why, sizeof why) != 0)
        fail_msg("grammar: %s", why);
    assert_true(len > 0);
    free(text);
    bs_profile_free(&prof);

    bs_proc_free(&p);
    assert_int_equal(atomic_load(&b.used), 0);

    /* too small for even an empty tree: init refuses and holds nothing */
    bs_budget_init(&b, 100);
    assert_int_equal(bs_proc_init(&p, &b, 0, 1, 1), -1);
    assert_int_equal(atomic_load(&b.used), 0);
    bs_budget_init(&b, 64 * sizeof(bs_tree_node) + 10); /* nodes fit, slots do not */
    assert_int_equal(bs_proc_init(&p, &b, 0, 1, 1), -1);
    assert_int_equal(atomic_load(&b.used), 0);
}

/* Several recording threads share one budget while another thread watches
 * `used`: it never goes above the cap, and everything is given back. */
typedef struct budget_arg {
    bs_budget *b;
    uint64_t seed;
    int refused;
} budget_arg;

static _Atomic int budget_stop;
static _Atomic size_t budget_max_seen;

static void *budget_watcher(void *arg)
{
    bs_budget *b = arg;
    while (!atomic_load(&budget_stop)) {
        size_t u = atomic_load(&b->used);
        if (u > atomic_load(&budget_max_seen))
            atomic_store(&budget_max_seen, u);
    }
    return NULL;
}

static void *budget_worker(void *arg)
{
    budget_arg *w = arg;
    const size_t n = 4000;
    tu_event *ev = malloc(n * sizeof *ev);
    if (!ev)
        return NULL;
    for (int round = 0; round < 6; round++) {
        tu_random_events(ev, n, w->seed + (uint64_t)round, 200);
        bs_proc p;
        if (bs_proc_init(&p, w->b, 0, 1, 1) < 0) {
            w->refused++;
            continue;
        }
        for (size_t i = 0; i < n; i++)
            if (tu_feed(&p, &ev[i]) < 0)
                w->refused++;
        bs_proc_free(&p);
    }
    free(ev);
    return NULL;
}

static void test_budget_shared_by_threads(void **state)
{
    (void)state;
    const size_t cap = 96 * 1024;
    bs_budget b;
    bs_budget_init(&b, cap);
    atomic_store(&budget_stop, 0);
    atomic_store(&budget_max_seen, 0);
    pthread_t watcher, th[4];
    budget_arg args[4];
    assert_int_equal(pthread_create(&watcher, NULL, budget_watcher, &b), 0);
    for (int i = 0; i < 4; i++) {
        args[i] = (budget_arg){&b, 1000 + (uint64_t)i * 17, 0};
        assert_int_equal(pthread_create(&th[i], NULL, budget_worker, &args[i]), 0);
    }
    int refused = 0;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        refused += args[i].refused;
    }
    atomic_store(&budget_stop, 1);
    assert_int_equal(pthread_join(watcher, NULL), 0);
    assert_true(refused > 0); /* the cap was reached */
    assert_true(atomic_load(&b.peak) <= cap);
    if (atomic_load(&budget_max_seen) > cap)
        fail_msg("used was seen at %zu > cap %zu", (size_t)atomic_load(&budget_max_seen), cap);
    assert_int_equal(atomic_load(&b.used), 0);
}

static void test_call_tree_child(void **state)
{
    (void)state;
    bs_budget b;
    bs_budget_init(&b, 0);
    bs_call_tree t;
    OK(bs_call_tree_init(&t, &b));
    assert_int_equal(t.n_nodes, 1);
    assert_int_equal(t.nodes[0].parent, BS_NO_NODE);
    /* a wide and deep tree: children found again, indices stable */
    uint32_t ids[2000];
    for (uint32_t i = 0; i < 2000; i++) {
        bs_key k = KEY(1 + i % 7, i, i % 3);
        uint32_t parent = i < 10 ? 0 : ids[i / 10];
        ids[i] = bs_call_tree_child(&t, parent, &k);
        assert_int_equal(ids[i], i + 1);
        assert_int_equal(t.nodes[ids[i]].parent, parent);
        assert_int_equal(t.nodes[ids[i]].depth, t.nodes[parent].depth + 1);
    }
    for (uint32_t i = 0; i < 2000; i++) {
        bs_key k = KEY(1 + i % 7, i, i % 3);
        uint32_t parent = i < 10 ? 0 : ids[i / 10];
        assert_int_equal(bs_call_tree_child(&t, parent, &k), ids[i]);
    }
    /* same key under different parents: different nodes */
    bs_key same = KEY(9, 9, 9);
    uint32_t x = bs_call_tree_child(&t, 1, &same), y = bs_call_tree_child(&t, 2, &same);
    assert_int_not_equal(x, y);
    assert_int_equal(t.n_nodes, 2003);
    assert_int_equal(atomic_load(&b.used), bs_call_tree_bytes(&t));
    bs_call_tree_free(&t);
    assert_int_equal(atomic_load(&b.used), 0);
}

/* ----------------------------- atomic file ----------------------------- */

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    tu_str b = {0};
    tu_put(&b, "%s", "");
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (b.len + n + 1 > b.cap) {
            b.cap = (b.len + n + 1) * 2;
            b.s = realloc(b.s, b.cap);
            if (!b.s)
                abort();
        }
        memcpy(b.s + b.len, chunk, n);
        b.len += n;
        b.s[b.len] = '\0';
    }
    fclose(f);
    *len = b.len;
    return b.s;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void test_atomic_commit_and_abort(void **state)
{
    (void)state;
    char dir[] = "/tmp/bs_atomic_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/out.folded", dir);

    /* commit: the whole content appears at once, and only then */
    bs_atomic_file af;
    OK(bs_atomic_open(&af, path));
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(count_entries(dir), 1); /* the temporary */
    assert_int_equal(strncmp(af.tmp_path, path, strlen(path)), 0);
    size_t want = 0;
    for (int i = 0; i < 20000; i++) { /* > the 64 KiB stdio buffer */
        int n = fprintf(af.fp, "line;%d %d\n", i, i + 1);
        assert_true(n > 0);
        want += (size_t)n;
    }
    assert_int_equal(access(path, F_OK), -1);
    OK(bs_atomic_commit(&af));
    assert_null(af.fp);
    size_t len = 0;
    char *text = read_all(path, &len);
    assert_non_null(text);
    assert_int_equal(len, want);
    assert_memory_equal(text, "line;0 1\nline;1 2\n", 18);
    assert_memory_equal(text + len - 17, "line;19999 20000\n", 17);
    free(text);
    assert_int_equal(count_entries(dir), 1); /* no temporary left */

    /* abort: the old file stays as it was, the temporary goes */
    write_file(path, "old\n");
    OK(bs_atomic_open(&af, path));
    fputs("new content\n", af.fp);
    assert_int_equal(count_entries(dir), 2);
    bs_atomic_abort(&af);
    assert_null(af.fp);
    text = read_all(path, &len);
    assert_string_equal(text, "old\n");
    free(text);
    assert_int_equal(count_entries(dir), 1);

    /* commit replaces an existing file */
    OK(bs_atomic_open(&af, path));
    fputs("new content\n", af.fp);
    OK(bs_atomic_commit(&af));
    text = read_all(path, &len);
    assert_string_equal(text, "new content\n");
    free(text);
    assert_int_equal(count_entries(dir), 1);

    /* abort of a new name leaves nothing at all */
    char path2[512];
    snprintf(path2, sizeof path2, "%s/never.svg", dir);
    OK(bs_atomic_open(&af, path2));
    fputs("x", af.fp);
    bs_atomic_abort(&af);
    assert_int_equal(access(path2, F_OK), -1);
    assert_int_equal(count_entries(dir), 1);

    /* the target is a directory: refused at once, nothing left */
    char sub[512];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    OK(mkdir(sub, 0755));
    errno = 0;
    assert_int_equal(bs_atomic_open(&af, sub), -1);
    assert_int_equal(errno, EISDIR);
    struct stat st;
    OK(stat(sub, &st));
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(count_entries(dir), 2); /* out.folded and sub */
    OK(rmdir(sub));

    OK(unlink(path));
    OK(rmdir(dir));
}

static void test_atomic_unwritable(void **state)
{
    (void)state;
    char dir[] = "/tmp/bs_atomic_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512], file[512];
    bs_atomic_file af;

    /* a directory that does not exist */
    snprintf(path, sizeof path, "%s/missing/out.svg", dir);
    errno = 0;
    assert_int_equal(bs_atomic_open(&af, path), -1);
    assert_int_equal(errno, ENOENT);
    assert_null(af.fp);

    /* a "directory" that is a file */
    snprintf(file, sizeof file, "%s/plain", dir);
    write_file(file, "x");
    snprintf(path, sizeof path, "%s/plain/out.svg", dir);
    errno = 0;
    assert_int_equal(bs_atomic_open(&af, path), -1);
    assert_int_equal(errno, ENOTDIR);
    OK(unlink(file));

    /* a directory without write permission (root may write anyway) */
    if (geteuid() != 0) {
        OK(chmod(dir, 0555));
        snprintf(path, sizeof path, "%s/out.svg", dir);
        errno = 0;
        assert_int_equal(bs_atomic_open(&af, path), -1);
        assert_int_equal(errno, EACCES);
        OK(chmod(dir, 0755));
    }
    /* a path too long for the temporary name, and an empty one */
    char longp[5000];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(bs_atomic_open(&af, longp), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    assert_int_equal(bs_atomic_open(&af, ""), -1);

    assert_int_equal(count_entries(dir), 0); /* nothing left behind */
    OK(rmdir(dir));
}


/* Targets that are not regular files: a device is written through and
 * stays a device (renaming over it would make it a regular file), a FIFO
 * gets the bytes and stays a FIFO, a symbolic link to a file stays a link
 * and its file is replaced, a dangling link is refused. Only /dev/null is
 * used as a device. */
static void test_atomic_special_targets(void **state)
{
    (void)state;
    bs_atomic_file af;
    struct stat st;
    OK(bs_atomic_open(&af, "/dev/null"));
    fputs("nothing\n", af.fp);
    OK(bs_atomic_commit(&af));
    OK(stat("/dev/null", &st));
    assert_true(S_ISCHR(st.st_mode));

    char dir[] = "/tmp/bs_atomic_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char fifo[512], file[512], link[512], dangling[512];
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    OK(mkfifo(fifo, 0600));
    /* a reader first, so that opening for writing does not wait */
    int reader = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(reader >= 0);
    OK(bs_atomic_open(&af, fifo));
    fputs("through the pipe\n", af.fp);
    OK(bs_atomic_commit(&af));
    char got[64] = {0};
    assert_int_equal(read(reader, got, sizeof got - 1), 17);
    assert_string_equal(got, "through the pipe\n");
    close(reader);
    OK(lstat(fifo, &st));
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(count_entries(dir), 1); /* no temporary beside it */

    snprintf(file, sizeof file, "%s/real.folded", dir);
    snprintf(link, sizeof link, "%s/link.folded", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("old\n", f);
    fclose(f);
    OK(symlink("real.folded", link));
    OK(bs_atomic_open(&af, link));
    fputs("new\n", af.fp);
    OK(bs_atomic_commit(&af));
    OK(lstat(link, &st));
    assert_true(S_ISLNK(st.st_mode));
    f = fopen(file, "r");
    assert_non_null(f);
    char line[16] = {0};
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "new\n");
    assert_int_equal(count_entries(dir), 3); /* pipe, real.folded, link.folded */

    snprintf(dangling, sizeof dangling, "%s/dangling.folded", dir);
    OK(symlink("nowhere/x", dangling));
    errno = 0;
    assert_int_equal(bs_atomic_open(&af, dangling), -1);
    assert_int_equal(errno, ENOENT);
    OK(lstat(dangling, &st));
    assert_true(S_ISLNK(st.st_mode));

    OK(unlink(dangling));
    OK(unlink(link));
    OK(unlink(file));
    OK(unlink(fifo));
    OK(rmdir(dir));
}

/* The folded writer through an atomic file gives the same bytes. */
static void test_atomic_folded(void **state)
{
    (void)state;
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 1, 1));
    const bs_key top = KEY(M_FOO, F_RUN, 2), a = KEY(M_LISTS, F_SORT, 1);
    OK(bs_proc_call(&p, &top, BS_CALLER_ROOT, NULL, 0));
    OK(bs_proc_call(&p, &a, BS_CALLER_FRAME, &top, 3000));
    OK(bs_proc_return_to(&p, &top, 10000));
    bs_proc_flush(&p, 11000);
    bs_profile prof;
    OK(bs_profile_init(&prof));
    OK(bs_profile_add_proc(&prof, &p, "<0.5.0>", tu_namer, NULL));
    bs_proc_free(&p);

    char dir[] = "/tmp/bs_atomic_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/p.folded", dir);
    bs_atomic_file af;
    OK(bs_atomic_open(&af, path));
    OK(bs_write_folded(af.fp, &prof, NULL));
    OK(bs_atomic_commit(&af));
    size_t len = 0;
    char *text = read_all(path, &len);
    assert_string_equal(text, "<0.5.0>;'Elixir.Foo':run/2 4\n"
                              "<0.5.0>;'Elixir.Foo':run/2;lists:sort/1 7\n");
    free(text);
    bs_profile_free(&prof);
    OK(unlink(path));
    OK(rmdir(dir));
}

/* ------------------------------ pid table ------------------------------ */

static uint64_t pid_of(uint32_t i) { return ((uint64_t)(i + 1) << 4) | 0x3; } /* like a local pid immediate */

static bs_traced_proc *new_record(bs_budget *b, uint64_t pid, int init_proc)
{
    bs_traced_proc *r = bs_budget_alloc(b, sizeof *r);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    r->pid = pid;
    atomic_init(&r->busy, 0);
    if (init_proc && bs_proc_init(&r->proc, b, 0, 1, 0) < 0) {
        bs_budget_free(b, r, sizeof *r);
        return NULL;
    }
    return r;
}

static void test_pid_table_basic_and_full(void **state)
{
    (void)state;
    bs_budget b;
    bs_budget_init(&b, 0);
    bs_pid_table t;
    OK(bs_pid_table_init(&t, 100));
    assert_true(t.cap >= 200);
    assert_int_equal(t.cap & (t.cap - 1), 0);
    assert_null(bs_pid_table_find(&t, pid_of(0)));
    bs_traced_proc *recs[100];
    for (uint32_t i = 0; i < 100; i++) {
        recs[i] = new_record(&b, pid_of(i), 1);
        assert_non_null(recs[i]);
        assert_ptr_equal(bs_pid_table_insert(&t, pid_of(i), recs[i]), recs[i]);
    }
    for (uint32_t i = 0; i < 100; i++)
        assert_ptr_equal(bs_pid_table_find(&t, pid_of(i)), recs[i]);
    assert_null(bs_pid_table_find(&t, pid_of(100)));
    assert_null(bs_pid_table_find(&t, 0x7777));
    /* full: refused, and the table is unchanged */
    bs_traced_proc *extra = new_record(&b, pid_of(100), 1);
    assert_null(bs_pid_table_insert(&t, pid_of(100), extra));
    assert_null(bs_pid_table_find(&t, pid_of(100)));
    assert_int_equal(atomic_load(&t.count), 100);
    bs_proc_free(&extra->proc);
    bs_budget_free(&b, extra, sizeof *extra);
    /* records are usable */
    const bs_key k = KEY(M_M, F_F, 1);
    OK(bs_proc_call(&bs_pid_table_find(&t, pid_of(42))->proc, &k, BS_CALLER_ROOT, NULL, 5));
    assert_int_equal(bs_proc_depth(&recs[42]->proc), 1);
    bs_pid_table_free(&t, &b);
    assert_null(t.slots);
    assert_int_equal(atomic_load(&b.used), 0);

    /* the smallest table */
    OK(bs_pid_table_init(&t, 1));
    bs_traced_proc *one = new_record(&b, pid_of(7), 0), *two = new_record(&b, pid_of(8), 0);
    assert_ptr_equal(bs_pid_table_insert(&t, pid_of(7), one), one);
    assert_null(bs_pid_table_insert(&t, pid_of(8), two));
    assert_ptr_equal(bs_pid_table_find(&t, pid_of(7)), one);
    bs_budget_free(&b, two, sizeof *two);
    bs_pid_table_free(&t, &b);
    assert_int_equal(atomic_load(&b.used), 0);
}

typedef struct pid_arg {
    bs_pid_table *t;
    bs_budget *b;
    uint32_t first, n, stride;
    uint32_t inserted, refused, lost;
    pthread_barrier_t *start;
} pid_arg;

static void *pid_inserter(void *arg)
{
    pid_arg *w = arg;
    pthread_barrier_wait(w->start);
    for (uint32_t k = 0; k < w->n; k++) {
        uint32_t i = w->first + k * w->stride;
        uint64_t pid = pid_of(i);
        bs_traced_proc *r = new_record(w->b, pid, 0);
        if (!r) {
            w->lost++;
            continue;
        }
        if (bs_pid_table_insert(w->t, pid, r) == r) {
            w->inserted++;
            /* visible at once to this thread, and to every other */
            bs_traced_proc *f = bs_pid_table_find(w->t, pid);
            if (f != r || f->pid != pid)
                w->lost++;
        } else {
            w->refused++;
            bs_budget_free(w->b, r, sizeof *r);
        }
        /* look up some pid another thread may be inserting right now */
        bs_traced_proc *o = bs_pid_table_find(w->t, pid_of(i ^ 1));
        if (o && o->pid != pid_of(i ^ 1))
            w->lost++;
    }
    return NULL;
}

static void run_concurrent_inserts(int threads, uint32_t per_thread, uint32_t max_procs)
{
    bs_budget b;
    bs_budget_init(&b, 0);
    bs_pid_table t;
    OK(bs_pid_table_init(&t, max_procs));
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, (unsigned)threads), 0);
    pthread_t th[4];
    pid_arg args[4];
    for (int i = 0; i < threads; i++) {
        /* interleaved pids so that neighbouring slots are contended */
        args[i] = (pid_arg){&t, &b, (uint32_t)i, per_thread, (uint32_t)threads, 0, 0, 0, &start};
        assert_int_equal(pthread_create(&th[i], NULL, pid_inserter, &args[i]), 0);
    }
    uint32_t inserted = 0, refused = 0;
    for (int i = 0; i < threads; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(args[i].lost, 0);
        inserted += args[i].inserted;
        refused += args[i].refused;
    }
    pthread_barrier_destroy(&start);
    uint32_t total = (uint32_t)threads * per_thread;
    uint32_t expect = total < max_procs ? total : max_procs;
    assert_int_equal(inserted, expect);
    assert_int_equal(refused, total - expect);
    assert_int_equal(atomic_load(&t.count), expect);
    /* every inserted pid is found with its own record; the others are not */
    uint32_t found = 0;
    for (uint32_t i = 0; i < total; i++) {
        bs_traced_proc *r = bs_pid_table_find(&t, pid_of(i));
        if (r) {
            assert_int_equal(r->pid, pid_of(i));
            found++;
        }
    }
    assert_int_equal(found, expect);
    bs_pid_table_free(&t, &b);
    assert_int_equal(atomic_load(&b.used), 0);
}

static void test_pid_table_concurrent_inserts(void **state)
{
    (void)state;
    run_concurrent_inserts(2, 3000, 6000);
    run_concurrent_inserts(3, 2000, 6000);
    run_concurrent_inserts(4, 1500, 6000);
}

static void test_pid_table_fills_concurrently(void **state)
{
    (void)state;
    run_concurrent_inserts(4, 1000, 2500); /* exactly 2500 win, 1500 refused */
    run_concurrent_inserts(2, 100, 1);
}

/* argv[1], if given, runs only the test cases whose name matches it (run.sh
 * runs each case in its own process). */
/* Fixed fields never end mid-word without saying so (text_fit.c). */
static void test_text_fit(void **state)
{
    (void)state;
    char buf[80];
    assert_int_equal(bs_text_fit(buf, sizeof buf, "short text", 10), 0);
    assert_string_equal(buf, "short text");
    /* 100 characters into 80 bytes: cut after a word, then the marker. */
    const char *long_text = "#{children => true,collapse_recursion => false,compensate => true,timeline => auto,"
                            "until_halt => false}";
    assert_int_equal(bs_text_fit(buf, sizeof buf, long_text, strlen(long_text)), 1);
    assert_true(strlen(buf) < sizeof buf);
    const char *mark = strstr(buf, " ... (");
    assert_non_null(mark);
    size_t kept = (size_t)(mark - buf);
    assert_memory_equal(buf, long_text, kept);
    assert_true(long_text[kept - 1] == ',' || long_text[kept] == ' ' || long_text[kept] == ',');
    char want[48];
    snprintf(want, sizeof want, " ... (%zu more characters)", strlen(long_text) - kept);
    assert_string_equal(mark, want);
    /* UTF-8 is never split; the count is of characters. */
    char u[200] = "";
    for (int i = 0; i < 60; i++)
        strcat(u, "\xC2\xB5");
    assert_int_equal(bs_text_fit(buf, sizeof buf, u, strlen(u)), 1);
    mark = strstr(buf, " ... (");
    assert_non_null(mark);
    assert_int_equal((mark - buf) % 2, 0);
    snprintf(want, sizeof want, " ... (%d more characters)", 60 - (int)(mark - buf) / 2);
    assert_string_equal(mark, want);
    /* Appending: whole when it fits, marked when not, nothing when full. */
    char notes[100] = "first";
    assert_int_equal(bs_text_append(notes, sizeof notes, "; ", "second"), 0);
    assert_string_equal(notes, "first; second");
    assert_int_equal(bs_text_append(notes, sizeof notes, "; ", long_text), 1);
    assert_non_null(strstr(notes, "first; second; #{children"));
    assert_non_null(strstr(notes, " more characters)"));
    size_t before = strlen(notes);
    assert_int_equal(bs_text_append(notes, sizeof notes, "; ", "third"), 1);
    assert_int_equal(strlen(notes), before);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_accounting),
        cmocka_unit_test(test_budget_caps_recording),
        cmocka_unit_test(test_budget_shared_by_threads),
        cmocka_unit_test(test_call_tree_child),
        cmocka_unit_test(test_atomic_commit_and_abort),
        cmocka_unit_test(test_atomic_unwritable),
        cmocka_unit_test(test_atomic_folded),
        cmocka_unit_test(test_atomic_special_targets),
        cmocka_unit_test(test_pid_table_basic_and_full),
        cmocka_unit_test(test_pid_table_concurrent_inserts),
        cmocka_unit_test(test_pid_table_fills_concurrently),
        cmocka_unit_test(test_text_fit),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
