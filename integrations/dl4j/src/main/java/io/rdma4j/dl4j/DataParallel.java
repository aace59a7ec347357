package io.rdma4j.dl4j;

import io.rdma4j.collectives.BatchAgreement;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.UnevenDataException;
import io.rdma4j.transport.RegisteredBuffer;
import org.deeplearning4j.nn.api.Model;
import org.deeplearning4j.nn.api.OptimizationAlgorithm;
import org.deeplearning4j.nn.conf.BackpropType;
import org.deeplearning4j.nn.graph.ComputationGraph;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.optimize.api.BaseTrainingListener;
import org.deeplearning4j.optimize.api.TrainingListener;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.api.DataSet;
import org.nd4j.linalg.dataset.api.MultiDataSet;
import org.nd4j.linalg.dataset.api.iterator.DataSetIterator;
import org.nd4j.linalg.dataset.api.iterator.MultiDataSetIterator;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.ToLongFunction;

/**
 * Synchronous data-parallel training of a Deeplearning4j network: every rank fits its own shard
 * of each global batch, and before the updater steps, the network's flat gradient becomes the
 * mean of all ranks' gradients (one allreduce of {@code getGradientsViewArray()} in place, zero
 * copy where ND4J's buffer allows). Every rank therefore applies the same update to the same
 * parameters and the networks stay bit-identical.
 *
 * <pre>
 * try (Communicator comm = Communicator.fromEnvironment();
 *      DataParallel dp = DataParallel.attach(comm, net)) {   // parameters and updater state from rank 0
 *     dp.fit(myShardOfTheData, epochs);                        // instead of net.fit(...)
 * }
 * </pre>
 *
 * <p>{@link #fit(DataSetIterator, int)} checks before every step that all ranks have a batch of
 * the same size ({@link UnevenDataException} on every rank otherwise). Calling the network's own
 * {@code fit} while attached also averages the gradients, but without that check: a rank that
 * runs out of data early leaves the others waiting in the allreduce until the communicator's
 * timeout names it.
 */
public final class DataParallel implements AutoCloseable {
    private final Communicator comm;
    private final Model model;
    private final Arena arena;
    private final FlatArray gradients;
    private final BatchAgreement agreement;
    private final TrainingListener listener = new BaseTrainingListener() {
        @Override
        public void onGradientCalculation(Model m) {
            if (m == model) {
                long start = System.nanoTime();
                gradients.averageAcross(comm, model.getGradientsViewArray());
                communicationNanos += System.nanoTime() - start;
            }
        }
    };
    private long steps;
    private long communicationNanos;
    private boolean closed;

    /** Attaches to an initialized network: rank 0's parameters and updater state go to every rank. */
    public static DataParallel attach(Communicator comm, MultiLayerNetwork network) {
        return new DataParallel(comm, network, true);
    }

    /** Attaches to an initialized graph: rank 0's parameters and updater state go to every rank. */
    public static DataParallel attach(Communicator comm, ComputationGraph graph) {
        return new DataParallel(comm, graph, true);
    }

