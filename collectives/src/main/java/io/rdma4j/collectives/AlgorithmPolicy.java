package io.rdma4j.collectives;

import io.rdma4j.collectives.algo.RecursiveDoublingAllReduce;
import io.rdma4j.transport.TransportConfig.Provider;

/**
 * Chooses the allreduce algorithm from the message size, the number of ranks and the topology.
 * The same inputs give the same answer on every rank (the choice is also part of the collective
 * descriptor, so ranks that disagree, e.g. because their policies differ or a per-call algorithm
 * does, fail with a mismatch; a forced RDMA4J_ALGO is rank 0's on every rank of a world).
 *
 * <ol>
 *   <li>A forced algorithm ({@code RDMA4J_ALGO} or {@link CollectiveOptions#algorithm()}) wins
 *       if it can run: {@link Algorithm#RHD} needs a power-of-two group, {@link Algorithm#TWO_HOP}
 *       needs several hosts with the same number (&gt; 1) of ranks each and a local transport,
 *       {@link Algorithm#SHARED_WINDOW} needs a shared window (world communicator on the shm provider);
 *       otherwise the rules below decide.</li>
 *   <li>Up to {@link #smallBytes} (latency-bound): {@link Algorithm#SHARED_WINDOW} when the
 *       communicator has a shared window that holds the vector (every rank on one host, shm
 *       provider: one copy in, one reduction pass, no messages, as Open MPI's shared-memory
 *       collectives; two ranks keep it up to {@link #TWO_RANK_WINDOW_BYTES}); else recursive
 *       doubling ({@link Algorithm#RHD}) on power-of-two groups (log2 n exchanges), else the
 *       double binary tree ({@link Algorithm#TREE}, about 2 log2 n hops).</li>
 *   <li>Up to {@link #recursiveDoublingBytes} on a power-of-two group without a shared window:
 *       {@link Algorithm#RHD} as recursive doubling still (log2 n exchanges of the whole vector,
 *       each message carrying the collective descriptor: no handshake of its own). That bound
 *       is the transport's ({@link #forTransport}): {@link #TCP_RECURSIVE_DOUBLING_BYTES} over
 *       TCP, {@link #smallBytes} (no extra range) elsewhere. Two ranks over TCP go on with
 *       recursive doubling on the data lanes up to {@link #TCP_TWO_RANK_DOUBLING_BYTES} ({@link
 *       #doublingBytes}).</li>
 *   <li>More than two ranks and a shared window: {@link Algorithm#SHARED_WINDOW} at any size (its sharded
 *       scheme, window-sized piece by piece: two synchronizations per piece instead of the
 *       ring's 2(n-1) steps, and no rank waits on a chain of others, which matters most when
 *       ranks outnumber cores; measured with 4 ranks on 2 cores: 1 MiB 250 us vs the ring's
 *       650, 8 MiB 3.4 ms vs 4.7, equal from 32 MiB). With two ranks the ring is faster above
 *       {@link #TWO_RANK_WINDOW_BYTES} (1 MiB: 70 us vs 107): each rank reduces half the vector
 *       as it arrives, one copy fewer than the window's copy in and copy out.</li>
 *   <li>Two hosts or more with a local transport, from {@link #twoHopBytes}:
 *       {@link Algorithm#TWO_HOP} (each byte crosses the network once per host).</li>
 *   <li>Up to {@link #treeBytes} with more than two ranks: {@link Algorithm#TREE} (pipelined,
 *       fewer hops than the ring), except on the power-of-two groups of the next rule with at most
 *       {@link #halvingDoublingOverTreeRanks} ranks (over TCP: {@link
 *       #TCP_HALVING_DOUBLING_OVER_TREE_RANKS}; none elsewhere).</li>
 *   <li>Up to {@link #halvingDoublingBytes} on a power-of-two group of more than two ranks:
 *       {@link Algorithm#RHD} as Rabenseifner's halving and doubling (the ring's bytes in
 *       2 log2 n steps instead of 2(n - 1)). That bound is the transport's too: {@link
 *       #TCP_HALVING_DOUBLING_BYTES} over TCP, none elsewhere. Two ranks over TCP take it from
 *       {@link #TCP_TWO_RANK_HALVING_BYTES} on, at any size.</li>
 *   <li>Otherwise {@link Algorithm#RING} (bandwidth-optimal).</li>
 * </ol>
 */
