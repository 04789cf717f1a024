/* perf_sampler.c — opens the kernel's sampling events on threads of this
 * process, drains their ring buffers and decodes the samples (see
 * perf_sampler.h). The drain runs beside the sampled threads: it reads each
 * ring between the tail it owns and the head the kernel publishes, and
 * hands the space back by moving the tail, never waiting for anything. */
#define _GNU_SOURCE
#include "perf_sampler.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The symbolic name of the errors perf_event_open and mmap give. */
static const char *errno_name(int err)
{
    switch (err) {
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case ENOENT: return "ENOENT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case ESRCH: return "ESRCH";
    case E2BIG: return "E2BIG";
    case EBUSY: return "EBUSY";
    default: return "error";
    }
}

const char *bs_perf_refusal_text(char *why, size_t why_cap, int err, int paranoid, int seccomp)
{
    if (why_cap == 0)
        return why;
    char par[32];
    if (paranoid == INT_MIN)
        snprintf(par, sizeof par, "unknown");
    else
        snprintf(par, sizeof par, "%d", paranoid);
    const char *name = errno_name(err);
    switch (err) {
    case EACCES:
    case EPERM:
    case ENOSYS:
        if (seccomp > 0 && err != EACCES) {
            snprintf(why, why_cap,
                     "perf_event_open refused (%s): this process runs under a seccomp filter "
                     "(Seccomp: %d in /proc/self/status), as in containers whose default seccomp "
                     "profile refuses perf_event_open: allow it (e.g. docker run --security-opt "
                     "seccomp=<profile allowing perf_event_open>, or --cap-add PERFMON with Docker "
                     "20.10+)",
                     name, seccomp);
        } else if (err != ENOSYS && paranoid != INT_MIN && paranoid >= 3) {
            snprintf(why, why_cap,
                     "perf_event_open refused (%s): kernel.perf_event_paranoid is %s, which refuses "
                     "every process without CAP_PERFMON: run `sysctl kernel.perf_event_paranoid=2` as "
                     "root (it lets a process sample its own threads in user space) or give the VM "
                     "CAP_PERFMON",
                     name, par);
        } else if (err == ENOSYS) {
            snprintf(why, why_cap,
                     "perf_event_open refused (ENOSYS): the kernel has no perf events "
                     "(CONFIG_PERF_EVENTS) or a seccomp profile hides the system call "
                     "(kernel.perf_event_paranoid is %s)",
                     par);
        } else {
            snprintf(why, why_cap,
                     "perf_event_open refused (%s) with kernel.perf_event_paranoid %s: a seccomp "
                     "profile (containers), a security module (SELinux, AppArmor) or a missing "
                     "CAP_PERFMON refuses it: allow perf_event_open in the container's seccomp "
                     "profile or give the VM CAP_PERFMON",
                     name, par);
        }
        break;
    case ENOENT:
    case EOPNOTSUPP:
        snprintf(why, why_cap,
                 "perf_event_open refused (%s): this kernel does not support the software "
                 "task-clock event with user-space call chains",
                 name);
        break;
    case EMFILE:
    case ENFILE:
        snprintf(why, why_cap,
                 "perf_event_open failed (%s): out of file descriptors (one per sampled thread): "
                 "raise the limit (ulimit -n)",
                 name);
        break;
    case EINVAL:
        snprintf(why, why_cap,
                 "perf_event_open refused (EINVAL): the rate is above "
                 "kernel.perf_event_max_sample_rate or the kernel is older than 4.1 (use_clockid)");
        break;
    default:
        snprintf(why, why_cap, "perf_event_open failed (errno %d: %s)", err, strerror(err));
        break;
    }
    return why;
}

#ifdef __linux__
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct ring {
    int tid;
    int fd;
    struct perf_event_mmap_page *meta; /* the header page; data follows it */
    unsigned char *data;
    size_t map_len;
} ring;

