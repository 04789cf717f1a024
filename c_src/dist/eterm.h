/* eterm.h — one Erlang term in the external term format, decoded into a small
 * read-only tree (what a C node gets from ei: a buffer and an index).
 *
 * The input comes from another machine, so it is treated as hostile. libei's
 * decoders take no buffer length and trust every length field, so before each
 * ei_get_type / ei_decode_* call the decoder checks that every byte the call
 * will read lies inside the input: the tag byte says how big the fixed part
 * is and ei_get_type reports the lengths. Values come from libei; the only
 * fields read directly are the id count of a reference, the size and
 * free-variable count of a fun, and the sign and digits of a bignum too big
 * for libei's long long. The text of an old-style FLOAT_EXT, which libei
 * hands to sscanf, is given to it as a NUL-terminated copy. Nothing is read
 * outside [buf, buf + len).
 *
 * Caps (anything beyond them is an error, never a crash):
 *   - nesting: a term sits inside at most BS_ETERM_MAX_DEPTH (256) tuples,
 *     lists, maps or funs (a fun's free variables are inside it); the root
 *     is at depth 0. The decoder recurses once per level, so never more
 *     than 257 calls deep, whatever the input;
 *   - nodes: at most BS_ETERM_MAX_NODES (16M) terms in one tree;
 *   - memory: the whole tree (one arena, one owner) takes at most
 *     BS_ETERM_MEMORY_PER_BYTE (32) bytes per input byte from *index to len,
 *     plus BS_ETERM_MEMORY_SLACK (64 KiB). Every term costs at least one byte
 *     of input, and a header that promises more elements than the bytes left
 *     can hold is refused before anything is allocated for it, so a valid
 *     term needs at most about 18 bytes per input byte (a list of []s, the
 *     worst case: a 16-byte node per byte, and arena chunks at most an
 *     eighth unused).
 * Integer arithmetic on lengths is done in 64 bits; lengths that ei reports
 * as negative (32-bit fields above 2^31) are refused.
 *
 * What each kind keeps:
 *   INT     a long long. Integers encoded as bignums decode as INT when they
 *           fit in a long long; larger ones (also 2^63 .. 2^64-1) are OTHER
 *           with other kind BS_ET_OTHER_BIG (their magnitude is kept, and
 *           bs_eterm_print writes them exactly, as -16#1F...).
 *   FLOAT   a double.
 *   ATOM    its name in UTF-8 (Latin-1 atoms are converted by libei), with
 *           its length and a NUL after it.
 *   BINARY  its bytes, length, and a NUL after them (for printing).
 *   STRING  STRING_EXT, a list of small integers sent as bytes: the bytes,
 *           length and a NUL. bs_eterm_size is 0 for it (use text_len).
 *           A STRING_EXT of 0 bytes is [], a LIST of size 0.
 *   TUPLE   its elements.
 *   LIST    its elements. [] is a LIST of size 0. An improper list [a, b | T]
 *           is a LIST of size 2 whose bs_eterm_tail is T (NULL for a proper
 *           list; a STRING_EXT tail is kept as it is, not merged).
 *           A LIST_EXT header of 0 elements is refused.
 *   MAP     2 * pairs items in the encoded order: key, value, key, value...
 *   PID     node name, number, serial and creation (the shell's "<0.12.0>"
 *           numbers are local to the node that prints them; a C node cannot
 *           know them). Printed as <node.number.serial>.
 *   OTHER   references, ports, funs (closures and fun M:F/A), bit strings
 *           and bignums beyond 64 bits: checked whole, kept as their kind
 *           only (bs_eterm_other_kind).
 * Refused with an error: the old FUN_EXT (pre-R8 funs, which no current
 * node sends), atom cache references, compressed terms, unknown tags, atoms
 * whose UTF-8 name is longer than 1020 bytes (255 four-byte characters),
 * references with more than 5 ids, a fun whose size field disagrees with its
 * contents.
 *
 * A tree never changes after decoding, so any number of threads may read
 * one. No global state. */
#ifndef BS_ETERM_H
#define BS_ETERM_H

#include <stddef.h>
#include <stdio.h>

#define BS_ETERM_MAX_DEPTH 256
#define BS_ETERM_MAX_NODES (16u * 1024 * 1024)
#define BS_ETERM_MEMORY_PER_BYTE 32
#define BS_ETERM_MEMORY_SLACK (64u * 1024)
/* The version byte that starts term_to_binary output and ei_x_encode_version. */
#define BS_ETERM_VERSION_MAGIC 131
/* Output cap of bs_eterm_print, in bytes. */
#define BS_ETERM_PRINT_MAX 4096
/* Largest cap bs_eterm_print_max accepts (larger ones are lowered to it). */
#define BS_ETERM_PRINT_MAX_LIMIT (16u * 1024 * 1024)

typedef enum {
    BS_ET_INT,
    BS_ET_FLOAT,
    BS_ET_ATOM,
    BS_ET_BINARY,
    BS_ET_STRING, /* STRING_EXT: a list of bytes */
    BS_ET_TUPLE,
    BS_ET_LIST,
    BS_ET_MAP,
    BS_ET_PID,
    BS_ET_OTHER /* refs, ports, funs, bit strings, big bignums: kind only */
} bs_eterm_kind;

/* What an OTHER term was (BS_ET_OTHER_NONE for the other kinds). */
typedef enum {
    BS_ET_OTHER_NONE,
    BS_ET_OTHER_REF,
    BS_ET_OTHER_PORT,
    BS_ET_OTHER_FUN,
    BS_ET_OTHER_BITSTRING,
    BS_ET_OTHER_BIG
} bs_eterm_other;

