/* dbg_procs.h — the processes and atoms of a dbg trace (readers only).
 *
 * Pids are keyed by (node, number, serial, creation); the first node seen
 * is spelled 0 and later ones 1, 2... in order of appearance, as a shell
 * spells pids of other nodes: <0.80.0>, <1.80.0>. Atom and node names are
 * interned in frame tables, so a frame key is (module atom + 1, function
 * atom, arity) and names are spelled only when the profile is built. */
#ifndef BS_DBG_PROCS_H
#define BS_DBG_PROCS_H

#include <stdint.h>

#include "../dist/eterm.h"
#include "../engine/frame_table.h"
#include "../engine/stack_rebuild.h"

typedef struct bs_dbg_proc {
    uint32_t node;
    unsigned number, serial, creation;
    unsigned has_returns : 1;      /* return_to/return_from seen (first pass) */
    unsigned started : 1;          /* engine state initialised (second pass) */
    unsigned last_return_from : 1; /* the previous event was a return_from */
    uint32_t name_atom;            /* registered name, UINT32_MAX: none */
    uint64_t clock;                /* untimed traces: events so far */
    uint64_t first_t, last_t;
    /* first pass: the time and place of the process's last timed message */
    uint64_t scan_t, scan_offset;
    const char *scan_file;
    bs_proc proc;
} bs_dbg_proc;

typedef struct bs_dbg_procs {
    bs_dbg_proc *procs;
    uint32_t n, cap, max;
    uint32_t *slots;   /* open addressing: pid -> index */
    uint32_t cap_slots;
    uint64_t refused;  /* events of processes beyond max */
    uint32_t refused_procs;
    bs_frame_table atoms, nodes;
} bs_dbg_procs;

void bs_dbg_procs_init(bs_dbg_procs *t, uint32_t max);
/* Frees the table and every started engine state. */
void bs_dbg_procs_free(bs_dbg_procs *t);
/* The index of pid, added if new; UINT32_MAX when the table is full
 * (counted in refused) or memory ran out (*oom set). */
uint32_t bs_dbg_procs_get(bs_dbg_procs *t, const bs_eterm_pid *pid, int *oom);
/* Id of an atom's text; UINT32_MAX when memory ran out. */
uint32_t bs_dbg_atom(bs_dbg_procs *t, const bs_eterm *atom);
/* "<0.80.0>" or "<0.80.0> name" into buf. */
void bs_dbg_proc_label(const bs_dbg_procs *t, const bs_dbg_proc *p, char *buf, size_t cap);

#endif