struct bs_perf_sampler {
    size_t data_len;      /* bytes of data per ring (a power of two) */
    unsigned stack_bytes; /* PERF_SAMPLE_STACK_USER's size; 0: frame pointers only */
    int regs;             /* PERF_SAMPLE_REGS_USER asked for (x86_64) */
    uint64_t with_regs, stack_used;
    unsigned char *scratch; /* data_len bytes: one record copied out of the ring */
    uint64_t *ips;        /* data_len / 8 addresses: one sample's chain */
    uint64_t samples, lost, truncated, malformed, bytes, ring_full;
    unsigned max_stack;
    unsigned n;
    ring rings[];
};

/* An integer from a one-line /proc file, or fallback. */
static long read_proc_long(const char *path, long fallback)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return fallback;
    long v;
    int ok = fscanf(f, "%ld", &v) == 1;
    fclose(f);
    return ok ? v : fallback;
}

/* This process's seccomp mode (0 none, 1 strict, 2 filter), -1 unknown. */
static int seccomp_mode(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return -1;
    char line[256];
    int mode = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Seccomp: %d", &mode) == 1)
            break;
    fclose(f);
    return mode;
}

/* PERF_SAMPLE_REGS_USER's registers, in the order the kernel writes them
 * (bit order of the mask): bp, sp, ip, r13 (arch/x86/include/uapi/asm/perf_regs.h). */
#define REG_X86_BP 6
#define REG_X86_SP 7
#define REG_X86_IP 8
#define REG_X86_R13 21
#define REGS_MASK ((1ull << REG_X86_BP) | (1ull << REG_X86_SP) | (1ull << REG_X86_IP) | (1ull << REG_X86_R13))
#define N_REGS 4

static int open_event(int tid, unsigned hz, int regs, unsigned stack_bytes)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.freq = 1;
    a.sample_freq = hz;
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
#if defined(__x86_64__)
    if (regs) {
        a.sample_type |= PERF_SAMPLE_REGS_USER;
        a.sample_regs_user = REGS_MASK;
    }
    if (stack_bytes) {
        a.sample_type |= PERF_SAMPLE_STACK_USER;
        a.sample_stack_user = stack_bytes;
    }
#else
    (void)regs, (void)stack_bytes;
#endif
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.exclude_callchain_kernel = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.wakeup_events = 0; /* nobody polls: the drain reads on its own schedule */
    return (int)syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static void close_rings(bs_perf_sampler *s)
{
    for (unsigned i = 0; i < s->n; i++) {
        if (s->rings[i].meta)
            munmap(s->rings[i].meta, s->rings[i].map_len);
        close(s->rings[i].fd);
    }
    s->n = 0;
}

void bs_perf_sampler_close(bs_perf_sampler *s)
{
    if (!s)
        return;
    close_rings(s);
    free(s->scratch);
    free(s->ips);
    free(s);
}

int bs_perf_sampler_open(bs_perf_sampler **out, const int *tids, unsigned n_tids, unsigned hz,
                         char *why, size_t why_cap)
{
    return bs_perf_sampler_open_ex(out, tids, n_tids, hz, 0, 0, why, why_cap);
}