/* One term of a tree; read it through the functions below (all accept NULL
 * and a term of the wrong kind, and then answer NULL / 0 / not ok). */
typedef struct bs_eterm bs_eterm;
/* The owner of a decoded tree: freeing it frees every term and string. */
typedef struct bs_eterm_tree bs_eterm_tree;

typedef struct bs_eterm_pid {
    const char *node; /* NUL-terminated UTF-8, e.g. "beamspy@localhost" */
    unsigned int number;
    unsigned int serial;
    unsigned int creation;
} bs_eterm_pid;

/* Decodes the term at buf[*index], buf holding len bytes. Returns 0, sets
 * *out to a new tree (free it with bs_eterm_free) and moves *index past the
 * term. Returns -1 on any error, with *out NULL, *index unchanged and a
 * one-line message in err (if err_size > 0) that starts with the byte offset
 * (counted from buf) where the input is wrong: "offset 17: ...". */
int bs_eterm_decode(const char *buf, int len, int *index, bs_eterm_tree **out, char *err, size_t err_size);
/* The same for input that starts with the version byte (131), as
 * term_to_binary output and ei_x_encode_version buffers do. */
int bs_eterm_decode_versioned(const char *buf, int len, int *index, bs_eterm_tree **out, char *err,
                              size_t err_size);
const bs_eterm *bs_eterm_root(const bs_eterm_tree *t);
void bs_eterm_free(bs_eterm_tree *t);
/* Bytes the tree's arena took from malloc (the tree's own struct included). */
size_t bs_eterm_tree_memory(const bs_eterm_tree *t);

bs_eterm_kind bs_eterm_kind_of(const bs_eterm *t); /* BS_ET_OTHER for NULL */
const char *bs_eterm_kind_name(bs_eterm_kind k);   /* "integer", "atom", ... */
bs_eterm_other bs_eterm_other_kind(const bs_eterm *t);

/* INT: its value and *ok = 1; otherwise 0 and *ok = 0 (ok may be NULL). */
long long bs_eterm_int(const bs_eterm *t, int *ok);
/* FLOAT: its value and *ok = 1; otherwise 0.0 and *ok = 0. */
double bs_eterm_float(const bs_eterm *t, int *ok);
/* ATOM, BINARY, STRING: the bytes, NUL-terminated (a binary or string may
 * hold NULs of its own: use bs_eterm_text_len); NULL for other kinds. */
const char *bs_eterm_text(const bs_eterm *t);
size_t bs_eterm_text_len(const bs_eterm *t);
/* TUPLE and LIST: elements (an improper list's tail not counted); MAP: pairs;
 * 0 otherwise. */
size_t bs_eterm_size(const bs_eterm *t);
/* TUPLE and LIST: element i (from 0); MAP: item i of the 2 * size items
 * key0, value0, key1, value1...; NULL when out of range or another kind. */
const bs_eterm *bs_eterm_item(const bs_eterm *t, size_t i);
/* An improper list's tail; NULL for a proper list and other kinds. */
const bs_eterm *bs_eterm_tail(const bs_eterm *t);
const bs_eterm *bs_eterm_map_key(const bs_eterm *map, size_t pair);
const bs_eterm *bs_eterm_map_value(const bs_eterm *map, size_t pair);
/* The value of the first pair (in encoded order) whose key is the atom
 * named key or a binary holding exactly those bytes; NULL if none. */
const bs_eterm *bs_eterm_map_get(const bs_eterm *map, const char *key);
/* 1 if t is the atom named name. */
int bs_eterm_is_atom(const bs_eterm *t, const char *name);
/* X if t is the 2-tuple {tag, X} (tag an atom), else NULL:
 * bs_eterm_tagged(t, "error") gives Reason of {error, Reason}. */
const bs_eterm *bs_eterm_tagged(const bs_eterm *t, const char *tag);
/* PID: its parts (valid as long as the tree); NULL for other kinds. */
const bs_eterm_pid *bs_eterm_pid_of(const bs_eterm *t);

/* Writes t in Erlang syntax, like ~w: {error,{badarg,[1,2]}},
 * #{a => <<"x">>,<<"k">> => 'quoted atom'}, [1,2|3], "string" (or [1,200]
 * when not printable ASCII), <<"text">>, <<"h\xC3\xA9"/utf8>> or <<1,2>>,
 * floats as Erlang writes them (1.5, 100.0, 1.0e16), -16#1F... for big
 * bignums, <node@host.81.0> for pids, and #Ref<...>, #Port<...>, #Fun<...>,
 * #Bitstring<N bits>. At most BS_ETERM_PRINT_MAX bytes: a longer rendering
 * ends with "..." and is never cut inside a number, an escape or a UTF-8
 * character. Output is printable UTF-8 (other bytes are escaped). Returns
 * the bytes written or -1 on a write or allocation error. */
int bs_eterm_print(FILE *out, const bs_eterm *t);
/* The same with a cap of max_bytes (at least 3; at most
 * BS_ETERM_PRINT_MAX_LIMIT). */
int bs_eterm_print_max(FILE *out, const bs_eterm *t, size_t max_bytes);
/* The same into buf (size bytes, NUL included, cut like above); returns the
 * length written. A size of 0 writes nothing. */
size_t bs_eterm_format(char *buf, size_t size, const bs_eterm *t);
/* The term at *index in buf[0, len) decoded (with the caps above: never a
 * recursion deeper than 257, whatever the input) and formatted into out, or
 * "(unreadable term: why)"; *index moves past it when it could be read.
 * For text from another node (libei's ei_s_print_term and ei_skip_term
 * recurse once per level of nesting and trust every length). Returns 0 or
 * -1 (unreadable). */
int bs_eterm_describe(const char *buf, int len, int *index, char *out, size_t out_size);

#endif
