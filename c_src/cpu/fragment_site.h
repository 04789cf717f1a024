/* fragment_site.h — the Erlang function under a shared fragment of the JIT,
 * from what the fragment saved when the sample was taken.
 *
 * BeamAsm (x86_64, frame pointers: +JPperf true) runs an Erlang process's
 * code on the process's own stack, which lies in its heap: the kernel does
 * not copy it with a sample (PERF_SAMPLE_STACK_USER copies the C stack the
 * thread was on), and the drain reads it milliseconds later, when the process
 * has made other calls from the same depth or a garbage collection has moved
 * it. On OTP 25 the shared fragments (global::call_light_bif_shared,
 * global::i_length_body_shared, global::garbage_collect ...) push a frame of
 * their own (push rbp; mov rbp, rsp): their caller's return address is at
 * [rbp + 8] on that stack. Two of those save their call site before they
 * switch to the C stack: the caller loads its own address into rdx
 * (lea site(%rip), %rdx, then call fragment), the fragment stores rdx among
 * the scheduler's registers (mov %rdx, d(%rbx)) and sets the C stack to
 * start at e(%rbx) (lea e(%rbx), %rsp), right under those registers. So the
 * saved site is at a fixed distance above the stack pointer the fragment's
 * call into C returns to: inside the stack copy, as it was at the sample.
 *
 * The shape (frame or not, where the site is saved) is decoded from the
 * fragment's own code, never assumed per release: a fragment whose code does
 * not match has no saved site. A site is taken only when the code there
 * calls that very fragment within BS_FRAGMENT_SITE_SPAN bytes; the return
 * address of that call is the caller's frame. Pure functions: no
 * allocation, no recursion, bounded loops over the bytes given. */
#ifndef BS_CPU_FRAGMENT_SITE_H
#define BS_CPU_FRAGMENT_SITE_H

#include <stddef.h>
#include <stdint.h>

#define BS_FRAGMENT_CODE_MAX 1024 /* bytes of a fragment decoded, from its start */
#define BS_FRAGMENT_SITE_SPAN 64  /* bytes from a call site to its call */

typedef struct bs_fragment_shape {
    int frame;        /* the fragment begins with push rbp; mov rbp, rsp */
    int has_site;     /* it saves rdx (its call site) before switching to the C stack */
    int64_t site_off; /* where: the saved site's address minus the stack pointer its call into C returns to */
} bs_fragment_shape;

/* The shape of the fragment from len bytes of its code from its start:
 * frame from its first 4; the saved site from those before ret_off (the
 * return address of its call into C; 0: frame only). */
void bs_fragment_shape_of(const unsigned char *code, size_t len, size_t ret_off, bs_fragment_shape *out);

/* The return address of the first call to target (call rel32) among the
 * len bytes code taken at address site, or 0 when there is none. */
uint64_t bs_fragment_site_call(const unsigned char *code, size_t len, uint64_t site, uint64_t target);

/* Where a fragment with a frame stores its caller's return address in the
 * running process's struct (r13, BEAMAsm's c_p), from len bytes of its code:
 * `mov 0x8(%rsp), %rax' right after its frame is set up (the return address
 * above the saved rbp), then `mov %rax, d(%r13)' (global::garbage_collect
 * does so, into c_p->i, on OTP 25, 27 and 29: d = 0x100, 0xf8). d, or -1
 * when the code does neither. */
int64_t bs_fragment_ra_store(const unsigned char *code, size_t len);

/* Where the running process's struct keeps its stack top (c_p->stop), from
 * len bytes of a fragment's code that leaves the runtime: the first
 * `mov d(%r13), %rsp' (the Erlang stack taken back after a call into C;
 * global::garbage_collect on OTP 25: d = 0x58). d, or -1 when there is none. */
int64_t bs_fragment_stop_load(const unsigned char *code, size_t len);

/* Where it keeps the frame pointer of the Erlang code that entered the
 * runtime (c_p->frame_pointer), from the same code: the first
 * `mov d(%r13), %rbp' (global::garbage_collect on OTP 25: d = 0x60, right
 * after the stack's load). d, or -1 when there is none. */
int64_t bs_fragment_fp_load(const unsigned char *code, size_t len);

#endif