int bs_perf_sampler_open_ex(bs_perf_sampler **out, const int *tids, unsigned n_tids, unsigned hz, int with_stack,
                            unsigned stack_bytes, char *why, size_t why_cap)
{
    *out = NULL;
    if (why_cap)
        why[0] = '\0';
    if (n_tids == 0 || n_tids > BS_PERF_MAX_THREADS) {
        snprintf(why, why_cap, "CPU sampling takes 1 to %d threads, not %u", BS_PERF_MAX_THREADS,
                 n_tids);
        return -1;
    }
    if (hz == 0) {
        snprintf(why, why_cap, "the CPU sampling rate must be at least 1 Hz");
        return -1;
    }
#if !defined(__x86_64__)
    with_stack = 0; /* the registers asked for are x86_64's */
#endif
    if (!with_stack)
        stack_bytes = 0;
    if (with_stack && (stack_bytes == 0 || stack_bytes % 8 || stack_bytes > 65528)) {
        snprintf(why, why_cap, "the stack copy must be 8 to 65528 bytes, a multiple of 8, not %u", stack_bytes);
        return -1;
    }
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    size_t data_len = (size_t)page * (stack_bytes ? BS_PERF_RING_PAGES_STACK : BS_PERF_RING_PAGES);
    bs_perf_sampler *s = calloc(1, sizeof *s + (size_t)n_tids * sizeof(ring));
    if (s) {
        s->scratch = malloc(data_len);
        s->ips = malloc(data_len);
    }
    if (!s || !s->scratch || !s->ips) {
        bs_perf_sampler_close(s);
        snprintf(why, why_cap, "out of memory for the CPU sampler");
        return -1;
    }
    s->data_len = data_len;
    s->stack_bytes = stack_bytes;
#if defined(__x86_64__)
    s->regs = 1; /* 48 bytes a sample: the registers name the sample's process (cpu_session.c) */
#endif
    long max_stack = read_proc_long("/proc/sys/kernel/perf_event_max_stack", 127);
    s->max_stack = max_stack > 0 && max_stack < 0x10000 ? (unsigned)max_stack : 127;
    for (unsigned i = 0; i < n_tids; i++) {
        int fd = open_event(tids[i], hz, s->regs, stack_bytes);
        if (fd < 0 && errno == ESRCH)
            continue; /* the thread exited since it was listed */
        if (fd < 0) {
            int err = errno;
            long paranoid = read_proc_long("/proc/sys/kernel/perf_event_paranoid", INT_MIN);
            bs_perf_refusal_text(why, why_cap, err, (int)paranoid, seccomp_mode());
            bs_perf_sampler_close(s);
            errno = err;
            return -1;
        }
        ring *r = &s->rings[s->n];
        r->tid = tids[i];
        r->fd = fd;
        r->map_len = (size_t)page + data_len;
        void *m = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        s->n++;
        if (m == MAP_FAILED) {
            int err = errno;
            if (err == EPERM || err == ENOMEM)
                snprintf(why, why_cap,
                         "mapping the ring buffer of thread %d failed (%s): the rings of %u threads "
                         "(%zu KiB each) exceed the locked-memory limit: raise "
                         "kernel.perf_event_mlock_kb or the process's RLIMIT_MEMLOCK (ulimit -l)",
                         tids[i], errno_name(err), n_tids, r->map_len / 1024);
            else
                snprintf(why, why_cap, "mapping the ring buffer of thread %d failed (%s: %s)",
                         tids[i], errno_name(err),
                         strerror(err));
            bs_perf_sampler_close(s);
            errno = err;
            return -1;
        }
        r->meta = m;
        r->data = (unsigned char *)m + page;
    }
    if (s->n == 0) {
        snprintf(why, why_cap, "none of the %u threads to sample is running any more", n_tids);
        bs_perf_sampler_close(s);
        errno = ESRCH;
        return -1;
    }
    *out = s;
    return 0;
}

static int ioctl_all(bs_perf_sampler *s, unsigned long request)
{
    int rc = 0, err = 0;
    for (unsigned i = 0; i < s->n; i++)
        if (ioctl(s->rings[i].fd, request, 0) != 0 && rc == 0) {
            rc = -1;
            err = errno;
        }
    if (rc)
        errno = err;
    return rc;
}

int bs_perf_sampler_enable(bs_perf_sampler *s)
{
    return ioctl_all(s, PERF_EVENT_IOC_ENABLE);
}

int bs_perf_sampler_disable(bs_perf_sampler *s)
{
    return ioctl_all(s, PERF_EVENT_IOC_DISABLE);
}

/* Copies len bytes at ring offset pos (which may wrap around the end). */
static void ring_copy(const ring *r, size_t data_len, uint64_t pos, void *dst, size_t len)
{
    size_t off = (size_t)(pos & (data_len - 1));
    size_t first = data_len - off < len ? data_len - off : len;
    memcpy(dst, r->data + off, first);
    memcpy((unsigned char *)dst + first, r->data, len - first);
}

/* Decodes one PERF_RECORD_SAMPLE body and delivers it: u32 pid, tid; u64
 * time; u64 nr; u64 ips[nr]; then, with registers, u64 abi; u64 regs[4]
 * (bp, sp, ip, r13) when abi is not 0; then, with stack copies, u64 size;
 * u8 data[size]; u64 dyn_size when size is not 0 (the bytes the kernel
 * filled). -1 if the record does not hold what it says. */
