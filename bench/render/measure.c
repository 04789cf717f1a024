/* measure.c — runs a command and prints what it cost, for bench/render:
 *
 *   measure OUT.txt COMMAND [ARG...]
 *
 * writes one line "<exit status> <wall s> <user s> <sys s> <peak RSS KiB>"
 * to OUT.txt (the child's own output is left alone). Peak RSS is the
 * child's ru_maxrss from wait4(), so it is the command's own high-water
 * mark, not this program's. Exists so the benchmark needs no GNU time. */
#define _DEFAULT_SOURCE /* wait4 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: measure OUT.txt COMMAND [ARG...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) {
        perror("wait4");
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    FILE *out = fopen(argv[1], "w");
    if (!out) {
        perror(argv[1]);
        return 2;
    }
    fprintf(out, "%d %.3f %.3f %.3f %ld\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
            wall, seconds(ru.ru_utime), seconds(ru.ru_stime), ru.ru_maxrss);
    return fclose(out) == 0 ? 0 : 2;
}