    /** {@code allowZeroCopy = false} stages every array through a copy (tests of that path). */
    DataParallel(Communicator comm, Model model, boolean allowZeroCopy) {
        this.comm = Objects.requireNonNull(comm, "comm");
        this.model = Objects.requireNonNull(model, "network");
        if (model.params() == null) {
            throw new IllegalArgumentException("call init() on the network before attaching data-parallel training");
        }
        OptimizationAlgorithm algorithm = model.conf().getOptimizationAlgo();
        if (algorithm != OptimizationAlgorithm.STOCHASTIC_GRADIENT_DESCENT) {
            // a line search steps by each rank's own score: the averaged gradient alone would not
            // keep the ranks' parameters identical
            throw new IllegalArgumentException("optimizationAlgo " + algorithm + " is not data-parallel: its line search"
                    + " steps by each rank's own score, so the ranks' parameters drift apart; use"
                    + " STOCHASTIC_GRADIENT_DESCENT (DL4J's default, under every updater such as Adam)");
        }
        if (model.getGradientsViewArray() == null) { // DL4J creates it lazily, at the first fit otherwise
            switch (model) {
                case MultiLayerNetwork n -> n.initGradientsView();
                case ComputationGraph g -> g.initGradientsView();
                default -> throw new IllegalArgumentException("unsupported model " + model.getClass().getName());
            }
        }
        INDArray params = model.params();
        INDArray state = updaterState(model);
        DataType type = FlatArray.typeOf("parameters", params);
        checkSameNetworkEverywhere(type, params.length(), state == null ? 0 : state.length());
        this.agreement = new BatchAgreement(comm);
        this.arena = Arena.ofShared(); // after the checks that throw: the catch below closes it
        try {
            // the parameters and updater state are sent once: their views end with the attaching,
            // so that the verbs provider releases their registrations instead of keeping them pinned
            try (Arena attaching = Arena.ofShared()) {
                FlatArray.of("parameters", params, attaching, allowZeroCopy).broadcastFrom(comm, 0);
                if (state != null && state.length() > 0) {
                    FlatArray.of("updater state", state, attaching, allowZeroCopy).broadcastFrom(comm, 0);
                }
            }
            takeCountsFromRankZero();
            this.gradients = FlatArray.of("gradients", model.getGradientsViewArray(), arena, allowZeroCopy);
        } catch (RuntimeException e) {
            agreement.close();
            arena.close();
            throw e;
        }
        model.addListeners(listener);
    }

    /**
     * Rank 0's iteration and epoch counts: Adam's bias correction and every learning-rate
     * schedule read them, so a network resumed from a checkpoint on rank 0 beside fresh ones
     * elsewhere would otherwise step differently from the first batch on.
     */
    private void takeCountsFromRankZero() {
        try (RegisteredBuffer counts = comm.allocate(2L * Long.BYTES)) {
            MemorySegment c = counts.segment();
            switch (model) {
                case MultiLayerNetwork n -> {
                    c.setAtIndex(ValueLayout.JAVA_LONG, 0, n.getIterationCount());
                    c.setAtIndex(ValueLayout.JAVA_LONG, 1, n.getEpochCount());
                }
                case ComputationGraph g -> {
                    c.setAtIndex(ValueLayout.JAVA_LONG, 0, g.getIterationCount());
                    c.setAtIndex(ValueLayout.JAVA_LONG, 1, g.getEpochCount());
                }
                default -> throw new IllegalArgumentException("unsupported model " + model.getClass().getName());
            }
            comm.broadcast(c, 2, DataType.I64, 0);
            int iterations = (int) c.getAtIndex(ValueLayout.JAVA_LONG, 0);
            int epochs = (int) c.getAtIndex(ValueLayout.JAVA_LONG, 1);
            switch (model) {
                case MultiLayerNetwork n -> {
                    n.setIterationCount(iterations);
                    n.setEpochCount(epochs);
                }
                case ComputationGraph g -> { // the graph hands them to its layers when it fits
                    g.getConfiguration().setIterationCount(iterations);
                    g.getConfiguration().setEpochCount(epochs);
                }
                default -> throw new IllegalArgumentException("unsupported model " + model.getClass().getName());
            }
        }
    }

    private static INDArray updaterState(Model model) {
        return switch (model) {
            case MultiLayerNetwork n -> n.getUpdater(true).getStateViewArray();
            case ComputationGraph g -> g.getUpdater(true).getStateViewArray();
            default -> throw new IllegalArgumentException("unsupported model " + model.getClass().getName());
        };
    }

