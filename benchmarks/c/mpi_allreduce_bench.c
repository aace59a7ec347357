/*
 * MPI_Allreduce timing over a range of sizes, measured the way rdma4j's allreduce-perf (and
 * nccl-tests) measure: per size, an untimed checked call, warm-ups, a barrier, N back-to-back
 * calls timed together; the per-iteration time is averaged over the ranks. float sum only.
 * Prints an nccl-tests style table and, with -o FILE, the same CSV columns as allreduce-perf.
 * With -i R, then R interleaved rounds as allreduce-perf --interleave runs them (see interleaved).
 *
 *   mpicc -O2 -o mpi_allreduce_bench mpi_allreduce_bench.c
 *   mpirun -np 4 ./mpi_allreduce_bench -b 8 -e 256M -f 2 -n 20 -w 5 -c 1 -o openmpi.csv
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <unistd.h>

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

/* Rank r's input at element i, as rdma4j's TestPattern for SUM: 1 + i mod 5 + (r & 1). */
static float input(int rank, long long i) { return (float)(1 + i % 5 + (rank & 1)); }

static float expected(int ranks, long long i) {
    float s = 0;
    for (int r = 0; r < ranks; r++) s += input(r, i);
    return s;
}

static int iters_at(int n, long long bytes, long long max_iter_bytes) {
    if (max_iter_bytes <= 0 || bytes == 0 || (long long)n * bytes <= max_iter_bytes) return n;
    long long k = max_iter_bytes / bytes;
    return k < 1 ? 1 : (int)k;
}

static const char *time_fmt(double us, char *buf) {
    if (us >= 10000) sprintf(buf, "%7.0f", us);
    else if (us >= 100) sprintf(buf, "%7.1f", us);
    else sprintf(buf, "%7.2f", us);
    return buf;
}

