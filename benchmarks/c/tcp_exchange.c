/*
 * The floor under every allreduce over loopback TCP on this host: two processes, one pinned to
 * each of two CPUs, exchange S bytes both ways over one 127.0.0.1 connection (TCP_NODELAY,
 * non-blocking, both sides spinning on write/read as rdma4j's TCP provider and Open MPI's TCP BTL
 * do) and nothing else: no headers, no matching, no reduction. A 2-rank allreduce of S bytes costs
 * at least one such exchange of S bytes (recursive doubling) or two of S/2 (ring, halving and
 * doubling) unless it overlaps the two. Prints, per size, the mean time of one exchange in the
 * fastest of R blocks of n (the rule allreduce-perf and mpi_allreduce_bench report by), and the
 * slowest block's mean. With -C, both ends of the connection run that congestion control
 * (TCP_CONGESTION) instead of the host's default.
 *
 *   cc -O2 -o tcp_exchange tcp_exchange.c
 *   ./tcp_exchange [-b 8] [-e 4M] [-f 2] [-n 100] [-w 20] [-R 3] [-c "0 1"] [-C reno]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static long parse_size(const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    switch (*end) {
        case 'K': v <<= 10; break;
        case 'M': v <<= 20; break;
        case 'G': v <<= 30; break;
        case '\0': break;
        default: fprintf(stderr, "bad size %s\n", s); exit(2);
    }
    return v;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

/* One exchange: writes and reads what the socket takes until both directions moved {@code n} bytes. */
static void exchange(int fd, const char *out, char *in, long n) {
    long w = 0, r = 0;
    while (w < n || r < n) {
        if (w < n) {
            ssize_t k = write(fd, out + w, n - w);
            if (k > 0) {
                w += k;
            } else if (k < 0 && errno != EAGAIN) {
                die("write");
            }
        }
        if (r < n) {
            ssize_t k = read(fd, in + r, n - r);
            if (k > 0) {
                r += k;
            } else if (k == 0) {
                fprintf(stderr, "peer closed\n");
                exit(1);
            } else if (errno != EAGAIN) {
                die("read");
            }
        }
    }
}

int main(int argc, char **argv) {
    long min = 8, max = 4L << 20;
    int factor = 2, iters = 100, warm = 20, repeats = 3, cpu[2] = {0, 1};
    const char *congestion = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "b:e:f:n:w:R:c:C:")) != -1) {
        switch (opt) {
            case 'b': min = parse_size(optarg); break;
            case 'e': max = parse_size(optarg); break;
            case 'f': factor = atoi(optarg); break;
            case 'n': iters = atoi(optarg); break;
            case 'w': warm = atoi(optarg); break;
            case 'R': repeats = atoi(optarg); break;
            case 'c':
                if (sscanf(optarg, "%d %d", &cpu[0], &cpu[1]) != 2) {
                    fprintf(stderr, "-c takes two CPU numbers\n");
                    return 2;
                }
                break;
            case 'C': congestion = optarg; break;
            default:
                fprintf(stderr, "usage: %s [-b min] [-e max] [-f factor] [-n iters] [-w warmup] [-R blocks] [-c \"cpuA cpuB\"] [-C congestion-control]\n", argv[0]);
                return 2;
        }
    }
    if (min < 1 || max < min || factor < 2 || iters < 1 || warm < 0 || repeats < 1) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (listener < 0 || bind(listener, (void *)&addr, sizeof addr) || listen(listener, 1)
            || getsockname(listener, (void *)&addr, &len)) {
        die("listen");
    }
    pid_t child = fork();
    if (child < 0) {
        die("fork");
    }
    int side = child == 0;
    int fd;
    if (side) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (void *)&addr, sizeof addr)) {
            die("connect");
        }
    } else if ((fd = accept(listener, NULL, NULL)) < 0) {
        die("accept");
    }
    close(listener);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu[side], &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        die("sched_setaffinity");
    }
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) || fcntl(fd, F_SETFL, O_NONBLOCK)) {
        die("socket options");
    }
    if (congestion && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion, strlen(congestion))) {
        die("TCP_CONGESTION");
    }
    char *out = malloc(max), *in = malloc(max);
    if (!out || !in) {
        die("malloc");
    }
    memset(out, side + 1, max);
    memset(in, 0, max);
    if (!side) {
        printf("# loopback TCP exchange, both ways at once, CPUs %d and %d, congestion control %s; time of one exchange (us)\n",
               cpu[0], cpu[1], congestion ? congestion : "the host's default");
        printf("# %10s %12s %12s\n", "size (B)", "best block", "worst block");
    }
    for (long size = min; size <= max; size *= factor) {
        for (int i = 0; i < warm; i++) {
            exchange(fd, out, in, size);
        }
        double best = 1e300, worst = 0;
        for (int b = 0; b < repeats; b++) {
            double t0 = now_us();
            for (int i = 0; i < iters; i++) {
                exchange(fd, out, in, size);
            }
            double mean = (now_us() - t0) / iters;
            best = mean < best ? mean : best;
            worst = mean > worst ? mean : worst;
        }
        if (in[size - 1] != (char)(2 - side)) {
            fprintf(stderr, "size %ld: wrong bytes received\n", size);
            return 1;
        }
        if (!side) {
            printf("  %10ld %12.2f %12.2f\n", size, best, worst);
            fflush(stdout);
        }
    }
    close(fd);
    if (!side) {
        int status;
        waitpid(child, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    return 0;
}