    /** Every rank must train the same architecture: same parameter count, type and updater state size. */
    private void checkSameNetworkEverywhere(DataType type, long params, long stateLength) {
        int n = comm.size();
        try (RegisteredBuffer mine = comm.allocate(3L * Long.BYTES);
             RegisteredBuffer all = comm.allocate(3L * Long.BYTES * n)) {
            MemorySegment m = mine.segment();
            m.setAtIndex(ValueLayout.JAVA_LONG, 0, params);
            m.setAtIndex(ValueLayout.JAVA_LONG, 1, type.code());
            m.setAtIndex(ValueLayout.JAVA_LONG, 2, stateLength);
            comm.allGather(m, all.segment(), 3, DataType.I64);
            MemorySegment a = all.segment();
            for (int r = 0; r < n; r++) {
                long p = a.getAtIndex(ValueLayout.JAVA_LONG, 3L * r);
                long t = a.getAtIndex(ValueLayout.JAVA_LONG, 3L * r + 1);
                long s = a.getAtIndex(ValueLayout.JAVA_LONG, 3L * r + 2);
                if (p != params || t != type.code() || s != stateLength) {
                    throw new IllegalStateException("the ranks' networks differ: rank " + r + " has " + p + " "
                            + DataType.fromCode((int) t) + " parameters and " + s + " updater state values, rank "
                            + comm.rank() + " has " + params + " " + type + " and " + stateLength
                            + "; every rank must build the same network");
                }
            }
        }
    }

    /** One epoch over this rank's shard. */
    public void fit(DataSetIterator shard) {
        fit(shard, 1);
    }

    /** {@code epochs} epochs over this rank's shard (reset between epochs, as the network's own fit does). */
    public void fit(DataSetIterator shard, int epochs) {
        Objects.requireNonNull(shard, "shard");
        fitEpochs(shard, shard::resetSupported, shard::reset, epochs, DataSet::numExamples,
                // passes(...) says 1 without truncated BPTT too; asked first, no arrays are made per step
                batch -> truncatedBpttSegment() == 0 ? 1
                        : passes(new INDArray[] {batch.getFeatures()}, new INDArray[] {batch.getLabels()}), batch -> {
            switch (model) {
                case MultiLayerNetwork n -> n.fit(batch);
                case ComputationGraph g -> g.fit(batch);
                default -> throw new AssertionError(model);
            }
        });
    }

    /** {@code epochs} epochs of a graph with several inputs or outputs over this rank's shard. */
    public void fit(MultiDataSetIterator shard, int epochs) {
        Objects.requireNonNull(shard, "shard");
        if (!(model instanceof ComputationGraph graph)) {
            throw new IllegalArgumentException("a MultiDataSetIterator needs a ComputationGraph; this is a "
                    + model.getClass().getSimpleName());
        }
        fitEpochs(shard, shard::resetSupported, shard::reset, epochs, batch -> batch.getFeatures(0).size(0),
                batch -> passes(batch.getFeatures(), batch.getLabels()), graph::fit);
    }

    /** The epochs of both iterator kinds: before each step the ranks agree on the batch size; no batch anywhere ends the epoch. */
    private <B> void fitEpochs(Iterator<B> shard, BooleanSupplier resetSupported, Runnable reset, int epochs,
                               ToLongFunction<B> examples, ToLongFunction<B> passes, Consumer<B> step) {
        checkEpochs(epochs);
        if (epochs > 1 && !resetSupported.getAsBoolean()) { // as the network's own fit refuses it
            throw new IllegalArgumentException(epochs + " epochs need an iterator that can reset; this one cannot"
                    + " (after the first epoch it would have nothing left)");
        }
        checkAveraging();
        for (int e = 0; e < epochs; e++) {
            if (!shard.hasNext() && resetSupported.getAsBoolean()) {
                reset.run();
            }
            // the epoch's listener calls, as the network's own fit makes them (epoch checkpoints, evaluations)
            for (TrainingListener l : listeners()) {
                l.onEpochStart(model);
            }
            while (true) {
                B batch = shard.hasNext() ? shard.next() : null;
                if (!agree(batch == null ? 0 : examples.applyAsLong(batch), batch == null ? 0 : passes.applyAsLong(batch))) {
                    break;
                }
                step.accept(batch);
                steps++;
            }
            for (TrainingListener l : listeners()) {
                l.onEpochEnd(model);
            }
            endEpoch();
        }
    }

    private boolean agree(long examples, long passes) {
        long start = System.nanoTime();
        boolean step = agreement.allHave(examples, passes, steps);
        communicationNanos += System.nanoTime() - start;
        return step;
    }