static int deliver_sample(bs_perf_sampler *s, const unsigned char *rec, size_t size,
                          bs_cpu_sample_fn *on_sample, void *ctx)
{
    const size_t fixed = sizeof(struct perf_event_header) + 8 + 8 + 8;
    if (size < fixed)
        return -1;
    uint32_t tid;
    uint64_t time, nr;
    const unsigned char *p = rec + sizeof(struct perf_event_header);
    const unsigned char *end = rec + size;
    memcpy(&tid, p + 4, 4);
    memcpy(&time, p + 8, 8);
    memcpy(&nr, p + 16, 8);
    if (nr > (size - fixed) / 8)
        return -1;
    bs_cpu_sample smp = {.tid = (int)tid, .time_ns = time};
    const unsigned char *after = p + 24 + nr * 8;
    uint64_t abi = 0, regs[N_REGS] = {0, 0, 0, 0};
    if (s->regs) {
        if ((size_t)(end - after) < 8)
            return -1;
        memcpy(&abi, after, 8);
        after += 8;
        if (abi != 0) {
            if ((size_t)(end - after) < sizeof regs)
                return -1;
            memcpy(regs, after, sizeof regs);
            after += sizeof regs;
            smp.has_regs = 1;
            smp.bp = regs[0], smp.sp = regs[1], smp.ip = regs[2], smp.r13 = regs[3];
        }
    }
    if (s->stack_bytes) {
        uint64_t stack_size, dyn = 0;
        if ((size_t)(end - after) < 8)
            return -1;
        memcpy(&stack_size, after, 8);
        after += 8;
        const unsigned char *data = after;
        if (stack_size != 0) {
            if (stack_size > (size_t)(end - after) || (size_t)(end - after) - stack_size < 8)
                return -1;
            memcpy(&dyn, after + stack_size, 8);
            if (dyn > stack_size)
                return -1;
        }
        if (abi != 0) {
            smp.stack = data;
            smp.stack_size = (size_t)dyn;
            s->with_regs++;
            if (dyn > s->stack_used)
                s->stack_used = dyn;
        }
    }
    /* Keep the user-space part of the chain: addresses after
     * PERF_CONTEXT_USER, or all of them when the kernel put no marker. */
    uint32_t n = 0;
    int in_user = 1;
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t ip;
        memcpy(&ip, p + 24 + i * 8, 8);
        if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
            in_user = ip == (uint64_t)PERF_CONTEXT_USER;
            continue;
        }
        if (in_user)
            s->ips[n++] = ip;
    }
    smp.n_ips = n;
    smp.ips = s->ips;
    smp.chain_truncated = n >= s->max_stack;
    s->samples++;
    if (smp.chain_truncated)
        s->truncated++;
    on_sample(ctx, &smp);
    return 0;
}

/* Reads one ring from its tail to the head the kernel published. A record
 * whose size cannot be right (smaller than its header, larger than what is
 * left) ends the reading of this ring: its remaining bytes are skipped and
 * counted as malformed, so a corrupt ring can never loop or overrun. */
