/* seq_flow.h — the messages of seq_trace flows, gathered on one or more
 * nodes, merged by causality into a diagram: participants and messages.
 *
 * Input is one event per seq_trace `send` or `receive`, as the collectors on
 * the nodes report it (src/beamspy_seq_collector.erl): the token's serial
 * {Previous, Current}, node-local time, the sending and receiving process as
 * node name + pid text ("<0.95.0>", numbered on its own node), and the
 * message as Erlang prints it. Processes' names come separately.
 *
 * Merging: a send and its receive carry the same serial and sender, so they
 * pair on (token label, sender, serial) and make one message; a send never
 * received (the receiver died, or lies on a node without a collector) and a
 * receive whose send was not seen are messages too, marked so. Messages are
 * ordered by the token's serial, a Lamport clock (a message caused by
 * another has a larger Current), never by the nodes' clocks; messages of
 * concurrent branches with equal serials are ordered by node-local time, then
 * sender, so the order is deterministic.
 *
 * Bounded: at most max_events events are kept (the rest are counted in
 * `dropped`); message texts are cut to BS_SEQ_TEXT_MAX bytes; at most
 * max_participants participants are drawn (further processes of a node are
 * drawn as one "other processes" participant of that node). Plain C11, no
 * BEAM headers. */
#ifndef BS_SEQ_FLOW_H
#define BS_SEQ_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "defaults.h"

/* The defaults and limits of max_events (events kept per capture),
 * label_chars (characters of a message label in diagrams) and
 * max_participants: the table of defaults' (beamspy_opts:option_table/0,
 * through the generated defaults.h), which the Erlang side checks too. */
#define BS_SEQ_MAX_EVENTS_DEFAULT ((unsigned)BS_DEFAULT_SEQUENCE_MAX_EVENTS)
#define BS_SEQ_MAX_EVENTS_LIMIT ((unsigned)BS_MAX_SEQUENCE_MAX_EVENTS)
#define BS_SEQ_TEXT_MAX 1024u             /* bytes of a message's full text */
#define BS_SEQ_NAME_MAX 255u              /* bytes of a node, pid or process name */
#define BS_SEQ_LABEL_CHARS_DEFAULT ((unsigned)BS_DEFAULT_SEQUENCE_LABEL_CHARS)
#define BS_SEQ_LABEL_CHARS_LIMIT ((unsigned)BS_MAX_SEQUENCE_LABEL_CHARS)
#define BS_SEQ_MAX_PARTICIPANTS_DEFAULT ((unsigned)BS_DEFAULT_SEQUENCE_MAX_PARTICIPANTS)
#define BS_SEQ_MAX_PARTICIPANTS_LIMIT ((unsigned)BS_MAX_SEQUENCE_MAX_PARTICIPANTS)

typedef enum bs_seq_kind { BS_SEQ_SEND = 1, BS_SEQ_RECV = 2 } bs_seq_kind;

typedef struct bs_seq_event {
    bs_seq_kind kind;
    uint64_t prev, cur; /* the token's serial */
    int64_t ts;         /* node-local time (ns); a tie-breaker only */
    const char *label;  /* the token's label, printed */
    const char *from_node, *from_pid;
    const char *to_node, *to_pid; /* to_pid may be a registered name */
    const char *text;   /* the message, printed */
} bs_seq_event;

/* A stored event: its strings are owned by the flow. */
typedef struct bs_seq_stored {
    bs_seq_event e;
    char *strings; /* one block holding all of e's strings */
} bs_seq_stored;

typedef struct bs_seq_name {
    char *node, *pid, *name;
} bs_seq_name;

typedef struct bs_seq_flow {
    bs_seq_stored *events;
    size_t n_events, cap_events, max_events;
    bs_seq_name *names;
    size_t n_names, cap_names;
    uint64_t dropped; /* events past max_events */
} bs_seq_flow;

void bs_seq_flow_init(bs_seq_flow *f, size_t max_events);
/* Copies e (strings cut to their caps). Returns 0, 1 when the event was
 * dropped because max_events are kept already, -1 when memory ran out. */
int bs_seq_flow_add(bs_seq_flow *f, const bs_seq_event *e);
/* Names the process pid of node (registered name or initial call); the first
 * name given for a process wins. Returns 0 or -1 (memory). */
int bs_seq_flow_name(bs_seq_flow *f, const char *node, const char *pid, const char *name);
void bs_seq_flow_free(bs_seq_flow *f);

typedef enum bs_seq_msg_kind {
    BS_SEQ_MSG_SEND = 0, /* a plain message */
    BS_SEQ_MSG_CALL,     /* {'$gen_call', From, Request} */
    BS_SEQ_MSG_CAST,     /* {'$gen_cast', Request} */
    BS_SEQ_MSG_REPLY,    /* {Tag, Reply} with a reference or [alias|Ref] tag */
    BS_SEQ_MSG_EXIT      /* {'EXIT', From, Reason} */
} bs_seq_msg_kind;

const char *bs_seq_msg_kind_name(bs_seq_msg_kind k); /* "send", "call", ... */

/* The kind of a printed message and the start and length of its payload
 * (the request of a call or cast, the reply of a reply, the whole text
 * otherwise). */
bs_seq_msg_kind bs_seq_classify(const char *text, size_t *start, size_t *len);

typedef struct bs_seq_participant {
    const char *node; /* borrowed from the flow */
    const char *pid;  /* "*" for a node's "other processes" */
    const char *name; /* NULL when unknown */
} bs_seq_participant;

typedef struct bs_seq_message {
    size_t from, to; /* participant indexes */
    uint64_t prev, cur;
    int64_t ts;      /* of the send if seen, else of the receive */
    int sent, received;
    bs_seq_msg_kind kind;
    const char *text;       /* full text, borrowed from the flow */
    size_t payload, payload_len; /* the part diagrams show (see bs_seq_classify) */
    const char *token_label;
} bs_seq_message;

typedef struct bs_seq_opts {
    int keep_noise;         /* 1: no default noise filter */
    const char *include_re; /* keep only messages whose text or either end matches */
    const char *exclude_re; /* drop messages whose text or either end matches */
    size_t max_participants; /* 0: BS_SEQ_MAX_PARTICIPANTS_DEFAULT */
    size_t label_chars;      /* 0: BS_SEQ_LABEL_CHARS_DEFAULT */
    const char *title;       /* NULL: none */
} bs_seq_opts;

typedef struct bs_seq_diagram {
    bs_seq_participant *parts;
    size_t n_parts;
    bs_seq_message *msgs;
    size_t n_msgs;
    uint64_t dropped_events;  /* from the flow */
    uint64_t noise, filtered; /* messages left out by the noise filter, by the user's */
    uint64_t folded;          /* processes drawn as "other processes" */
} bs_seq_diagram;

/* Merges, filters and orders. Returns 0, or -1 (memory, or a pattern that
 * does not compile: *bad_pattern set to 1). d is valid (empty) on error. */
int bs_seq_merge(const bs_seq_flow *f, const bs_seq_opts *o, bs_seq_diagram *d, int *bad_pattern);
void bs_seq_diagram_free(bs_seq_diagram *d);

/* A participant's label: "node <pid> name" (name left out when unknown). */
int bs_seq_participant_label(const bs_seq_participant *p, char *buf, size_t cap);

/* The short label of a message: its kind word (call, cast, reply, EXIT)
 * then the payload, cut to max_chars characters (UTF-8 aware) ending in
 * "..." when longer. Returns the length written (buf NUL-terminated). */
size_t bs_seq_message_label(const bs_seq_message *m, size_t max_chars, char *buf, size_t cap);

#endif