    /**
     * The gradient allreduces the network makes over a batch: one, or under truncated
     * backpropagation through time one per segment of {@code tbpttFwdLength} steps, counted as
     * DL4J 1.0.0-M2.1 counts them (its {@code doTruncatedBPTT}): a MultiLayerNetwork skips a batch
     * whose features and labels are not time series of one length; a ComputationGraph takes the
     * length of the first time series among the inputs, then the labels, skips the batch if
     * another one differs, and makes one pass when there is none.
     */
    private long passes(INDArray[] features, INDArray[] labels) {
        int segment = truncatedBpttSegment();
        if (segment == 0) {
            return 1;
        }
        long length = -1;
        if (model instanceof MultiLayerNetwork) {
            INDArray f = features[0];
            INDArray l = labels[0];
            if (f == null || l == null || f.rank() != 3 || l.rank() != 3 || f.size(2) != l.size(2)) {
                return 0;
            }
            length = f.size(2);
        } else {
            for (INDArray[] arrays : new INDArray[][] {features, labels}) {
                for (INDArray a : arrays == null ? new INDArray[0] : arrays) {
                    if (a == null || a.rank() != 3) {
                        continue;
                    }
                    if (length == -1) {
                        length = a.size(2);
                    } else if (length != a.size(2)) {
                        return 0;
                    }
                }
            }
        }
        return Math.max(0, length / segment + (length % segment != 0 ? 1 : 0));
    }

    /** The forward length of truncated BPTT's segments, or 0 when the network backpropagates whole. */
    private int truncatedBpttSegment() {
        return switch (model) {
            case MultiLayerNetwork n -> n.getLayerWiseConfigurations().getBackpropType() == BackpropType.TruncatedBPTT
                    ? n.getLayerWiseConfigurations().getTbpttFwdLength() : 0;
            case ComputationGraph g -> g.getConfiguration().getBackpropType() == BackpropType.TruncatedBPTT
                    ? g.getConfiguration().getTbpttFwdLength() : 0;
            default -> throw new AssertionError(model);
        };
    }

    /**
     * The averaging is a listener of the network: {@code setListeners} after attaching replaces
     * it, and the ranks would then train apart without any error.
     */
    private void checkAveraging() {
        if (!listeners().contains(listener)) {
            throw new IllegalStateException("the network's listeners were replaced after attaching (setListeners), "
                    + "which removed the gradient averaging: add listeners with addListeners, or set them before "
                    + "attaching");
        }
    }

    private Collection<TrainingListener> listeners() {
        Collection<TrainingListener> listeners = switch (model) {
            case MultiLayerNetwork n -> n.getListeners();
            case ComputationGraph g -> g.getListeners();
            default -> throw new AssertionError(model);
        };
        return listeners == null ? List.of() : listeners;
    }

    private int checkEpochs(int epochs) {
        if (closed) {
            throw new IllegalStateException("data-parallel training was closed");
        }
        if (epochs < 1) {
            throw new IllegalArgumentException("epochs must be at least 1, got " + epochs);
        }
        return epochs;
    }

    private void endEpoch() {
        if (model instanceof MultiLayerNetwork n) {
            n.incrementEpochCount();
        } else {
            ((ComputationGraph) model).incrementEpochCount();
        }
    }

    /** Steps taken through {@code fit} (the same on every rank). */
    public long steps() {
        return steps;
    }

    /** Time spent communicating: the gradient allreduces and the checks before each step. */
    public long communicationNanos() {
        return communicationNanos;
    }

    /** Whether the gradient allreduce works on the network's own buffer (no staging copy). */
    public boolean zeroCopy() {
        return gradients.zeroCopy();
    }

    /**
     * Detaches: the network no longer averages its gradients, and the views of its memory die, so
     * the verbs provider releases their registrations. The communicator stays open.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        Collection<TrainingListener> current = model instanceof MultiLayerNetwork n
                ? n.getListeners() : ((ComputationGraph) model).getListeners();
        List<TrainingListener> rest = new ArrayList<>(current == null ? List.of() : current);
        rest.remove(listener);
        model.setListeners(rest);
        agreement.close();
        arena.close();
    }
}
