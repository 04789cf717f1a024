/* vm_threads.c — lists this process's threads (/proc/self/task) and tells
 * the VM's scheduler threads from the others by name (see vm_threads.h). */
#define _GNU_SOURCE
#include "vm_threads.h"

#include <errno.h>
#include <string.h>

#ifdef __linux__
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#endif

#define BS_COMM_MAX 15 /* TASK_COMM_LEN - 1: what the kernel keeps of a name */

/* comm's rest after "<n>_" is suffix, or suffix cut where the kernel cut a
 * 15-character name. */
static int names_suffix(const char *comm, const char *rest, const char *suffix)
{
    size_t n = strlen(rest);
    if (n == 0 || strncmp(rest, suffix, n) != 0)
        return 0;
    return n == strlen(suffix) || strlen(comm) == BS_COMM_MAX;
}

/* comm is prefix followed by a number and nothing else. */
static int numbered(const char *comm, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(comm, prefix, n) != 0 || comm[n] == '\0')
        return 0;
    for (const char *p = comm + n; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

bs_thread_kind bs_vm_thread_kind(const char *comm)
{
    /* From OTP 26 on: erts_sched_1, erts_dcpus_1, erts_dios_1. */
    if (numbered(comm, "erts_sched_"))
        return BS_THREAD_SCHEDULER;
    if (numbered(comm, "erts_dcpus_"))
        return BS_THREAD_DIRTY_CPU;
    if (numbered(comm, "erts_dios_"))
        return BS_THREAD_DIRTY_IO;
    /* OTP 25: 1_scheduler, 2_dirty_cpu_scheduler, 3_dirty_io_scheduler (cut at 15). */
    const char *p = comm;
    while (*p >= '0' && *p <= '9')
        p++;
    if (p == comm || *p != '_')
        return BS_THREAD_OTHER;
    p++;
    if (names_suffix(comm, p, "scheduler"))
        return BS_THREAD_SCHEDULER;
    if (names_suffix(comm, p, "dirty_cpu_scheduler"))
        return BS_THREAD_DIRTY_CPU;
    if (names_suffix(comm, p, "dirty_io_scheduler"))
        return BS_THREAD_DIRTY_IO;
    return BS_THREAD_OTHER;
}

#ifdef __linux__
/* Reads /proc/self/task/<tid>/comm into name (NUL-terminated, newline
 * removed). -1 when the thread is gone. */
static int read_comm(int tid, char name[16])
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n;
    do
        n = read(fd, name, 15);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n < 0)
        return -1;
    name[n] = '\0';
    char *nl = strchr(name, '\n');
    if (nl)
        *nl = '\0';
    return 0;
}

int bs_vm_threads_list(bs_vm_thread *out, unsigned cap)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int found = 0;
    int err;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            err = errno; /* 0 at the end of the directory */
            break;
        }
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || tid <= 0 || tid > 0x7fffffffL)
            continue;
        char name[16];
        if (read_comm((int)tid, name) != 0)
            continue; /* exited since readdir saw it */
        if ((unsigned)found < cap) {
            out[found].tid = (int)tid;
            out[found].kind = bs_vm_thread_kind(name);
            memcpy(out[found].name, name, sizeof name);
        }
        if (found == 0x7fffffff) {
            err = 0;
            break;
        }
        found++;
    }
    closedir(d);
    if (err != 0) {
        errno = err;
        return -1;
    }
    return found;
}
#else
int bs_vm_threads_list(bs_vm_thread *out, unsigned cap)
{
    (void)out;
    (void)cap;
    errno = ENOSYS;
    return -1;
}
#endif
