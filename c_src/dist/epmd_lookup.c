/* epmd_lookup.c — PORT_PLEASE2_REQ to a host's epmd (see epmd_lookup.h).
 *
 * Request:  Len:16 'z' Name              (Len = 1 + name length)
 * Response: 'w' Result:8 [Port:16 ...]   (Result 0 = found) */
#include "epmd_lookup.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EPMD_PORT "4369"

/* The port epmd listens on: ERL_EPMD_PORT when set to a valid port (as erl,
 * epmd and erl_call read it), 4369 otherwise. */
static const char *epmd_port(void)
{
    const char *env = getenv("ERL_EPMD_PORT");
    if (env == NULL || *env == '\0')
        return EPMD_PORT;
    char *end = NULL;
    long p = strtol(env, &end, 10);
    return (*end == '\0' && p > 0 && p <= 65535) ? env : EPMD_PORT;
}
#define PORT_PLEASE2_REQ 122
#define PORT2_RESP 119

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events or the deadline passes: 1 ready, 0
 * timeout, -1 error. */
static int wait_fd(int fd, short events, long long deadline)
{
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        return r < 0 ? -1 : r;
    }
}

/* Non-blocking connect to one address: 1 connected, 0 timeout, -1 refused
 * or other error (errno set). */
static int connect_by(int fd, const struct addrinfo *a, long long deadline)
{
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
        return 1;
    if (errno != EINPROGRESS)
        return -1;
    int r = wait_fd(fd, POLLOUT, deadline);
    if (r <= 0)
        return r;
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
        return -1;
    if (soerr) {
        errno = soerr;
        return -1;
    }
    return 1;
}

static int read_full(int fd, unsigned char *buf, size_t want, long long deadline, size_t *got)
{
    *got = 0;
    while (*got < want) {
        int r = wait_fd(fd, POLLIN, deadline);
        if (r <= 0)
            return r;
        ssize_t n = read(fd, buf + *got, want - *got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 ? 1 : -1; /* EOF: caller sees *got < want */
        *got += (size_t)n;
    }
    return 1;
}

bs_epmd_result bs_epmd_port(const char *host, const char *alive, unsigned timeout_ms, int *port, char *err,
                            size_t err_size)
{
    long long deadline = now_ms() + timeout_ms;
    size_t name_len = strlen(alive);
    if (name_len == 0 || name_len > 255) {
        snprintf(err, err_size, "node name '%s' is not a valid name", alive);
        return BS_EPMD_PROTOCOL;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *addrs = NULL;
    int gai = getaddrinfo(host, epmd_port(), &hints, &addrs);
    if (gai != 0) {
        snprintf(err, err_size, "host '%s' not found (%s)", host, gai_strerror(gai));
        return BS_EPMD_BAD_HOST;
    }
    bs_epmd_result result = BS_EPMD_UNREACHABLE;
    snprintf(err, err_size, "no epmd on host '%s' (is a node running there?)", host);
    int fd = -1;
    for (const struct addrinfo *a = addrs; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        int c = connect_by(fd, a, deadline);
        if (c == 1)
            break;
        if (c == 0) {
            result = BS_EPMD_TIMEOUT;
            snprintf(err, err_size, "epmd on host '%s' did not answer within %u ms", host, timeout_ms);
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(addrs);
    if (fd < 0)
        return result;

    unsigned char req[3 + 255];
    req[0] = (unsigned char)((name_len + 1) >> 8);
    req[1] = (unsigned char)((name_len + 1) & 0xff);
    req[2] = PORT_PLEASE2_REQ;
    memcpy(req + 3, alive, name_len);
    size_t sent = 0;
    while (sent < name_len + 3) {
        ssize_t n = write(fd, req + sent, name_len + 3 - sent);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN && wait_fd(fd, POLLOUT, deadline) == 1)
            continue;
        if (n <= 0) {
            close(fd);
            snprintf(err, err_size, "epmd on host '%s' closed the connection", host);
            return BS_EPMD_PROTOCOL;
        }
        sent += (size_t)n;
    }
    unsigned char resp[4];
    size_t got = 0;
    int r = read_full(fd, resp, sizeof resp, deadline, &got);
    close(fd);
    if (r == 0) {
        snprintf(err, err_size, "epmd on host '%s' did not answer within %u ms", host, timeout_ms);
        return BS_EPMD_TIMEOUT;
    }
    if (got >= 2 && resp[0] == PORT2_RESP && resp[1] != 0) {
        snprintf(err, err_size, "no node '%s' on host '%s' (epmd does not know it)", alive, host);
        return BS_EPMD_NOT_REGISTERED;
    }
    if (r < 0 || got < 4 || resp[0] != PORT2_RESP) {
        snprintf(err, err_size, "unexpected answer from epmd on host '%s'", host);
        return BS_EPMD_PROTOCOL;
    }
    *port = (resp[2] << 8) | resp[3];
    return BS_EPMD_FOUND;
}
