package io.rdma4j.bench;

import io.rdma4j.bench.check.ElementCodec;
import io.rdma4j.bench.check.TestPattern;
import io.rdma4j.bench.launch.ExitStatus;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.collectives.Work;
import io.rdma4j.transport.bootstrap.Store;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Random;
import java.util.stream.Stream;

/**
 * {@code bin/rdma4j soak}: random collectives for a while, every result checked. Every rank
 * draws the same sequence of calls from one seed: the collective, data type, operator, element
 * count, root, in or out of place, synchronous or asynchronous, and the world or a split of it
 * (even and odd ranks, in reverse order). Inputs depend on every rank's identity, the element and
 * the call ({@link TestPattern} at an offset that changes per call), so a stale, misplaced,
 * swapped or missing contribution is caught; each rank checks its own result against values it
 * derives itself. The wrong counts are summed through the bootstrap store, not through the
 * library under test. Rank 0 reports calls, bytes, wrong elements and its heap after a GC, its
 * resident memory, open file descriptors and threads, at the start and every
 * {@code --report-seconds}, so that growth shows.
 */
public final class Soak extends CommunicatorTool {
    /** Calls between two agreements on whether to go on (rank 0's clock decides for everyone). */
    private static final int CALLS_PER_ROUND = 64;
    private static final DataType[] TYPES = DataType.values();
    private static final ReduceOp[] OPS = ReduceOp.values();
    private static final Duration AWAIT = Duration.ofMinutes(2);

    private enum Kind { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST, REDUCE, ALL_TO_ALL, BARRIER }

    private double minutes = 1;
    private long seed = 1;
    private int maxCount = 1 << 16;
    private double reportSeconds = 60;
    Soak() {
        super("soak", 4, "[--minutes M] [--seed S] [--max-count ELEMENTS] [--report-seconds S]");
    }

    public static void main(String[] args) {
        ExitStatus.exit(() -> new Soak().run(args, System.getenv(), System.out, System.err));
    }

    @Override
    void option(String name, String v) {
        switch (name) {
            case "--minutes" -> minutes = Double.parseDouble(v);
            case "--seed" -> seed = Long.parseLong(v);
            case "--max-count" -> maxCount = positive(name, v);
            case "--report-seconds" -> reportSeconds = Double.parseDouble(v);
            default -> throw new IllegalArgumentException("unknown option '" + name + "'");
        }
    }

    @Override
    void validate() {
        if (!(minutes > 0) || !(reportSeconds > 0)) {
            throw new IllegalArgumentException("need --minutes > 0 and --report-seconds > 0");
        }
    }

    /** Soaks, then sums every rank's wrong elements through the store on rank 0. */
    @Override
    int runRank(Communicator comm, Store store, PrintStream out) {
        long wrong = soak(comm, out);
        store.set("soak/wrong/" + comm.rank(), ByteBuffer.allocate(8).putLong(wrong).array());
        if (comm.rank() != 0) {
            return wrong == 0 ? ExitStatus.OK : ExitStatus.WRONG_RESULTS;
        }
        long total = 0;
        for (int r = 0; r < comm.size(); r++) {
            total += ByteBuffer.wrap(store.get("soak/wrong/" + r, AWAIT)).getLong();
        }
        out.printf("# soak: %d wrong elements on all ranks (counted through the store): %s%n", total,
                total == 0 ? "OK" : "WRONG");
        return total == 0 ? ExitStatus.OK : ExitStatus.WRONG_RESULTS;
    }

