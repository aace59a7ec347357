/*
 * What one timed sleep costs the CPU it wakes on: sleeps the given microseconds (nanosleep; a
 * parked Java thread's timed wait is a futex wait with a timeout, on the same kernel timers) the
 * given number of times and prints the CPU time (user + system) and the wall time per sleep. On
 * a virtual machine whose timer interrupts and wake-ups exit to the hypervisor this CPU time is
 * several microseconds, taken from whatever else runs on that core; it is a lower bound (time
 * the kernel or the hypervisor charges elsewhere is not counted).
 *
 *   cc -O2 -o sleep_cost sleep_cost.c && ./sleep_cost 150 20000
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double seconds(struct timeval t) {
    return t.tv_sec + t.tv_usec * 1e-6;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MICROSECONDS COUNT\n", argv[0]);
        return 2;
    }
    long us = atol(argv[1]);
    long count = atol(argv[2]);
    if (us <= 0 || count <= 0) {
        fprintf(stderr, "%s: need a positive sleep and count\n", argv[0]);
        return 2;
    }
    struct timespec sleep = {us / 1000000, (us % 1000000) * 1000}, a, b;
    struct rusage r0, r1;
    clock_gettime(CLOCK_MONOTONIC, &a);
    getrusage(RUSAGE_SELF, &r0);
    for (long i = 0; i < count; i++) {
        nanosleep(&sleep, NULL);
    }
    getrusage(RUSAGE_SELF, &r1);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double cpu = seconds(r1.ru_utime) - seconds(r0.ru_utime) + seconds(r1.ru_stime) - seconds(r0.ru_stime);
    double wall = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
    printf("%.1f us CPU and %.1f us wall per sleep of %ld us\n", cpu / count * 1e6, wall / count * 1e6, us);
    return 0;
}
