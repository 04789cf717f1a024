/* epmd_lookup.h — asks a host's epmd (port 4369, or ERL_EPMD_PORT) on which
 * port a node listens (PORT_PLEASE2_REQ), so that "no epmd on the host", "no
 * such node" and "the node refused the connection" can be told apart before
 * ei connects. */
#ifndef BS_EPMD_LOOKUP_H
#define BS_EPMD_LOOKUP_H

#include <stddef.h>

typedef enum bs_epmd_result {
    BS_EPMD_FOUND = 0,
    BS_EPMD_BAD_HOST,        /* the host name does not resolve */
    BS_EPMD_UNREACHABLE,     /* no epmd listening there (connection refused) */
    BS_EPMD_TIMEOUT,         /* epmd did not answer in time */
    BS_EPMD_NOT_REGISTERED,  /* epmd answered: no node of that name */
    BS_EPMD_PROTOCOL         /* an answer that is not epmd's */
} bs_epmd_result;

/* Looks up `alive` (the part of the node name before '@') at host. On
 * BS_EPMD_FOUND *port is the node's distribution port. timeout_ms bounds the
 * whole exchange. err gets a one-line reason for the other results. */
bs_epmd_result bs_epmd_port(const char *host, const char *alive, unsigned timeout_ms, int *port, char *err,
                            size_t err_size);

#endif
