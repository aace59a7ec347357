/*
 * Cache-line handoff latency between two CPUs: two threads, one pinned to each, pass a counter
 * back and forth through one cache line for the given time; prints the mean one-way latency in
 * ns. Every shared-memory transfer (rdma4j's and Open MPI's alike) pays it. On the 2-vCPU VM the
 * results were taken on it switches between ~60 and ~170 ns for tens of seconds at a time (the
 * host moves the vCPUs between nearby and distant cores), which is why compare-mpi logs it
 * before each system's turn.
 *
 *   cc -O2 -pthread -o core_latency core_latency.c && ./core_latency 0.5 0 1
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile long line[16] __attribute__((aligned(64)));
static int cpu_b;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return sched_setaffinity(0, sizeof s, &s);
}

/* Answers every odd value with the next even one; a negative value ends it. */
static void *answer(void *unused) {
    (void)unused;
    pin(cpu_b);
    for (long want = 1;; want += 2) {
        long v;
        while ((v = __atomic_load_n(&line[0], __ATOMIC_ACQUIRE)) != want) {
            if (v < 0) {
                return NULL;
            }
        }
        __atomic_store_n(&line[0], want + 1, __ATOMIC_RELEASE);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s SECONDS CPU_A CPU_B\n", argv[0]);
        return 2;
    }
    double seconds = atof(argv[1]);
    int cpu_a = atoi(argv[2]);
    cpu_b = atoi(argv[3]);
    if (pin(cpu_a) != 0) {
        perror("sched_setaffinity");
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, answer, NULL) != 0) {
        perror("pthread_create");
        return 1;
    }
    long sent = 0;
    double start = now(), end = start;
    while (end - start < seconds) {
        for (int i = 0; i < 1024; i++) {
            __atomic_store_n(&line[0], sent + 1, __ATOMIC_RELEASE);
            while (__atomic_load_n(&line[0], __ATOMIC_ACQUIRE) != sent + 2) {
            }
            sent += 2;
        }
        end = now();
    }
    __atomic_store_n(&line[0], -1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    printf("%.0f\n", (end - start) / sent * 1e9); /* sent counts both directions */
    return 0;
}