public final class AlgorithmPolicy {
    public static final long DEFAULT_SMALL_BYTES = 16 * 1024;
    public static final long DEFAULT_TREE_BYTES = 256 * 1024;
    public static final long DEFAULT_TWO_HOP_BYTES = 1 << 20;
    /** {@link #recursiveDoublingBytes} left to the transport: see {@link #forTransport}. */
    public static final long TRANSPORT_DEFAULT = -1;
    /**
     * Recursive doubling's bound over TCP (at most what {@link RecursiveDoublingAllReduce} carries
     * in one control slot). The TCP provider sends its messages eagerly up to this bound (its
     * {@code EAGER_BYTES}: 64 KiB and the descriptor), so each step is one crossing of the wire;
     * even when they went through a rendezvous above {@link #smallBytes}, over
     * TCP one exchange of a 32-64 KiB vector beat the ring's handshake and two steps and the
     * tree's pipeline: 2 ranks 32-61 us against 56-89 at 32 KiB, 4 ranks on 2 cores 204-313 us
     * against 340-549 at 64 KiB (the builds taking turns in 3 passes of {@code allreduce-perf -t
     * tcp -b 8K -e 128K -f 2 -n 200 -w 20 -p out}, 2 cores). Over verbs (Soft-RoCE, same
     * comparison in one guest boot) the 32 KiB exchange, a rendezvous, was slower than the ring in
     * every pass (4.7-7.8 ms against 3.4-4.9), so verbs keeps {@link #smallBytes}; shared memory
     * was not measured and keeps it too.
     */
    public static final long TCP_RECURSIVE_DOUBLING_BYTES = 64 * 1024;
    /**
     * Halving and doubling's bound over TCP. With 4 ranks on 2 cores (the ring's 6 steps each wait
     * for a rank to be scheduled, halving and doubling's 4 fewer), in three runs of passes taking
     * turns it beat the ring at 2-8 MiB in every pass (2 MiB 2.5-3.3 ms against 3.5-4.3, 8 MiB
     * 10.3-13.5 ms against 11.8-16.7), at 1 MiB in 9 of 10 (1.1-2.1 ms against 1.9-2.6), and at
     * 512 KiB in 6 of 10 (0.8-1.9 ms against 1.2-2.3, 10% less in sum), at either of the host's
     * line-latency levels; below {@link #treeBytes} the tree stays. Larger sizes were not measured
     * and keep the ring. Re-measure with {@code allreduce-perf --ranks 4 -t tcp -b 512K -e 8M -f 2
     * -n 100 -w 20 -p out}, with {@code -a rhd} and {@code -a ring} taking turns. Other transports
     * were not measured.
     */
    public static final long TCP_HALVING_DOUBLING_BYTES = 8L << 20;
    /**
     * Over TCP, power-of-two groups of up to this many ranks take halving and doubling from
     * recursive doubling on, the tree's range included. 4 ranks on 2 cores, {@code allreduce-perf
     * --ranks 4 -t tcp -b 64K -e 512K -f 2 -n 100 -w 20 -R 3 -p out} with {@code RDMA4J_ALGO} rhd
     * and tree taking turns, three passes: 128 KiB 133-137 us against 152-154, 256 KiB 227-232
     * against 253-259. With 8 ranks on those cores (one pass) the tree was faster at 128-512 KiB
     * (398 against 441 us at 128 KiB), so larger groups keep it. Re-measure the same way.
     */
    public static final int TCP_HALVING_DOUBLING_OVER_TREE_RANKS = 4;
    /**
     * Two ranks over TCP take {@link Algorithm#RHD} as recursive doubling up to this size, past
     * {@link #recursiveDoublingBytes}: one exchange of the whole vector, cut into the pipeline's
     * chunks and reduced as they arrive, instead of the ring's two exchanges of half of it. Both
     * move the same bytes, but the ring's allgather waits for its reduce-scatter to cross the
     * wire and be reduced first; one exchange pays that crossing once. With 2 ranks on 2 cores,
     * {@code allreduce-perf --ranks 2 -t tcp -b 128K -e 1M -f 2 -n 100 -w 20 -R 3 -p out}, the
     * policies taking turns in six pairs (medians): 128 KiB 92 us against the ring's 130, 256 KiB
     * 132 against 174, 512 KiB 210 against 248. At 1 MiB, once the provider's connections ran
     * Reno ({@code CongestionControl}), doubling was faster in all four pairs of {@code -b 128K -e
     * 2M} (310, 190, 196, 190 us against 383, 232, 271, 250); at 2 MiB it was no faster than
     * halving (392-400 against 392 us, two pairs of {@code -b 512K -e 4M}), and at 4 MiB slower
     * (895-948 against 777-812). Re-measure with {@code -a rhd} against {@code -a ring} and this
     * bound raised. Other transports and larger groups were not measured.
     */
    public static final long TCP_TWO_RANK_DOUBLING_BYTES = 1L << 20;
    /**
     * Two ranks over TCP take {@link Algorithm#RHD} as halving and doubling from this size on:
     * each half is exchanged chunk after chunk, reduced as it arrives, before the reduced half
     * goes back. The ring interleaves its two steps chunk by chunk, and with two ranks each
     * chunk's reduce-scatter message waits behind the previous chunk's allgather one (a single
     * tag keeps them in order), so once a half spans more than one pipeline chunk (512 KiB over
     * TCP) the ring waits where halving streams. {@code allreduce-perf --ranks 2 -t tcp -b 1M -e
     * 4M -f 2 -n 100 -w 20 -R 3 -p out}, {@code -a rhd} and {@code -a ring} taking turns on 2
     * cores, eight pairs: 2 MiB 592-700 us against 591-763 (halving faster in six); at 1 MiB, one
     * chunk per half, the ring was faster in all eight (299-376 against 322-436). Larger sizes
     * ({@code -b 4M -e 64M -n 20 -w 5}, pairs taking turns the same way): halving faster at 4 MiB
     * in four of seven pairs (1091-1404 against 1223-1527), at 8 and 16 MiB in all five (8 MiB
     * 2384-2707 against 2517-3173), at 32 MiB in three of five, and slower at 64 MiB in both of two
     * (24.3-25.6 ms against 23.1-23.9; not explained). Re-measure the same way before giving it
     * an upper bound.
     */
    public static final long TCP_TWO_RANK_HALVING_BYTES = 2L << 20;
    /**
     * Two ranks with a shared window that holds the vector take it up to this size, past {@link
     * #smallBytes}. Against the ring on 2 cores, the policies taking turns in three passes
     * ({@code allreduce-perf --ranks 2 -b 16K -e 128K -f 2 -n 200 -w 50 -R 3 -p out}): 32 KiB
     * 6.9-7.3 us against 7.9-8.4, 64 KiB 10.6-10.9 against 11.2-11.5 with the window's sharded
     * scheme (two ranks now reduce 64 KiB whole: 9.1-9.6 us against the sharded 9.7-10.1 with
     * {@code -b 32K -e 64K -n 500 -w 100}); at 128 KiB the ring was faster ({@code -a window}
     * against {@code -a ring}: 17.8-19.7 against 15.8-17.4). Between gradient buckets of up to 4
     * MiB ({@code -b 64K -e 4M -f 4 --interleave 200}), whose traffic evicts a 64 KiB call's
     * buffers, the median call was the same either way (16.1-16.5 us against 14.2-16.7).
     * Re-measure both ways before moving it.
     */
    public static final long TWO_RANK_WINDOW_BYTES = 64 * 1024;

