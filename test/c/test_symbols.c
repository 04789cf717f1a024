/* test_symbols.c — address -> frame (cpu/symbols.h) on this very process:
 * functions of the test binary (an exported one, and a static one through
 * .symtab when built with libelf), a function of libc, the ELF header of
 * libc (object and offset without a symbol), anonymous memory and an
 * unmapped address (UNKNOWN), and JIT addresses through a perf map the test
 * writes, including one appended after the first read; and a real VM's
 * Erlang and beam.smp addresses, resolved by its pid. */
#define _GNU_SOURCE /* dladdr, RTLD_NOLOAD */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu/symbols.h"

#define OK(x) assert_int_equal((x), 0)

/* Functions of the test binary to resolve (noinline: they must exist). */
__attribute__((noinline)) int bs_test_symbols_exported(int x);
__attribute__((noinline)) int bs_test_symbols_exported(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline)) static int test_symbols_static_fn(int x)
{
    return x * 5 + 2;
}

static uint64_t addr_of(int (*f)(int))
{
    return (uint64_t)(uintptr_t)f;
}

static void init_self(bs_symbols *s, const char *map)
{
    char why[256] = "";
    int r = bs_symbols_init_with_map(s, (int)getpid(), map, 64 << 20, why, sizeof why);
    if (r != 0)
        fail_msg("init: %s", why);
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void test_own_functions(void **state)
{
    (void)state;
    assert_int_equal(bs_test_symbols_exported(1) + test_symbols_static_fn(1), 11);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    bs_symbols s;
    init_self(&s, "/nonexistent/perf.map");
    bs_symbol y;
    uint64_t a = addr_of(bs_test_symbols_exported);
    assert_int_equal(bs_symbols_resolve(&s, a + 1, &y), BS_SYM_NATIVE);
    assert_string_equal(y.object, base_of(exe));
    assert_null(y.module);
    uint64_t b = addr_of(test_symbols_static_fn);
#ifdef BS_HAVE_LIBELF
    /* an executable's functions are in .symtab (built with -g, not stripped) */
    assert_non_null(y.name);
    assert_string_equal(y.name, "bs_test_symbols_exported");
    assert_int_equal(y.offset, 1);
    assert_int_equal(bs_symbols_resolve(&s, b + 2, &y), BS_SYM_NATIVE);
    assert_string_equal(y.object, base_of(exe));
    /* built with -g and not stripped: .symtab names the static function */
    assert_non_null(y.name);
    assert_string_equal(y.name, "test_symbols_static_fn");
    assert_int_equal(y.offset, 2);
    assert_true(strstr(bs_symbols_backend(), "libelf") != NULL);
#else
    /* dladdr: an executable exports nothing (no -rdynamic): object and the
     * offset from its load base, which the next address moves by one */
    assert_null(y.name);
    uint64_t off = y.offset;
    assert_int_equal(bs_symbols_resolve(&s, a + 2, &y), BS_SYM_NATIVE);
    assert_int_equal(y.offset, off + 1);
    assert_int_equal(bs_symbols_resolve(&s, b + 2, &y), BS_SYM_NATIVE);
    assert_string_equal(y.object, base_of(exe));
    assert_true(strstr(bs_symbols_backend(), "dladdr") != NULL);
#endif
    assert_true(s.stats.objects_loaded <= s.stats.objects);
    bs_symbols_free(&s);
}

static void test_libc(void **state)
{
    (void)state;
    /* libc's own qsort (dlsym(RTLD_DEFAULT) would give ASan's interceptor) */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(libc);
    void *q = dlsym(libc, "qsort");
    assert_non_null(q);
    Dl_info info;
    assert_int_not_equal(dladdr(q, &info), 0);
    bs_symbols s;
    init_self(&s, "/nonexistent/perf.map");
    bs_symbol y;
    assert_int_equal(bs_symbols_resolve(&s, (uint64_t)(uintptr_t)q + 2, &y), BS_SYM_NATIVE);
    assert_string_equal(y.object, base_of(info.dli_fname));
    assert_non_null(y.name);
    /* the name kept for that address may be any alias of it */
    assert_ptr_equal(dlsym(libc, y.name), q);
    assert_int_equal(y.offset, 2);
    /* libc's load base: its ELF header, mapped read-only, no symbol: the
     * object and offset 0 (ELF virtual address 0 of a shared object) */
    uint64_t base = (uint64_t)(uintptr_t)info.dli_fbase;
    int kind = bs_symbols_resolve(&s, base + 0x10, &y);
    assert_true(kind == BS_SYM_UNKNOWN || kind == BS_SYM_NATIVE);
    assert_non_null(y.object);
    assert_string_equal(y.object, base_of(info.dli_fname));
    assert_null(y.name);
    assert_int_equal(y.offset, 0x10);
    /* Aliases: the name perf would give (fewer leading underscores). */
    void *lock = dlsym(libc, "pthread_mutex_lock");
    void *lock2 = dlsym(libc, "__pthread_mutex_lock");
    if (lock && lock == lock2) {
        assert_int_equal(bs_symbols_resolve(&s, (uint64_t)(uintptr_t)lock, &y), BS_SYM_NATIVE);
        assert_string_equal(y.name, "pthread_mutex_lock");
    }
    dlclose(libc);
    bs_symbols_free(&s);
}

static void test_unknown(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *anon = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(anon != MAP_FAILED);
    bs_symbols s;
    init_self(&s, "/nonexistent/perf.map");
    bs_symbol y;
    assert_int_equal(bs_symbols_resolve(&s, (uint64_t)(uintptr_t)anon + 8, &y), BS_SYM_UNKNOWN);
    assert_null(y.object);
    assert_null(y.name);
    assert_null(y.module);
    assert_int_equal(bs_symbols_resolve(&s, 0x10, &y), BS_SYM_UNKNOWN);
    assert_null(y.object);
    assert_int_equal(s.stats.unknown, 2);
    /* the perf map was missing: said, not fatal */
    assert_int_not_equal(bs_symbols_perf_map_stats(&s)->read_errno, 0);
    bs_symbols_free(&s);
    munmap(anon, page);
}

static void test_jit_through_map(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *code = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(code != MAP_FAILED);
    uint64_t c = (uint64_t)(uintptr_t)code;
    char dir[] = "/tmp/bs_test_symbols_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/perf-%d.map", dir, (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "0x%llx 40 $global::apply_fun_shared\n", (unsigned long long)c);
    fprintf(f, "0x%llx 30 $lists:keyfind/3-CodeInfoPrologue\n", (unsigned long long)c + 0x40);
    fprintf(f, "0x%llx 70 $lists:keyfind/3\n", (unsigned long long)c + 0x70);
    fprintf(f, "0x%llx 20 $'Elixir.Foo.Bar':'ok?'/1\n", (unsigned long long)c + 0xe0);
    fclose(f);
    bs_symbols s;
    init_self(&s, path);
    bs_symbol y;
    assert_int_equal(bs_symbols_resolve(&s, c + 0x10, &y), BS_SYM_JIT_OTHER);
    assert_string_equal(y.name, "global::apply_fun_shared");
    assert_null(y.module);
    assert_int_equal(bs_symbols_resolve(&s, c + 0x45, &y), BS_SYM_ERLANG);
    assert_string_equal(y.module, "lists");
    assert_string_equal(y.function, "keyfind");
    assert_int_equal(y.arity, 3);
    assert_int_equal(bs_symbols_resolve(&s, c + 0xdf, &y), BS_SYM_ERLANG);
    assert_string_equal(y.function, "keyfind");
    assert_int_equal(bs_symbols_resolve(&s, c + 0xe1, &y), BS_SYM_ERLANG);
    assert_string_equal(y.module, "Elixir.Foo.Bar");
    assert_string_equal(y.function, "ok?");
    assert_int_equal(y.arity, 1);
    /* a module loaded later: its line is read on the first miss once
     * BS_PERF_MAP_REREAD_MS have passed since the last read */
    assert_int_equal(bs_symbols_resolve(&s, c + 0x2000, &y), BS_SYM_UNKNOWN);
    f = fopen(path, "a");
    assert_non_null(f);
    fprintf(f, "0x%llx 100 $late:loaded/0\n", (unsigned long long)c + 0x2000);
    fclose(f);
    struct timespec pause = {0, (BS_PERF_MAP_REREAD_MS + 50) * 1000000L};
    nanosleep(&pause, NULL);
    assert_int_equal(bs_symbols_resolve(&s, c + 0x2004, &y), BS_SYM_ERLANG);
    assert_string_equal(y.module, "late");
    assert_string_equal(y.function, "loaded");
    assert_int_equal(bs_symbols_perf_map_stats(&s)->lines, 5);
    bs_symbols_free(&s);
    unlink(path);
    rmdir(dir);
    munmap(code, 4 * page);
}

/* A library whose file was deleted after it was loaded (one replaced on
 * disk): " (deleted)" in its object name, its file offset, no symbol read
 * from whatever file has that path now. */
static void test_deleted_library(void **state)
{
    (void)state;
    Dl_info info;
    assert_int_not_equal(dladdr((void *)(uintptr_t)&cmocka_set_test_filter, &info), 0);
    char dir[] = "/tmp/bs_test_symbols_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char copy[128], cmd[4300];
    snprintf(copy, sizeof copy, "%s/libcopy.so", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", info.dli_fname, copy);
    assert_int_equal(system(cmd), 0);
    void *h = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    void *fn = dlsym(h, "cmocka_set_test_filter");
    assert_non_null(fn);
    assert_true(fn != (void *)(uintptr_t)&cmocka_set_test_filter);
    unlink(copy);
    rmdir(dir);
    bs_symbols s;
    init_self(&s, "/nonexistent/perf.map");
    bs_symbol y;
    assert_int_equal(bs_symbols_resolve(&s, (uint64_t)(uintptr_t)fn, &y), BS_SYM_NATIVE);
    assert_string_equal(y.object, "libcopy.so (deleted)");
#ifdef BS_HAVE_LIBELF
    assert_null(y.name);
    Dl_info ci;
    assert_int_not_equal(dladdr(fn, &ci), 0);
    /* the file offset: a shared object's code is mapped at its offset */
    assert_true(y.offset > 0 && y.offset == (uint64_t)((uintptr_t)fn - (uintptr_t)ci.dli_fbase));
#endif
    bs_symbols_free(&s);
    dlclose(h);
}

#ifdef BS_HAVE_LIBELF
/* Builds dir/NAME.so from a source with one static function (its body
 * returns K, so that two builds differ), keeps its .symtab apart in
 * dir/NAME.debug and strips the library (its .dynsym stays). */
static void build_stripped(const char *dir, const char *name, int k)
{
    char src[256], cmd[2048];
    snprintf(src, sizeof src, "%s/%s.c", dir, name);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fprintf(f, "static int __attribute__((noinline)) bs_hidden_work(int x) { return x * %d + 1; }\n"
               "int (*bs_hidden_addr(void))(int) { return bs_hidden_work; }\n", k);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cc -shared -fPIC -O1 -g -Wl,--build-id -o %s.so %s.c && "
             "objcopy --only-keep-debug %s.so %s.debug && strip --strip-unneeded %s.so && "
             "! readelf -S %s.so | grep -q '\\.symtab'",
             dir, name, name, name, name, name, name);
    assert_int_equal(system(cmd), 0);
}

/* Moves dir/FROM.debug to where the build-id of dir/OF.so says, under
 * dir/dbg (.build-id/xx/rest.debug), with binutils' reading of the id. */
static void place_debug(const char *dir, const char *from, const char *of)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && id=$(readelf -n %s.so | sed -n 's/.*Build ID: *//p') && [ -n \"$id\" ] && "
             "d=dbg/.build-id/$(echo $id | cut -c1-2) && mkdir -p $d && "
             "mv %s.debug $d/$(echo $id | cut -c3-).debug",
             dir, of, from);
    assert_int_equal(system(cmd), 0);
}

