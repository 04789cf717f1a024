/* code_delivery.h — makes beamspy's modules available on a target node
 * that lacks them (or runs another version of them), from the copy inside
 * the command-line tool (payload.h), and removes them again afterwards.
 *
 * Before anything is loaded, the node's OTP release, architecture and word
 * size must equal those the tool was built for: the NIF library is native
 * code. It is written to a private temporary directory on the node (mode
 * 0700), loaded from there, and the file and directory are deleted at once:
 * nothing of beamspy stays on the node's disk. Modules the node already has
 * in the same version are used as they are and left alone. */
#ifndef BS_CODE_DELIVERY_H
#define BS_CODE_DELIVERY_H

#include <stddef.h>

#include "node_conn.h"

#define BS_DELIVERY_MAX_MODULES 32

typedef struct bs_delivery {
    unsigned n_loaded;                             /* modules this delivery loaded */
    unsigned loaded[BS_DELIVERY_MAX_MODULES];      /* indexes into bs_payload_modules */
    int reload[BS_DELIVERY_MAX_MODULES];           /* the node had its own version, from a file */
    char otp_release[16];                          /* the node's */
    double load_ms;                                /* time spent checking and loading */
} bs_delivery;

/* The oldest OTP release beamspy runs on. */
#define BS_MIN_OTP_RELEASE 25

/* Checks the node and loads what it lacks. BS_NODE_INCOMPATIBLE when its
 * OTP is too old or differs from the tool's build where code must be
 * loaded; other statuses as bs_node_call. */
bs_node_status bs_deliver_code(bs_node *n, bs_delivery *d, unsigned timeout_ms, char *err, size_t err_size);

/* Delivers again on a node where beamspy's code went away after
 * bs_deliver_code found it there (the job of a tool that went away
 * removed it as this tool attached): waits, at most timeout_ms, for that
 * removal to be over, then delivers; d keeps what either delivery loaded. */
bs_node_status bs_redeliver_code(bs_node *n, bs_delivery *d, unsigned timeout_ms, char *err, size_t err_size);

/* Unloads what bs_deliver_code loaded (and reloads the node's own version
 * of a module it replaced), once no beamspy job runs on the node: while one
 * runs (another tool's, or one started there by other means), *deferred is
 * set and the node removes the code when the last job ends. */
bs_node_status bs_remove_code(bs_node *n, const bs_delivery *d, unsigned timeout_ms, int *deferred, char *err,
                              size_t err_size);

/* The module names of a delivery as an Erlang list of atoms, appended to x
 * (the job on the node unloads them itself if the tool goes away). */
int bs_delivery_encode_modules(const bs_delivery *d, ei_x_buff *x);

#endif