    private final long smallBytes;
    private final long treeBytes;
    private final long twoHopBytes;
    private final long recursiveDoublingBytes;
    private final long halvingDoublingBytes;
    private final int halvingDoublingOverTreeRanks;
    private final long twoRankDoublingBytes;
    private final long twoRankHalvingBytes;

    public AlgorithmPolicy(long smallBytes, long treeBytes, long twoHopBytes) {
        this(smallBytes, treeBytes, twoHopBytes, TRANSPORT_DEFAULT);
    }

    /**
     * @param recursiveDoublingBytes the largest vector that a power-of-two group without a shared
     *                               window reduces by recursive doubling: at least {@code smallBytes},
     *                               or {@link #TRANSPORT_DEFAULT}
     */
    public AlgorithmPolicy(long smallBytes, long treeBytes, long twoHopBytes, long recursiveDoublingBytes) {
        this(smallBytes, treeBytes, twoHopBytes, recursiveDoublingBytes, 0, 0, 0, 0);
    }

    private AlgorithmPolicy(long smallBytes, long treeBytes, long twoHopBytes, long recursiveDoublingBytes,
                            long halvingDoublingBytes, int halvingDoublingOverTreeRanks, long twoRankDoublingBytes,
                            long twoRankHalvingBytes) {
        if (recursiveDoublingBytes != TRANSPORT_DEFAULT && recursiveDoublingBytes < smallBytes) {
            throw new IllegalArgumentException("recursive doubling bytes " + recursiveDoublingBytes
                    + " below small bytes " + smallBytes);
        }
        this.smallBytes = smallBytes;
        this.treeBytes = treeBytes;
        this.twoHopBytes = twoHopBytes;
        this.recursiveDoublingBytes = recursiveDoublingBytes;
        this.halvingDoublingBytes = halvingDoublingBytes;
        this.halvingDoublingOverTreeRanks = halvingDoublingOverTreeRanks;
        this.twoRankDoublingBytes = twoRankDoublingBytes;
        this.twoRankHalvingBytes = twoRankHalvingBytes;
    }