/* The static function of dir/NAME.so, resolved with debug files looked for
 * under debug_dir: its name (NULL: none), and how many debug files were read. */
static const char *hidden_name(const char *dir, const char *name, const char *debug_dir, uint64_t *debug_files,
                               char *buf, size_t cap)
{
    char lib[256];
    snprintf(lib, sizeof lib, "%s/%s.so", dir, name);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    int (*(*addr_of)(void))(int) = (int (*(*)(void))(int))dlsym(h, "bs_hidden_addr");
    assert_non_null(addr_of);
    int (*fn)(int) = addr_of();
    assert_int_equal(fn(2), fn(1) + (fn(1) - 1)); /* it runs: x * K + 1 */
    bs_symbols s;
    init_self(&s, "/nonexistent/perf.map");
    snprintf(s.debug_dir, sizeof s.debug_dir, "%s", debug_dir);
    bs_symbol y;
    assert_int_equal(bs_symbols_resolve(&s, (uint64_t)(uintptr_t)fn + 1, &y), BS_SYM_NATIVE);
    const char *got = NULL;
    if (y.name) {
        snprintf(buf, cap, "%s", y.name);
        got = buf;
        assert_int_equal(y.offset, 1);
    }
    *debug_files = s.stats.debug_files;
    bs_symbols_free(&s);
    dlclose(h);
    return got;
}