static size_t drain_ring(bs_perf_sampler *s, ring *r, bs_cpu_sample_fn *on_sample, void *ctx)
{
    /* The kernel writes the records, then data_head: read the head with
     * acquire so the records are seen; hand space back with a release store
     * of data_tail once they are read. */
    uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = r->meta->data_tail;
    size_t delivered = 0;
    /* The kernel writes the PERF_RECORD_LOST of a full ring only with its
     * next sample after space is freed, which never comes once sampling
     * stops: a ring found without room for one more of the deepest samples
     * is counted, so that losses at the end are seen too. */
    uint64_t deepest = sizeof(struct perf_event_header) + 24 + 8 * ((uint64_t)s->max_stack + 2) +
                       (s->regs ? 8 + 8 * N_REGS : 0) + (s->stack_bytes ? 8 + s->stack_bytes + 8 : 0);
    if (head - tail + deepest > s->data_len)
        s->ring_full++;
    while (head - tail >= sizeof(struct perf_event_header)) {
        struct perf_event_header h;
        ring_copy(r, s->data_len, tail, &h, sizeof h);
        if (h.size < sizeof h || h.size > head - tail) {
            s->malformed++;
            tail = head;
            break;
        }
        size_t off = (size_t)(tail & (s->data_len - 1));
        const unsigned char *rec = r->data + off;
        if (off + h.size > s->data_len) { /* wraps around the end */
            ring_copy(r, s->data_len, tail, s->scratch, h.size);
            rec = s->scratch;
        }
        if (h.type == PERF_RECORD_SAMPLE) {
            if (deliver_sample(s, rec, h.size, on_sample, ctx) == 0)
                delivered++;
            else
                s->malformed++;
        } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
            uint64_t lost;
            memcpy(&lost, rec + sizeof h + 8, 8); /* u64 id, u64 lost */
            s->lost += lost;
        }
        tail += h.size;
    }
    s->bytes += tail - r->meta->data_tail;
    __atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
    return delivered;
}

size_t bs_perf_sampler_drain(bs_perf_sampler *s, bs_cpu_sample_fn *on_sample, void *ctx)
{
    size_t delivered = 0;
    for (unsigned i = 0; i < s->n; i++)
        delivered += drain_ring(s, &s->rings[i], on_sample, ctx);
    return delivered;
}

const uint64_t *bs_perf_sampler_ring_head(const bs_perf_sampler *s, int tid)
{
    for (unsigned i = 0; s && i < s->n; i++)
        if (s->rings[i].tid == tid)
            return (const uint64_t *)&s->rings[i].meta->data_head;
    return NULL;
}

void bs_perf_sampler_stats(const bs_perf_sampler *s, bs_perf_stats *out)
{
    memset(out, 0, sizeof *out);
    out->samples = s->samples;
    out->lost = s->lost;
    out->truncated = s->truncated;
    out->malformed = s->malformed;
    out->bytes = s->bytes;
    out->ring_full = s->ring_full;
    out->with_regs = s->with_regs;
    out->stack_bytes_used = s->stack_used;
    out->threads = s->n;
    out->ring_kib = (unsigned)((s->data_len + (size_t)sysconf(_SC_PAGESIZE)) / 1024);
    out->max_stack = s->max_stack;
}

#else /* not Linux */

struct bs_perf_sampler {
    int unused;
};

int bs_perf_sampler_open(bs_perf_sampler **out, const int *tids, unsigned n_tids, unsigned hz,
                         char *why, size_t why_cap)
{
    (void)tids;
    (void)n_tids;
    (void)hz;
    *out = NULL;
    snprintf(why, why_cap, "CPU sampling needs Linux (perf_event_open)");
    errno = ENOSYS;
    return -1;
}

int bs_perf_sampler_open_ex(bs_perf_sampler **out, const int *tids, unsigned n_tids, unsigned hz, int with_stack,
                            unsigned stack_bytes, char *why, size_t why_cap)
{
    (void)with_stack;
    (void)stack_bytes;
    return bs_perf_sampler_open(out, tids, n_tids, hz, why, why_cap);
}

int bs_perf_sampler_enable(bs_perf_sampler *s)
{
    (void)s;
    errno = ENOSYS;
    return -1;
}

int bs_perf_sampler_disable(bs_perf_sampler *s)
{
    (void)s;
    errno = ENOSYS;
    return -1;
}

size_t bs_perf_sampler_drain(bs_perf_sampler *s, bs_cpu_sample_fn *on_sample, void *ctx)
{
    (void)s;
    (void)on_sample;
    (void)ctx;
    return 0;
}

void bs_perf_sampler_stats(const bs_perf_sampler *s, bs_perf_stats *out)
{
    (void)s;
    memset(out, 0, sizeof *out);
}

const uint64_t *bs_perf_sampler_ring_head(const bs_perf_sampler *s, int tid)
{
    (void)s;
    (void)tid;
    return NULL;
}

void bs_perf_sampler_close(bs_perf_sampler *s)
{
    (void)s;
}
#endif