    public static AlgorithmPolicy defaults() {
        return new AlgorithmPolicy(DEFAULT_SMALL_BYTES, DEFAULT_TREE_BYTES, DEFAULT_TWO_HOP_BYTES, TRANSPORT_DEFAULT);
    }

    /**
     * This policy with the bounds it leaves to the transport filled in for {@code provider} (a
     * {@link io.rdma4j.transport.Transport#provider()} name): {@link #TCP_RECURSIVE_DOUBLING_BYTES}
     * and {@link #TCP_HALVING_DOUBLING_BYTES} on TCP, {@link #smallBytes} and none elsewhere. A
     * recursive-doubling bound set explicitly stays.
     */
    public AlgorithmPolicy forTransport(String provider) {
        boolean tcp = Provider.TCP.name().equalsIgnoreCase(provider);
        long rd = recursiveDoublingBytes != TRANSPORT_DEFAULT ? recursiveDoublingBytes
                : tcp ? Math.max(smallBytes, TCP_RECURSIVE_DOUBLING_BYTES) : smallBytes;
        return new AlgorithmPolicy(smallBytes, treeBytes, twoHopBytes, rd, tcp ? TCP_HALVING_DOUBLING_BYTES : 0,
                tcp ? TCP_HALVING_DOUBLING_OVER_TREE_RANKS : 0, tcp ? TCP_TWO_RANK_DOUBLING_BYTES : 0,
                tcp ? TCP_TWO_RANK_HALVING_BYTES : 0);
    }

    public long smallBytes() {
        return smallBytes;
    }

    public long treeBytes() {
        return treeBytes;
    }

    public long twoHopBytes() {
        return twoHopBytes;
    }

    /**
     * The largest vector that halving and doubling takes from the ring (above {@link #treeBytes},
     * and from the tree too on groups of up to {@link #halvingDoublingOverTreeRanks}); 0: none.
     */
    public long halvingDoublingBytes() {
        return halvingDoublingBytes;
    }

    /** Power-of-two groups of up to this many ranks take halving and doubling in the tree's range too; 0: none. */
    public int halvingDoublingOverTreeRanks() {
        return halvingDoublingOverTreeRanks;
    }