/* A stripped library whose .symtab is in a separate debug file, found by
 * its build-id (as Debian's libc6-dbg ships libc's, which perf reads): its
 * static function is named from there; not without the file, and not from
 * the debug file of another build put at its place. */
static void test_separate_debug_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/bs_test_symbols_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char dbg[256], name[128], cmd[512];
    snprintf(dbg, sizeof dbg, "%s/dbg", dir);
    build_stripped(dir, "libdbg", 3);
    build_stripped(dir, "libother", 5);
    uint64_t files = 9;
    /* no debug file yet: the static function has no name */
    assert_null(hidden_name(dir, "libdbg", dbg, &files, name, sizeof name));
    assert_int_equal(files, 0);
    /* another build's debug file at libdbg's place: not taken */
    place_debug(dir, "libother", "libdbg");
    assert_null(hidden_name(dir, "libdbg", dbg, &files, name, sizeof name));
    assert_int_equal(files, 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s/dbg'", dir);
    assert_int_equal(system(cmd), 0);
    /* its own: named */
    place_debug(dir, "libdbg", "libdbg");
    const char *got = hidden_name(dir, "libdbg", dbg, &files, name, sizeof name);
    assert_non_null(got);
    assert_string_equal(got, "bs_hidden_work");
    assert_int_equal(files, 1);
    /* ... and only where debug files are looked for */
    assert_null(hidden_name(dir, "libdbg", "/nonexistent", &files, name, sizeof name));
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}
#endif

