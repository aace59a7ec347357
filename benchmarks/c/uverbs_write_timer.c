/*
 * LD_PRELOAD shim that times every write() to /dev/infiniband/uverbs*: on Soft-RoCE that system
 * call is the doorbell of ibv_post_send (librxe queues the work request in shared memory, then
 * asks the kernel to run the requester, which on a veth pair also runs the peer's responder and
 * the ACK in the same call). Preloaded into perftest and into rdma4j's JVMs alike, it tells in one
 * boot whether the two spend the same time inside post_send, and how much of each round trip
 * passes outside it. At exit it writes one line to $WSHIM_OUT.<pid>, over the last $WSHIM_LAST
 * (default 2500) doorbells: their mean, p10, median and p90 duration, the time they span per
 * doorbell (for a ping-pong with one doorbell per message and side: the round trip), and the share
 * of that span spent inside the call. Two clock reads per doorbell are its whole overhead.
 *
 *   cc -O2 -shared -fPIC -o uverbs_write_timer.so uverbs_write_timer.c
 *   LD_PRELOAD=$PWD/uverbs_write_timer.so WSHIM_OUT=/tmp/lat ib_send_lat ...
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES (1 << 20)
#define MAX_FD 4096

static long durations[MAX_SAMPLES], starts[MAX_SAMPLES], sorted[MAX_SAMPLES];
static long samples;
static signed char fd_kind[MAX_FD]; /* 0 not looked at yet, 1 a uverbs device, -1 anything else */

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int is_uverbs(int fd) {
    if (fd < 0 || fd >= MAX_FD) {
        return 0;
    }
    if (fd_kind[fd] == 0) {
        char path[64], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n < 0) {
            return 0;
        }
        target[n] = 0;
        fd_kind[fd] = strstr(target, "/dev/infiniband/uverbs") ? 1 : -1;
    }
    return fd_kind[fd] == 1;
}

/* The raw system call, not libc's write: this is libc's write, interposed. */
ssize_t write(int fd, const void *buf, size_t count) {
    if (!is_uverbs(fd)) {
        return syscall(SYS_write, fd, buf, count);
    }
    long t0 = now_ns();
    ssize_t r = syscall(SYS_write, fd, buf, count);
    long t1 = now_ns();
    if (samples < MAX_SAMPLES) {
        starts[samples] = t0;
        durations[samples] = t1 - t0;
        samples++;
    }
    return r;
}

static int by_value(const void *a, const void *b) {
    long x = *(const long *) a, y = *(const long *) b;
    return x < y ? -1 : x > y;
}

__attribute__((destructor)) static void report(void) {
    const char *out = getenv("WSHIM_OUT");
    if (out == NULL || samples < 2) {
        return;
    }
    long last = getenv("WSHIM_LAST") ? atol(getenv("WSHIM_LAST")) : 2500;
    if (last < 2) {
        last = 2; /* a span needs two doorbells; fewer (or a negative count) would divide by zero or copy a negative size */
    }
    long from = samples > last ? samples - last : 0, m = samples - from;
    double sum = 0;
    memcpy(sorted, durations + from, m * sizeof(long));
    for (long i = 0; i < m; i++) {
        sum += sorted[i];
    }
    qsort(sorted, m, sizeof(long), by_value);
    double span_us = (starts[samples - 1] - starts[from]) / 1e3;
    char file[512];
    snprintf(file, sizeof file, "%s.%d", out, (int) getpid());
    FILE *f = fopen(file, "w");
    if (f == NULL) {
        return;
    }
    fprintf(f, "doorbells %ld, last %ld: mean %.1f us, p10 %.1f, median %.1f, p90 %.1f; %.1f us apart; %.0f%% of the time inside\n",
            samples, m, sum / m / 1e3, sorted[m / 10] / 1e3, sorted[m / 2] / 1e3, sorted[m * 9 / 10] / 1e3,
            span_us / (m - 1), 100.0 * sum / 1e3 / span_us);
    fclose(f);
}