/* One placement of one size: returns the rank-averaged seconds per call, *wrong the summed check. */
static double measure(float *send, float *recv, long long count, int in_place, int warm, int iters, int repeats,
                      int check, long long *wrong) {
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const void *src = in_place ? MPI_IN_PLACE : send;
    float *data = in_place ? recv : send;
    long long bad = 0;
    for (long long i = 0; i < count; i++) { data[i] = input(rank, i); if (!in_place) recv[i] = 200; }
    if (check) {
        MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (long long i = 0; i < count; i++) if (recv[i] != expected(n, i)) bad++;
    }
    for (int w = 0; w < warm; w++) MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double best = 1e300, sum[2] = {0, 0};
    for (int rep = 0; rep < repeats; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int it = 0; it < iters; it++) MPI_Allreduce(src, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double local[2] = {(MPI_Wtime() - t0) / iters, (double)bad};
        MPI_Allreduce(local, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (sum[0] < best) best = sum[0];
    }
    *wrong = check ? (long long)sum[1] : -1;
    return best / n;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0, count), which it sorts. */
static double median(double *v, int count) {
    qsort(v, (size_t)count, sizeof(double), by_value);
    return count % 2 ? v[count / 2] : (v[count / 2 - 1] + v[count / 2]) / 2;
}

/*
 * allreduce-perf --interleave R: R rounds, each calling every size once in a random order (the
 * same on every rank: the generator is seeded with the round) after a 4-byte allreduce, each
 * call timed alone, then every size back to back (4 timed calls after an untimed one);
 * out-of-place. Rank 0 prints for each size, of the calls' times averaged over the ranks, the
 * mean over the rounds both ways and their ratio, then the same with the median over the rounds.
 * max(5, R / 10) uncounted rounds come first (allreduce-perf runs at least R, then until its JIT is quiet).
 */
static void interleaved(float *send, float *recv, long long *sizes, double *table_us, int k, int rounds) {
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* seconds of size s in round r: interleaved at s * rounds + r, back to back at (k + s) * rounds + r */
    size_t samples = 2 * (size_t)k * (size_t)rounds;
    double *sec = calloc(samples, sizeof(double)), *sum = calloc(samples, sizeof(double));
    int *order = malloc((size_t)k * sizeof(int));
    float scalar = 1, scalar_out;
    MPI_Barrier(MPI_COMM_WORLD);
    int warm_rounds = rounds / 10 > 5 ? rounds / 10 : 5;
    for (int round = -warm_rounds; round < rounds; round++) {
        srand((unsigned)round);
        for (int i = 0; i < k; i++) order[i] = i;
        for (int i = k - 1; i > 0; i--) {
            int j = rand() % (i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < k; i++) {
            int s = order[i];
            MPI_Allreduce(&scalar, &scalar_out, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(send, recv, (int)(sizes[s] / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t = MPI_Wtime() - t0;
            if (round >= 0) sec[(size_t)s * rounds + round] = t;
        }
        for (int i = 0; i < k; i++) {
            int s = order[i];
            MPI_Allreduce(send, recv, (int)(sizes[s] / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int c = 0; c < 4; c++) MPI_Allreduce(send, recv, (int)(sizes[s] / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t = (MPI_Wtime() - t0) / 4;
            if (round >= 0) sec[(size_t)(k + s) * rounds + round] = t;
        }
    }
    MPI_Reduce(sec, sum, (int)samples, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("# interleaved: %d rounds, every size once per round in a random order (the same on every rank),\n", rounds);
        printf("# each call after a 4-byte allreduce; each round also times every size back to back;\n");
        printf("# time per call averaged over the ranks, then its mean and its median over the rounds;\n");
        printf("# ratio = interleaved / back to back\n");
        printf("# %10s  %12s  %18s  %16s  %6s  %18s  %16s  %6s\n", "size (B)", "table (us)", "back to back (us)",
               "interleaved (us)", "ratio", "median b-to-b (us)", "median il. (us)", "ratio");
        for (int s = 0; s < k; s++) {
            double *il = sum + (size_t)s * rounds, *bb = sum + (size_t)(k + s) * rounds, il_mean = 0, bb_mean = 0;
            for (int r = 0; r < rounds; r++) {
                il[r] = il[r] / n * 1e6;
                bb[r] = bb[r] / n * 1e6;
                il_mean += il[r] / rounds;
                bb_mean += bb[r] / rounds;
            }
            double il_median = median(il, rounds), bb_median = median(bb, rounds);
            printf("  %10lld  %12.2f  %18.2f  %16.2f  %6.2f  %18.2f  %16.2f  %6.2f\n", sizes[s], table_us[s], bb_mean,
                   il_mean, il_mean / bb_mean, bb_median, il_median, il_median / bb_median);
        }
    }
    free(sec);
    free(sum);
    free(order);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long long minb = 8, maxb = 64LL << 20, max_iter_bytes = 0;
    int factor = 2, iters = 20, warm = 5, check = 1, repeats = 1, first = 0, last = 1; /* placements: 0 out, 1 in */
    int interleave_rounds = 0;
    const char *csv = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "b:e:f:n:w:c:o:B:p:R:i:h")) != -1) {
        switch (opt) {
            case 'b': minb = parse_size(optarg); break;
            case 'e': maxb = parse_size(optarg); break;
            case 'f': factor = atoi(optarg); break;
            case 'n': iters = atoi(optarg); break;
            case 'w': warm = atoi(optarg); break;
            case 'c': check = atoi(optarg); break;
            case 'o': csv = optarg; break;
            case 'B': max_iter_bytes = parse_size(optarg); break;
            case 'R': repeats = atoi(optarg); break;
            case 'i': interleave_rounds = atoi(optarg); break;
            case 'p':
                first = strcmp(optarg, "in") == 0;
                last = strcmp(optarg, "out") != 0;
                break;
            default:
                if (rank == 0)
                    fprintf(stderr, "usage: %s [-b min] [-e max] [-f factor] [-n iters] [-w warmups] [-c 0|1]"
                                    " [-B max-iter-bytes] [-R repeats] [-p out|in|both] [-i interleave-rounds] [-o csv]\n", argv[0]);
                MPI_Finalize();
                return opt == 'h' ? 0 : 2;
        }
    }
    if (factor < 2 || minb < 4 || maxb < minb || iters < 1 || repeats < 1) {
        if (rank == 0) fprintf(stderr, "need -f >= 2, -b >= 4, -e >= -b, -n >= 1, -R >= 1\n");
        MPI_Finalize();
        return 2;
    }
    long long maxcount = maxb / 4;
    float *send = aligned_alloc(4096, ((maxcount * 4 + 4095) / 4096 + 1) * 4096);
    float *recv = aligned_alloc(4096, ((maxcount * 4 + 4095) / 4096 + 1) * 4096);
    if (!send || !recv) { fprintf(stderr, "rank %d: out of memory\n", rank); MPI_Abort(MPI_COMM_WORLD, 3); }
    FILE *out = NULL;
    if (rank == 0) {
        int major, minor;
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_version(&major, &minor);
        MPI_Get_library_version(lib, &len);
        char *nl = strchr(lib, '\n');
        if (nl) *nl = '\0';
        printf("# mpi_allreduce_bench: MPI_Allreduce, %d ranks, %s\n", n, lib);
        printf("# minBytes %lld maxBytes %lld step: %d(factor) warmup iters: %d iters: %d validation: %d"
               " best of: %d\n", minb, maxb, factor, warm, iters, check, repeats);
        printf("#\n# %58s %32s\n", "out-of-place", "in-place");
        printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type",
               "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
        if (csv) {
            out = fopen(csv, "w");
            if (!out) { perror(csv); MPI_Abort(MPI_COMM_WORLD, 3); }
            fprintf(out, "system,collective,ranks,transport,dtype,op,size_bytes,count,placement,iters,time_us,"
                         "algbw_gbs,busbw_gbs,wrong,algo\n");
        }
    }
    double busbw_sum = 0;
    int busbw_n = 0;
    long long wrong_total = 0;
    double bus_factor = 2.0 * (n - 1) / n;
    long long sizes[64];
    double table_us[64];
    int k = 0;
    for (long long bytes = minb; bytes <= maxb; bytes *= factor) {
        long long count = bytes / 4;
        int it = iters_at(iters, bytes, max_iter_bytes);
        int wu = warm == 0 ? 0 : iters_at(warm, bytes, max_iter_bytes);
        double sec[2];
        long long wrong[2];
        for (int p = first; p <= last; p++) sec[p] = measure(send, recv, count, p, wu, it, repeats, check, &wrong[p]);
        if (k < 64) {
            sizes[k] = count * 4;
            table_us[k++] = sec[first] * 1e6;
        }
        if (rank == 0) {
            printf("%12lld  %12lld  %8s  %6s  %6d", count * 4, count, "float", "sum", -1);
            for (int p = 0; p < 2; p++) {
                if (p < first || p > last) {
                    printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
                    continue;
                }
                double alg = count * 4.0 / sec[p] / 1e9, bus = alg * bus_factor;
                char tb[32], wb[32];
                if (wrong[p] < 0) strcpy(wb, "N/A"); else sprintf(wb, "%lld", wrong[p]);
                printf("  %7s  %6.2f  %6.2f  %6s", time_fmt(sec[p] * 1e6, tb), alg, bus, wb);
                busbw_sum += bus;
                busbw_n++;
                if (wrong[p] > 0) wrong_total += wrong[p];
                if (out)
                    fprintf(out, "openmpi,allreduce,%d,default,float,sum,%lld,%lld,%s,%d,%.3f,%.6f,%.6f,%lld,default\n",
                            n, count * 4, count, p ? "in" : "out", it, sec[p] * 1e6, alg, bus, wrong[p]);
            }
            printf("\n");
            fflush(stdout);
            if (out) fflush(out);
        }
    }
    if (rank == 0) {
        printf("# Out of bounds values : %lld %s\n", wrong_total, check ? (wrong_total ? "FAILED" : "OK") : "(unchecked)");
        printf("# Avg bus bandwidth    : %.4f\n#\n", busbw_n ? busbw_sum / busbw_n : 0);
        if (out) fclose(out);
    }
    if (interleave_rounds > 0) interleaved(send, recv, sizes, table_us, k, interleave_rounds);
    free(send);
    free(recv);
    MPI_Finalize();
    return wrong_total ? 1 : 0;
}