/* A library loaded after init: its address is outside every mapping
 * read, so /proc/<pid>/maps is read again (once BS_SYMBOLS_REMAP_MS have
 * passed since the last read) and the address resolves. Before the load,
 * an address no mapping holds reads nothing again: no shared object came
 * or went (loaded_objects.h), so no file mapping can have appeared. */
static void test_mapping_added_later(void **state)
{
    (void)state;
    bs_symbols s;
    init_self(&s, "/nonexistent/perf.map");
    assert_int_equal(s.stats.maps_reads, 1);
    struct timespec wait_remap = {0, (BS_SYMBOLS_REMAP_MS + 50) * 1000000L};
    nanosleep(&wait_remap, NULL);
    bs_symbol none;
    assert_int_equal(bs_symbols_resolve(&s, 0x10, &none), BS_SYM_UNKNOWN);
    assert_int_equal(s.stats.maps_reads, 1);
    Dl_info info;
    assert_int_not_equal(dladdr((void *)(uintptr_t)&cmocka_set_test_filter, &info), 0);
    char dir[] = "/tmp/bs_test_symbols_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char copy[128], cmd[4300];
    snprintf(copy, sizeof copy, "%s/liblater.so", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", info.dli_fname, copy);
    assert_int_equal(system(cmd), 0);
    void *h = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    void *fn = dlsym(h, "cmocka_set_test_filter");
    assert_non_null(fn);
    struct timespec pause = {0, (BS_SYMBOLS_REMAP_MS + 50) * 1000000L};
    nanosleep(&pause, NULL);
    bs_symbol y;
    assert_int_equal(bs_symbols_resolve(&s, (uint64_t)(uintptr_t)fn + 1, &y), BS_SYM_NATIVE);
    assert_string_equal(y.object, "liblater.so");
#ifdef BS_HAVE_LIBELF
    assert_non_null(y.name);
    assert_string_equal(y.name, "cmocka_set_test_filter");
    assert_int_equal(y.offset, 1);
#endif
    assert_int_equal(s.stats.maps_reads, 2);
    bs_symbols_free(&s);
    dlclose(h);
    unlink(copy);
    rmdir(dir);
}

/* A real VM (`erl +JPperf true`, started here and killed at the end),
 * resolved from outside by its pid: lists:keyfind/3 through its perf map,
 * and in its beam.smp (a stripped position-independent executable: only
 * dynamic symbols) enif_make_atom by name and an address no symbol covers
 * as beam.smp + its ELF virtual address. Symbol values and sizes come from
 * `nm -D -S`, the load base from the mapping of the file's offset 0. */
static void test_real_vm(void **state)
{
    (void)state;
    FILE *vm = popen("exec erl +JPperf true -noshell -eval "
                     "'io:format(\"~s~n\", [os:getpid()]), lists:keyfind(a, 1, [{a}]), timer:sleep(60000), halt().'",
                     "r");
    assert_non_null(vm);
    int pid = 0;
    if (fscanf(vm, "%d", &pid) != 1 || pid <= 0)
        fail_msg("erl +JPperf true did not start");
    char exe_link[64], exe[4096], map[64];
    snprintf(exe_link, sizeof exe_link, "/proc/%d/exe", pid);
    snprintf(map, sizeof map, "/tmp/perf-%d.map", pid);
    ssize_t n = readlink(exe_link, exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    assert_string_equal(base_of(exe), "beam.smp");

    /* keyfind's range in the map (its module is loaded at boot) */
    unsigned long long kf = 0, kf_size = 0, a, sz;
    char name[512], line[1024];
    FILE *f = fopen(map, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%llx %llx %511s", &a, &sz, name) == 3 && strcmp(name, "$lists:keyfind/3") == 0)
            kf = a, kf_size = sz;
    fclose(f);
    assert_true(kf_size > 0);
    /* beam.smp's load base, and its dynamic function symbols */
    unsigned long long base = 0, start, end, off;
    char perms[8], path[4096];
    snprintf(line, sizeof line, "/proc/%d/maps", pid);
    f = fopen(line, "r");
    assert_non_null(f);
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &start, &end, perms, &off, path) == 5 &&
            strcmp(path, exe) == 0 && off == 0 && !base)
            base = start;
    fclose(f);
    assert_true(base != 0);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "nm -D -S --defined-only '%s'", exe);
    FILE *nm = popen(cmd, "r");
    assert_non_null(nm);
    unsigned long long make_atom = 0, make_atom_size = 0, gap = 0, prev_end = 0;
    char type;
    while (fgets(line, sizeof line, nm)) {
        if (sscanf(line, "%llx %llx %c %511s", &a, &sz, &type, name) != 4 || (type != 'T' && type != 't'))
            continue;
        if (strcmp(name, "enif_make_atom") == 0)
            make_atom = a, make_atom_size = sz;
        /* nm sorts by name; a gap is found below from the sorted values */
    }
    pclose(nm);
    assert_true(make_atom_size > 8);
    snprintf(cmd, sizeof cmd, "nm -D -S -n --defined-only '%s'", exe);
    nm = popen(cmd, "r");
    assert_non_null(nm);
    while (fgets(line, sizeof line, nm)) {
        if (sscanf(line, "%llx %llx %c %511s", &a, &sz, &type, name) != 4 || (type != 'T' && type != 't'))
            continue;
        if (!gap && prev_end && a >= prev_end + 64)
            gap = prev_end + 32; /* in a stripped static function */
        if (a + sz > prev_end)
            prev_end = a + sz;
    }
    pclose(nm);
    assert_true(gap != 0);

    bs_symbols s;
    char why[256] = "";
    if (bs_symbols_init(&s, pid, 64 << 20, why, sizeof why) != 0)
        fail_msg("init: %s", why);
    bs_symbol y;
    assert_int_equal(bs_symbols_resolve(&s, kf + kf_size / 2, &y), BS_SYM_ERLANG);
    assert_string_equal(y.module, "lists");
    assert_string_equal(y.function, "keyfind");
    assert_int_equal(y.arity, 3);
    assert_int_equal(bs_symbols_perf_map_stats(&s)->malformed, 0);
#ifdef BS_HAVE_LIBELF
    assert_int_equal(bs_symbols_resolve(&s, base + make_atom + 5, &y), BS_SYM_NATIVE);
    assert_string_equal(y.object, "beam.smp");
    assert_non_null(y.name);
    assert_string_equal(y.name, "enif_make_atom");
    assert_int_equal(y.offset, 5);
    assert_int_equal(bs_symbols_resolve(&s, base + gap, &y), BS_SYM_NATIVE);
    assert_string_equal(y.object, "beam.smp");
    assert_null(y.name);
    assert_int_equal(y.offset, gap);
#else
    /* dladdr sees only this process's objects: beam.smp is another's */
    assert_int_equal(bs_symbols_resolve(&s, base + make_atom + 5, &y), BS_SYM_NATIVE);
    assert_string_equal(y.object, "beam.smp");
    assert_null(y.name);
    (void)gap;
#endif
    bs_symbols_free(&s);
    kill(pid, SIGKILL);
    pclose(vm);
    unlink(map);
}

static void test_bad_pid(void **state)
{
    (void)state;
    bs_symbols s;
    char why[256] = "";
    /* no such process: /proc/<pid>/maps cannot be read, and why says so */
    assert_int_equal(bs_symbols_init(&s, 0x7ffffff0, 1 << 20, why, sizeof why), -1);
    assert_true(strstr(why, "/proc/2147483632/maps") != NULL);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_functions),
        cmocka_unit_test(test_libc),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_jit_through_map),
        cmocka_unit_test(test_deleted_library),
        cmocka_unit_test(test_mapping_added_later),
#ifdef BS_HAVE_LIBELF
        cmocka_unit_test(test_separate_debug_file),
#endif
        cmocka_unit_test(test_real_vm),
        cmocka_unit_test(test_bad_pid),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
