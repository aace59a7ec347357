package io.rdma4j.examples;

import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.transport.RegisteredBuffer;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * What the framework examples (DL4J, DJL) share: their options, each rank's shard of the
 * synthetic global batches, the report line, and the final comparison of every rank's parameter
 * bits on rank 0.
 *
 * <p>Options: {@code --steps N} timed steps (default 200), {@code --warmup-steps N} steps before
 * them, not timed (20), {@code --global-batch N} (256, a multiple of the rank count),
 * {@code --features N} (64), {@code --hidden N} (256), {@code --classes N} (10).
 */
public final class FrameworkExample {
    private static final long DATA_SEED = 42;

    private FrameworkExample() {
    }

    public record Options(int steps, int warmupSteps, int globalBatch, int features, int hidden, int classes) {
        public static Options parse(String[] args, int ranks) {
            for (int i = 0; i < args.length; i += 2) {
                if (!NAMES.contains(args[i])) {
                    throw new IllegalArgumentException("unknown option " + args[i] + " (" + String.join(" ", NAMES) + ")");
                }
                if (i + 1 == args.length) {
                    throw new IllegalArgumentException(args[i] + " needs a value");
                }
            }
            Options o = new Options(option(args, "--steps", 200), option(args, "--warmup-steps", 20),
                    option(args, "--global-batch", 256), option(args, "--features", 64), option(args, "--hidden", 256),
                    option(args, "--classes", 10));
            if (o.steps < 1 || o.warmupSteps < 0 || o.features < 1 || o.hidden < 1 || o.classes < 2) {
                throw new IllegalArgumentException("bad options " + o);
            }
            if (o.globalBatch < ranks || o.globalBatch % ranks != 0) {
                throw new IllegalArgumentException("--global-batch " + o.globalBatch + " is not a multiple of the " + ranks + " ranks");
            }
            return o;
        }

        /** Examples per rank and step. */
        public int rows(int ranks) {
            return globalBatch / ranks;
        }

        private static final List<String> NAMES = List.of("--steps", "--warmup-steps", "--global-batch", "--features",
                "--hidden", "--classes");

        /** The value of {@code name} (the last one given), or {@code fallback}; {@code args} are name-value pairs. */
        private static int option(String[] args, String name, int fallback) {
            int value = fallback;
            for (int i = 0; i + 1 < args.length; i += 2) {
                if (args[i].equals(name)) {
                    try {
                        value = Integer.parseInt(args[i + 1]);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException(name + " needs an integer, got '" + args[i + 1] + "'");
                    }
                }
            }
            return value;
        }
    }

    /** This rank's part of global batch {@code step}: rows x features values and rows labels. */
    public record Shard(float[] x, int[] labels) {
        public static Shard of(Options o, Communicator comm, int step) {
            int rows = o.rows(comm.size());
            float[] x = new float[rows * o.features()];
            int[] labels = new int[rows];
            new SyntheticClassification(DATA_SEED, o.features(), o.classes())
                    .fill((long) step * o.globalBatch() + (long) comm.rank() * rows, rows, x, labels);
            return new Shard(x, labels);
        }
    }

    /** Rank 0 prints the mean time per timed step and its share of communication ({@code loss}: NaN when unknown). */
    public static void report(Communicator comm, Options o, long parameters, String gradientPath, long nanos,
                              long communicationNanos, double loss) {
        if (comm.rank() == 0) {
            double stepMs = nanos / 1e6 / o.steps();
            double commMs = communicationNanos / 1e6 / o.steps();
            System.out.printf("%d steps on %d rank(s), global batch %d, %d parameters, %s gradient allreduce: "
                            + "%.3f ms per step, %.3f ms of it communication (%.0f%%)%s%n",
                    o.steps(), comm.size(), o.globalBatch(), parameters, gradientPath, stepMs, commMs,
                    100 * commMs / stepMs, Double.isNaN(loss) ? "" : String.format("; last loss %.4f", loss));
        }
    }

    /**
     * Rank 0 gathers every rank's parameter bits and compares them with its own; returns the exit
     * status (0: bit-identical on every rank, 1: a rank differs), having printed the outcome.
     */
    public static int compareParameters(Communicator comm, byte[] bits) {
        long bytes = bits.length;
        try (RegisteredBuffer send = comm.allocate(bytes); RegisteredBuffer all = comm.allocate(bytes * comm.size())) {
            MemorySegment.copy(MemorySegment.ofArray(bits), 0, send.segment(), 0, bytes);
            comm.allGather(send.segment(), all.segment(), bytes, DataType.U8);
            if (comm.rank() != 0) {
                return 0;
            }
            MemorySegment a = all.segment();
            for (int r = 1; r < comm.size(); r++) {
                if (MemorySegment.mismatch(a, 0, bytes, a, r * bytes, (r + 1) * bytes) >= 0) {
                    System.out.println("parameters DIFFER: rank " + r + "'s are not rank 0's");
                    return 1;
                }
            }
            System.out.println("parameters bit-identical across " + comm.size() + " ranks");
            return 0;
        }
    }
}
