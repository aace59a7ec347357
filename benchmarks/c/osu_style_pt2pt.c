/*
 * Point-to-point latency and bandwidth between ranks 0 and 1, measured as the OSU
 * micro-benchmarks do (osu_latency, osu_bw), written here from their published method:
 *  - latency: ping-pong, rank 0 sends and waits for the echo; one-way time = round trip / 2;
 *  - bandwidth: rank 0 posts a window of W non-blocking sends, rank 1 the matching receives,
 *    then rank 1 answers with a 4-byte ack; bandwidth = W * size / time per window.
 * rdma4j's p2p-perf measures its providers the same way and writes the same CSV columns.
 *
 *   mpicc -O2 -o osu_style_pt2pt osu_style_pt2pt.c
 *   mpirun -np 2 ./osu_style_pt2pt -b 1 -e 4M -f 4 -o openmpi-p2p.csv
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <unistd.h>

#define MAX_WINDOW 256

static long long parse_size(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    switch (toupper((unsigned char)*end)) {
        case 'K': v <<= 10; break;
        case 'M': v <<= 20; break;
        case 'G': v <<= 30; break;
        case '\0': break;
        default: fprintf(stderr, "bad size '%s'\n", s); MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return v;
}

/* osu's rule of thumb: many iterations for small messages, fewer for large ones. */
static int iterations(long long bytes, int small, int large) { return bytes <= 8192 ? small : large; }

static double latency_us(char *buf, long long bytes, int iters, int skip, int rank) {
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip) t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, (int)bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, (int)bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

static double bandwidth_gbs(char *buf, long long bytes, int window, int iters, int skip, int rank) {
    MPI_Request req[MAX_WINDOW];
    char ack[4];
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip) t0 = MPI_Wtime();
        if (rank == 0) {
            for (int w = 0; w < window; w++) MPI_Isend(buf, (int)bytes, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Recv(ack, 4, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int w = 0; w < window; w++) MPI_Irecv(buf, (int)bytes, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[w]);
            MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
            MPI_Send(ack, 4, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
        }
    }
    double sec = MPI_Wtime() - t0;
    return (double)bytes * window * iters / sec / 1e9;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long long minb = 1, maxb = 4LL << 20;
    int factor = 2, window = 64, small = 10000, large = 200;
    const char *csv = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "b:e:f:W:n:N:o:h")) != -1) {
        switch (opt) {
            case 'b': minb = parse_size(optarg); break;
            case 'e': maxb = parse_size(optarg); break;
            case 'f': factor = atoi(optarg); break;
            case 'W': window = atoi(optarg); break;
            case 'n': small = atoi(optarg); break;
            case 'N': large = atoi(optarg); break;
            case 'o': csv = optarg; break;
            default:
                if (rank == 0)
                    fprintf(stderr, "usage: %s [-b min] [-e max] [-f factor] [-W window] [-n iters<=8K]"
                                    " [-N iters>8K] [-o csv]\n", argv[0]);
                MPI_Finalize();
                return opt == 'h' ? 0 : 2;
        }
    }
    if (n != 2 || factor < 2 || minb < 1 || maxb < minb || window < 1 || window > MAX_WINDOW) {
        if (rank == 0) fprintf(stderr, "need exactly 2 ranks, -f >= 2, 1 <= -b <= -e, 1 <= -W <= %d\n", MAX_WINDOW);
        MPI_Finalize();
        return 2;
    }
    char *buf = aligned_alloc(4096, ((maxb + 4095) / 4096) * 4096);
    memset(buf, 'a', maxb);
    FILE *out = NULL;
    if (rank == 0) {
        printf("# osu_style_pt2pt: 2 ranks, window %d\n# %12s %14s %16s\n", window, "size (B)", "latency (us)",
               "bandwidth (GB/s)");
        if (csv) {
            out = fopen(csv, "w");
            if (!out) { perror(csv); MPI_Abort(MPI_COMM_WORLD, 3); }
            fprintf(out, "system,transport,test,size_bytes,iters,value,unit\n");
        }
    }
    for (long long bytes = minb; bytes <= maxb; bytes *= factor) {
        int it = iterations(bytes, small, large);
        double lat = latency_us(buf, bytes, it, it / 10 + 1, rank);
        int bit = iterations(bytes, small / 10 > 0 ? small / 10 : 1, large / 10 > 0 ? large / 10 : 1);
        double bw = bandwidth_gbs(buf, bytes, window, bit, bit / 10 + 1, rank);
        if (rank == 0) {
            printf("  %12lld %14.2f %16.3f\n", bytes, lat, bw);
            fflush(stdout);
            if (out) {
                fprintf(out, "openmpi,default,latency,%lld,%d,%.4f,us\n", bytes, it, lat);
                fprintf(out, "openmpi,default,bandwidth,%lld,%d,%.6f,GB/s\n", bytes, bit, bw);
                fflush(out);
            }
        }
    }
    if (out) fclose(out);
    free(buf);
    MPI_Finalize();
    return 0;
}
