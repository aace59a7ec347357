/*
 * How much of its CPUs the host takes away: one thread pinned to each of the given CPUs reads
 * the monotonic clock in a tight loop for the given time and counts the gaps between two reads
 * (a gap is time the thread did not run: an interrupt, a preemption, or, in a VM, the host running
 * something else on that vCPU). Prints per CPU the gaps over 50 us, 0.5 ms and 5 ms, the longest,
 * and the time lost in all of them.
 *
 * A collective waits for its slowest rank, so a gap on any rank's CPU is a gap in every rank's
 * call: a benchmark's mean over calls of a few microseconds moves with these gaps, its median
 * does not. On a VM whose steal time /proc/stat does not report, this is where they show.
 *
 *   cc -O2 -pthread -o cpu_gaps cpu_gaps.c && ./cpu_gaps 10 0 1
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_CPUS 64

static double seconds;

struct result {
    int cpu;
    long over50us, over500us, over5ms;
    long longest, lost;
};

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void *watch(void *arg) {
    struct result *r = arg;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(r->cpu, &s);
    if (pthread_setaffinity_np(pthread_self(), sizeof s, &s) != 0) {
        fprintf(stderr, "cpu_gaps: cannot run on CPU %d\n", r->cpu);
        exit(2);
    }
    long last = now_ns();
    long end = last + (long)(seconds * 1e9);
    while (last < end) {
        long t = now_ns();
        long gap = t - last;
        if (gap > 50000) {
            r->over50us++;
            r->lost += gap;
            if (gap > 500000) r->over500us++;
            if (gap > 5000000) r->over5ms++;
            if (gap > r->longest) r->longest = gap;
        }
        last = t;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc - 2 > MAX_CPUS || (seconds = atof(argv[1])) <= 0) {
        fprintf(stderr, "usage: cpu_gaps SECONDS CPU...\n");
        return 2;
    }
    int n = argc - 2;
    pthread_t threads[MAX_CPUS];
    struct result results[MAX_CPUS] = {0};
    for (int i = 0; i < n; i++) {
        results[i].cpu = atoi(argv[i + 2]);
        pthread_create(&threads[i], NULL, watch, &results[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(threads[i], NULL);
    }
    for (int i = 0; i < n; i++) {
        struct result *r = &results[i];
        printf("cpu %d: %ld gaps over 50 us (%ld over 0.5 ms, %ld over 5 ms), longest %.2f ms, %.1f ms lost of %.0f s\n",
               r->cpu, r->over50us, r->over500us, r->over5ms, r->longest / 1e6, r->lost / 1e6, seconds);
    }
    return 0;
}
