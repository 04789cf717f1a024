/* vm_threads.h — the OS threads of this process and which of them are the
 * VM's schedulers, from /proc/self/task/<tid>/comm (Linux only; elsewhere
 * listing fails with ENOSYS).
 *
 * OTP 25 names its threads "<n>_scheduler", "<n>_dirty_cpu_scheduler" and
 * "<n>_dirty_io_scheduler"; the kernel keeps 15 characters of a thread's name,
 * so they read "1_scheduler", "2_dirty_cpu_sch", "3_dirty_io_sche". Later
 * releases (seen on OTP 27 and 29) name them "erts_sched_<n>",
 * "erts_dcpus_<n>" and "erts_dios_<n>". Plain C11,
 * no Erlang headers: built into the NIF and into test/c. */
#ifndef BS_VM_THREADS_H
#define BS_VM_THREADS_H

typedef enum {
    BS_THREAD_SCHEDULER,
    BS_THREAD_DIRTY_CPU,
    BS_THREAD_DIRTY_IO,
    BS_THREAD_OTHER
} bs_thread_kind;

typedef struct bs_vm_thread {
    int tid;
    bs_thread_kind kind;
    char name[16]; /* comm, NUL-terminated (at most 15 characters) */
} bs_vm_thread;

/* The threads of this OS process, at most cap of them into out (in the order
 * /proc lists them). Returns the number found (more than cap means some were
 * left out), or -1 with errno. A thread that exits while it is listed is
 * skipped. */
int bs_vm_threads_list(bs_vm_thread *out, unsigned cap);

/* The kind of a thread named comm (pure: no system call). A name counts as a
 * scheduler's only when it is "erts_sched_", "erts_dcpus_" or "erts_dios_"
 * followed by a number, or "<digits>_" followed by the whole suffix or, in a
 * 15-character name, by the suffix cut where the kernel cut it. */
bs_thread_kind bs_vm_thread_kind(const char *comm);

#endif