    /**
     * The largest vector that {@link Algorithm#RHD} reduces by recursive doubling on {@code size}
     * ranks when it runs on the data lanes (past {@link #recursiveDoubling}'s eager path): {@link
     * #TCP_TWO_RANK_DOUBLING_BYTES} for two ranks over TCP, else {@link #smallBytes}; halving and
     * doubling above.
     */
    public long doublingBytes(int size) {
        return size == 2 ? Math.max(smallBytes, twoRankDoublingBytes) : smallBytes;
    }

    /** The bound of recursive doubling; {@link #smallBytes} while it is left to a transport not yet known. */
    public long recursiveDoublingBytes() {
        return recursiveDoublingBytes == TRANSPORT_DEFAULT ? smallBytes : recursiveDoublingBytes;
    }

    /** Whether a communicator has a shared window ({@code windowBytes > 0}) that holds {@code bytes} in one piece. */
    private static boolean fits(long bytes, long windowBytes) {
        return windowBytes > 0 && bytes <= windowBytes;
    }

    static boolean powerOfTwo(int n) {
        return n > 0 && (n & (n - 1)) == 0;
    }

    /**
     * Whether {@code a} can run on a group of {@code size} ranks for {@code bytes}, given the
     * payload capacity of the communicator's shared window (0: it has none).
     */
    public static boolean runnable(Algorithm a, int size, long bytes, boolean twoHopAvailable, long windowBytes) {
        return switch (a) {
            case RING, TREE -> true;
            case RHD -> powerOfTwo(size);
            case TWO_HOP -> twoHopAvailable;
            case SHARED_WINDOW -> windowBytes > 0;
        };
    }

    /**
     * Whether an {@link Algorithm#RHD} allreduce of {@code bytes} on {@code size} ranks runs as
     * recursive doubling (log2 n eager exchanges of the whole vector: latency-bound sizes) rather
     * than Rabenseifner's halving and doubling.
     */
    public boolean recursiveDoubling(long bytes, int size) {
        return bytes <= recursiveDoublingBytes() && RecursiveDoublingAllReduce.fits(bytes, size);
    }

    /** {@link #choose(long, int, boolean, long, Algorithm)} for a communicator without a shared window. */
    public Algorithm choose(long bytes, int size, boolean twoHopAvailable, Algorithm forced) {
        return choose(bytes, size, twoHopAvailable, 0, forced);
    }

    /**
     * @param bytes           payload of the allreduce
     * @param size            ranks in the communicator
     * @param twoHopAvailable whether the communicator has a uniform multi-host topology and a
     *                        local (shared-memory) transport
     * @param windowBytes     payload capacity of the communicator's shared window, 0 if none
     * @param forced          the override, or null
     */
    public Algorithm choose(long bytes, int size, boolean twoHopAvailable, long windowBytes, Algorithm forced) {
        if (forced != null && runnable(forced, size, bytes, twoHopAvailable, windowBytes)) {
            return forced;
        }
        if (fits(bytes, windowBytes) && (bytes <= smallBytes || size == 2 && bytes <= TWO_RANK_WINDOW_BYTES)) {
            return Algorithm.SHARED_WINDOW;
        }
        if (bytes <= smallBytes) {
            return powerOfTwo(size) ? Algorithm.RHD : Algorithm.TREE;
        }
        if (windowBytes == 0 && (bytes <= recursiveDoublingBytes() && powerOfTwo(size) || bytes <= doublingBytes(size))) {
            return Algorithm.RHD;
        }
        if (size > 2 && windowBytes > 0) {
            return Algorithm.SHARED_WINDOW;
        }
        if (twoHopAvailable && bytes >= twoHopBytes) {
            return Algorithm.TWO_HOP;
        }
        if (size == 2 && twoRankHalvingBytes > 0 && bytes >= twoRankHalvingBytes) {
            return Algorithm.RHD;
        }
        boolean halvingDoubling = size > 2 && powerOfTwo(size) && bytes <= halvingDoublingBytes;
        if (halvingDoubling && size <= halvingDoublingOverTreeRanks) {
            return Algorithm.RHD;
        }
        if (size > 2 && bytes <= treeBytes) {
            return Algorithm.TREE;
        }
        return halvingDoubling ? Algorithm.RHD : Algorithm.RING;
    }
}
