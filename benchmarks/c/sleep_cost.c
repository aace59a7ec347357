/*
 * What one timed sleep costs the CPU it wakes on. First the sleeper's own CPU time: sleeps the
 * given microseconds (nanosleep; a parked Java thread's timed wait is a futex wait with a
 * timeout, on the same kernel timers) the given number of times and prints the CPU time (user +
 * system) and the wall time per sleep. That is a lower bound: what the kernel or the hypervisor
 * spends on the wake-up without charging the sleeper is missing, and so is what the thread it
 * preempts loses beyond the stolen time (caches, a pipeline refilled).
 *
 * Then the cost as a thread busy on the same CPU sees it: both pinned to the first CPU this
 * process may use, a fixed amount of arithmetic is timed alone and beside the same sleeps, in
 * turns, and the difference divided by the wake-ups that fell into the busy run is printed (the
 * busy loop stands for an allreduce running on a rank's progress thread while the trainer's
 * thread of that rank waits for its next layer).
 *
 *   cc -O2 -pthread -o sleep_cost sleep_cost.c && ./sleep_cost 150 20000
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

/* Turns of the busy thread alone and beside the sleeper; the median difference is reported. */
#define TURNS 9

static long sleep_us;
static volatile int stop_sleeping;
static volatile double sink;

static double seconds(struct timeval t) {
    return t.tv_sec + t.tv_usec * 1e-6;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void sleep_once(void) {
    struct timespec sleep = {sleep_us / 1000000, (sleep_us % 1000000) * 1000};
    nanosleep(&sleep, NULL);
}

static void *sleeper(void *wakes) {
    long n = 0;
    while (!stop_sleeping) {
        sleep_once();
        n++;
    }
    *(long *) wakes = n;
    return NULL;
}

/* Arithmetic that touches no memory: its time changes only with the CPU time it gets. */
static double busy(long steps) {
    double t0 = now(), x = 1;
    for (long i = 0; i < steps; i++) {
        x = x * 1.0000001 + 1e-9;
    }
    sink = x;
    return now() - t0;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MICROSECONDS COUNT\n", argv[0]);
        return 2;
    }
    sleep_us = atol(argv[1]);
    long count = atol(argv[2]);
    if (sleep_us <= 0 || count <= 0) {
        fprintf(stderr, "%s: need a positive sleep and count\n", argv[0]);
        return 2;
    }
    cpu_set_t allowed, one;
    sched_getaffinity(0, sizeof allowed, &allowed);
    int cpu = 0;
    while (!CPU_ISSET(cpu, &allowed)) {
        cpu++;
    }
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof one, &one); /* threads created below inherit it */

    struct timespec a, b;
    struct rusage r0, r1;
    clock_gettime(CLOCK_MONOTONIC, &a);
    getrusage(RUSAGE_SELF, &r0);
    for (long i = 0; i < count; i++) {
        sleep_once();
    }
    getrusage(RUSAGE_SELF, &r1);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double cpu_time = seconds(r1.ru_utime) - seconds(r0.ru_utime) + seconds(r1.ru_stime) - seconds(r0.ru_stime);
    double wall = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
    printf("%.1f us CPU and %.1f us wall per sleep of %ld us", cpu_time / count * 1e6, wall / count * 1e6, sleep_us);

    /* a busy run as long as the sleeps above took, so that about count / TURNS wake-ups fall in each */
    long steps = 1000000;
    double per_step = busy(steps) / steps;
    steps = (long) (wall / TURNS / per_step);
    double lost[TURNS];
    for (int t = 0; t < TURNS; t++) {
        double alone = busy(steps);
        long wakes = 0;
        pthread_t thread;
        stop_sleeping = 0;
        pthread_create(&thread, NULL, sleeper, &wakes);
        double beside = busy(steps);
        stop_sleeping = 1;
        pthread_join(thread, NULL);
        lost[t] = wakes > 0 ? (beside - alone) / wakes : 0;
    }
    qsort(lost, TURNS, sizeof lost[0], compare);
    printf("; a busy thread on the same CPU (%d) loses %.1f us per wake-up (median of %d turns, %.1f-%.1f)\n", cpu,
           lost[TURNS / 2] * 1e6, TURNS, lost[0] * 1e6, lost[TURNS - 1] * 1e6);
    return 0;
}