    /** Runs calls until rank 0's time is up; returns this rank's wrong elements. */
    private long soak(Communicator world, PrintStream out) {
        Communicator split = world.size() >= 2 ? world.split(world.rank() % 2, -world.rank()) : null;
        Random random = new Random(seed);
        long start = System.nanoTime();
        long end = start + (long) (minutes * 60e9);
        long nextReport = start;
        long calls = 0;
        long bytes = 0;
        long wrong = 0;
        long elements = (long) maxCount * world.size();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment send = arena.allocate(elements * 8, 64);
            MemorySegment recv = arena.allocate(elements * 8, 64);
            int[] goOn = {1};
            while (goOn[0] == 1) {
                for (int k = 0; k < CALLS_PER_ROUND; k++) {
                    Communicator comm = split != null && random.nextInt(4) == 0 ? split : world;
                    Kind kind = Kind.values()[random.nextInt(Kind.values().length)];
                    DataType type = TYPES[random.nextInt(TYPES.length)];
                    ReduceOp op = OPS[random.nextInt(OPS.length)];
                    // log-uniform: as many small calls as large ones
                    long count = Math.max(1, (long) Math.pow(maxCount, random.nextDouble()));
                    int root = random.nextInt(comm.size());
                    boolean inPlace = random.nextBoolean();
                    boolean async = random.nextInt(3) == 0;
                    long salt = random.nextInt(1 << 20);
                    wrong += call(comm, kind, type, op, count, root, inPlace, async, salt, send, recv);
                    calls++;
                    bytes += count * type.byteSize();
                }
                long now = System.nanoTime();
                if (world.rank() == 0 && now - nextReport >= 0) {
                    report(out, calls, bytes, wrong, (now - start) / 1e9);
                    nextReport = now + (long) (reportSeconds * 1e9);
                }
                goOn[0] = now - end < 0 ? 1 : 0;
                world.broadcast(goOn, 0); // one decision for every rank: all stop after the same call
            }
            if (world.rank() == 0) {
                report(out, calls, bytes, wrong, (System.nanoTime() - start) / 1e9);
            }
        } finally {
            if (split != null) {
                split.close();
            }
        }
        return wrong;
    }

    /** Runs one call and returns the wrong elements of this rank's result. */
    private static long call(Communicator c, Kind kind, DataType type, ReduceOp op, long count, int root,
                             boolean inPlace, boolean async, long salt, MemorySegment sendBuf, MemorySegment recvBuf) {
        int n = c.size();
        int me = c.rank();
        long b = type.byteSize();
        boolean reduces = kind == Kind.ALL_REDUCE || kind == Kind.REDUCE_SCATTER || kind == Kind.REDUCE;
        TestPattern p = new TestPattern(type, reduces ? op : null);
        long sendCount = switch (kind) {
            case REDUCE_SCATTER, ALL_TO_ALL -> count * n;
            default -> count;
        };
        long recvCount = switch (kind) {
            case ALL_GATHER, ALL_TO_ALL -> count * n;
            default -> count;
        };
        // in place: the layouts the API defines (reduce-scatter's receive is block `me` of its
        // send, allgather's send is block `me` of its receive); all-to-all and reduce have none
        boolean place = inPlace && kind != Kind.ALL_TO_ALL && kind != Kind.REDUCE;
        MemorySegment whole = recvBuf.asSlice(0, Math.max(sendCount, recvCount) * b);
        MemorySegment recv = place && kind == Kind.REDUCE_SCATTER ? whole.asSlice(me * count * b, count * b)
                : whole.asSlice(0, recvCount * b);
        MemorySegment send = !place ? sendBuf.asSlice(0, sendCount * b)
                : kind == Kind.REDUCE_SCATTER ? whole
                : kind == Kind.ALL_GATHER ? recv.asSlice(me * count * b, count * b)
                : recv;
        for (long i = 0; i < recvCount && !(place && kind == Kind.ALL_GATHER); i++) {
            ElementCodec.put(recv, type, i, TestPattern.SENTINEL);
        }
        for (long i = 0; i < sendCount; i++) {
            long index = kind == Kind.ALL_TO_ALL ? i : i + (kind == Kind.ALL_GATHER ? me * count : 0);
            double v = kind == Kind.BROADCAST && me != root ? TestPattern.SENTINEL : p.input(me, index + salt);
            ElementCodec.put(send, type, i, v);
        }
        Work w = null;
        switch (kind) {
            case ALL_REDUCE -> w = async ? c.allReduceAsync(send, recv, count, type, op) : sync(() -> c.allReduce(send, recv, count, type, op));
            case REDUCE_SCATTER -> w = async ? c.reduceScatterAsync(send, recv, count, type, op) : sync(() -> c.reduceScatter(send, recv, count, type, op));
            case ALL_GATHER -> w = async ? c.allGatherAsync(send, recv, count, type) : sync(() -> c.allGather(send, recv, count, type));
            case BROADCAST -> w = async ? c.broadcastAsync(send, count, type, root) : sync(() -> c.broadcast(send, count, type, root));
            case REDUCE -> w = async ? c.reduceAsync(send, recv, count, type, op, root) : sync(() -> c.reduce(send, recv, count, type, op, root));
            case ALL_TO_ALL -> w = async ? c.allToAllAsync(send, recv, count, type) : sync(() -> c.allToAll(send, recv, count, type));
            case BARRIER -> w = async ? c.barrierAsync() : sync(c::barrier);
        }
        if (w != null) {
            w.await(AWAIT);
        }
        long wrong = 0;
        switch (kind) {
            case ALL_REDUCE -> wrong = check(p, n, recv, count, i -> p.reduced(n, i + salt));
            case REDUCE -> wrong = me != root ? 0 : check(p, n, recv, count, i -> p.reduced(n, i + salt));
            case REDUCE_SCATTER -> wrong = check(p, n, recv, count, i -> p.reduced(n, me * count + i + salt));
            case ALL_GATHER -> wrong = check(p, n, recv, recvCount, i -> p.input((int) (i / count), i + salt));
            case BROADCAST -> wrong = check(p, n, send, count, i -> p.input(root, i + salt));
            case ALL_TO_ALL -> wrong = check(p, n, recv, recvCount, i -> p.input((int) (i / count), me * count + i % count + salt));
            case BARRIER -> wrong = 0;
        }
        return wrong;
    }

    private static Work sync(Runnable call) {
        call.run();
        return null;
    }

    interface Expected {
        double at(long index);
    }

    /** Elements of {@code result} that are not what {@code expected} says, the result of {@code ranks} ranks. */
    static long check(TestPattern p, int ranks, MemorySegment result, long count, Expected expected) {
        long wrong = 0;
        for (long i = 0; i < count; i++) {
            double want = ElementCodec.quantize(p.type(), expected.at(i));
            if (!p.matches(ElementCodec.get(result, p.type(), i), want, ranks)) {
                wrong++;
            }
        }
        return wrong;
    }

    private static void report(PrintStream out, long calls, long bytes, long wrong, double seconds) {
        System.gc();
        long heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        out.printf(Locale.ROOT, "# soak rank 0: %8.1f s %10d calls %10.3f GiB %6d wrong | heap %6.1f MiB rss %6.1f MiB "
                        + "fds %4d threads %3d%n", seconds, calls, bytes / (double) (1L << 30), wrong, heap / 1048576.0,
                residentKiB() / 1024.0, openFiles(), Thread.activeCount());
        out.flush();
    }

    private static long residentKiB() {
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/status"))) {
            return lines.filter(l -> l.startsWith("VmRSS:")).mapToLong(l -> Long.parseLong(l.replaceAll("\\D", "")))
                    .findFirst().orElse(-1);
        } catch (IOException e) {
            return -1;
        }
    }

    private static long openFiles() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        } catch (IOException e) {
            return -1;
        }
    }
}
