package io.rdma4j.djl;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.Trainer;
import ai.djl.training.listener.TrainingListener;
import ai.djl.util.Pair;
import io.rdma4j.collectives.BatchAgreement;
import io.rdma4j.collectives.Communicator;
import io.rdma4j.collectives.DataType;
import io.rdma4j.collectives.GradientBucketer;
import io.rdma4j.collectives.ReduceOp;
import io.rdma4j.collectives.UnevenDataException;
import io.rdma4j.transport.RegisteredBuffer;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * Synchronous data-parallel training with DJL: a {@link TrainingListener} that, after each
 * batch's backward pass and before {@code trainer.step()}, replaces every gradient by the mean of
 * all ranks' gradients ({@link GradientBucketer}, the parameters in name order, the same on every
 * rank), so every rank applies the same update to the same parameters.
 *
 * <pre>
 * try (Communicator comm = Communicator.fromEnvironment();
 *      DataParallel dp = new DataParallel(comm)) {
 *     TrainingConfig config = new DefaultTrainingConfig(loss).optOptimizer(optimizer).addTrainingListeners(dp);
 *     try (Trainer trainer = model.newTrainer(config)) {
 *         dp.initialize(trainer, inputShape);          // instead of trainer.initialize: rank 0's parameters everywhere
 *         EasyTrain.fit(trainer, epochs, myShard, null);
 *     }
 * }
 * </pre>
 *
 * <p>Before each step, and at the end of each epoch, the ranks compare their batch sizes
 * ({@link BatchAgreement}): a rank whose data ran out, or batches of different sizes, make every
 * rank throw {@link UnevenDataException} instead of leaving the others waiting. The gradients are
 * copied from the tensors into rdma4j's registered buckets and back, so the verbs provider never
 * registers memory that PyTorch owns. CPU tensors of FLOAT32 or FLOAT64 only.
 *
 * <p>Parameters without gradients are rank 0's on every rank: broadcast with the others at
 * {@link #initialize}. Those that training changes on each rank apart ({@code BatchNorm}'s
 * running mean and variance, which each rank's forward passes update from its own batches, and
 * any of type {@code OTHER}) are broadcast again after every step, as PyTorch's
 * DistributedDataParallel does with its buffers; frozen weights, biases, gammas and betas are
 * not (they do not change, and a frozen backbone would cost more than the gradients). So the
 * ranks' models stay the same model for evaluation and for whichever rank saves it.
 */
public final class DataParallel implements TrainingListener, AutoCloseable {
    private final Communicator comm;
    private final BatchAgreement agreement;
    private Trainer trainer;
    private List<Parameter> parameters;
    /** The parameters without gradients, in name order. */
    private List<Parameter> withoutGradients = List.of();
    /**
     * Those of them broadcast after every step ({@link #changesWithoutGradient}), and the
     * registered memory they go through.
     */
    private List<Parameter> buffers = List.of();
    private RegisteredBuffer bufferStaging;
    private DataType type;
    private GradientBucketer bucketer;
    private long[] gradientAddresses;
    private long steps;
    private long communicationNanos;
    private boolean closed;

    public DataParallel(Communicator comm) {
        this.comm = Objects.requireNonNull(comm, "comm");
        this.agreement = new BatchAgreement(comm);
    }

    /**
     * Initializes the trainer's parameters ({@code trainer.initialize(inputShapes)}), checks that
     * every rank has the same parameters (names, shapes, type) and copies rank 0's values to all.
     *
     * @throws IllegalArgumentException if the trainer's config does not have this listener
     */
    public void initialize(Trainer trainer, Shape... inputShapes) {
        checkOpen();
        if (this.trainer != null) {
            throw new IllegalStateException("already initialized a trainer; use one DataParallel per trainer");
        }
        boolean[] listening = {false};
        trainer.notifyListeners(l -> listening[0] |= l == this);
        if (!listening[0]) {
            // without it nothing averages the gradients and the ranks drift apart silently
            throw new IllegalArgumentException("this DataParallel is not among the trainer's listeners: add it with "
                    + "DefaultTrainingConfig.addTrainingListeners(dataParallel) before creating the trainer");
        }
        trainer.initialize(inputShapes);
        List<Parameter> params = new ArrayList<>();
        List<Parameter> withoutGradients = new ArrayList<>();
        for (Pair<String, Parameter> p : trainer.getModel().getBlock().getParameters()) {
            (p.getValue().requiresGradient() ? params : withoutGradients).add(p.getValue());
        }
        params.sort(Comparator.comparing(Parameter::getName));
        withoutGradients.sort(Comparator.comparing(Parameter::getName));
        if (params.isEmpty()) {
            throw new IllegalArgumentException("the model has no trainable parameters");
        }
        List<Parameter> all = new ArrayList<>(params);
        all.addAll(withoutGradients);
        this.type = typeOf(all);
        checkSameModelEverywhere(all);
        try (RegisteredBuffer staging = comm.allocate(bytesOf(all))) {
            broadcastFromRankZero(all, staging);
        }
        List<Parameter> state = new ArrayList<>();
        for (Parameter p : withoutGradients) {
            if (changesWithoutGradient(p)) {
                state.add(p);
            }
        }
        if (!state.isEmpty()) {
            this.bufferStaging = comm.allocate(bytesOf(state));
            this.buffers = state;
        }
        this.withoutGradients = withoutGradients;
        this.parameters = params;
        this.gradientAddresses = new long[params.size()];
        this.trainer = trainer;
    }

    private DataType typeOf(List<Parameter> params) {
        ai.djl.ndarray.types.DataType first = params.getFirst().getArray().getDataType();
        for (Parameter p : params) {
            NDArray a = p.getArray();
            if (a.getDataType() != first) {
                throw new IllegalArgumentException("parameter " + p.getName() + " is " + a.getDataType() + ", "
                        + params.getFirst().getName() + " is " + first + "; all parameters must have one type");
            }
            if (!a.getDevice().getDeviceType().equals(Device.Type.CPU)) {
                throw new IllegalArgumentException("parameter " + p.getName() + " is on " + a.getDevice()
                        + "; rdma4j's DJL integration reduces CPU tensors");
            }
        }
        return switch (first) {
            case FLOAT32 -> DataType.F32;
            case FLOAT64 -> DataType.F64;
            default -> throw new IllegalArgumentException("parameters of type " + first
                    + "; data-parallel training supports FLOAT32 and FLOAT64");
        };
    }

    /** Every rank must train the same model: same parameter names, shapes and type. */
    private void checkSameModelEverywhere(List<Parameter> params) {
        long elements = 0;
        int signature = type.code();
        for (Parameter p : params) {
            elements += p.getArray().size();
            signature = 31 * signature + p.getName().hashCode();
            signature = 31 * signature + p.getArray().getShape().hashCode();
        }
        int n = comm.size();
        try (RegisteredBuffer mine = comm.allocate(3L * Long.BYTES);
             RegisteredBuffer all = comm.allocate(3L * Long.BYTES * n)) {
            MemorySegment m = mine.segment();
            m.setAtIndex(ValueLayout.JAVA_LONG, 0, params.size());
            m.setAtIndex(ValueLayout.JAVA_LONG, 1, elements);
            m.setAtIndex(ValueLayout.JAVA_LONG, 2, signature);
            comm.allGather(m, all.segment(), 3, DataType.I64);
            for (int r = 0; r < n; r++) {
                if (MemorySegment.mismatch(m, 0, 3L * Long.BYTES, all.segment(), 3L * Long.BYTES * r,
                        3L * Long.BYTES * (r + 1)) >= 0) {
                    throw new IllegalStateException("the ranks' models differ: rank " + r + " has "
                            + all.segment().getAtIndex(ValueLayout.JAVA_LONG, 3L * r) + " parameters of "
                            + all.segment().getAtIndex(ValueLayout.JAVA_LONG, 3L * r + 1) + " elements, rank "
                            + comm.rank() + " has " + params.size() + " of " + elements
                            + " (or their names, shapes or type differ); every rank must build the same model");
                }
            }
        }
    }

    private long bytesOf(List<Parameter> params) {
        long elements = 0;
        for (Parameter p : params) {
            elements += p.getArray().size();
        }
        return elements * type.byteSize();
    }

    /**
     * Copies the parameters into {@code staging} (of {@link #bytesOf} them), broadcasts it from
     * rank 0, and copies it back into the tensors' memory (in place: {@code NDArray.set} would
     * give the tensor new storage, which PyTorch's autograd and DJL's optimizer then do not all see).
     */
    private void broadcastFromRankZero(List<Parameter> params, RegisteredBuffer staging) {
        List<MemorySegment> views = new ArrayList<>(params.size());
        for (Parameter p : params) {
            views.add(tensorMemory(p.getArray(), "parameter " + p.getName()));
        }
        MemorySegment all = staging.segment();
        long offset = 0;
        for (MemorySegment view : views) {
            MemorySegment.copy(view, 0, all, offset, view.byteSize());
            offset += view.byteSize();
        }
        comm.broadcast(all, offset / type.byteSize(), type, 0);
        offset = 0;
        for (MemorySegment view : views) {
            MemorySegment.copy(all, offset, view, 0, view.byteSize());
            offset += view.byteSize();
        }
    }

    @Override
    public void onTrainingBatch(Trainer t, BatchData batchData) {
        checkTrainer(t);
        checkTrainableUnchanged();
        agree(batchData.getBatch().getSize());
        long start = System.nanoTime();
        GradientBucketer b = bucketer();
        for (int i = 0; i < parameters.size(); i++) {
            b.markReady(i);
        }
        b.finish(comm.options().timeout());
        if (!buffers.isEmpty()) {
            broadcastFromRankZero(buffers, bufferStaging);
        }
        communicationNanos += System.nanoTime() - start;
        steps++;
    }

    /**
     * Which parameters train was fixed at {@link #initialize}: one unfrozen since would be
     * stepped with this rank's own gradient (and reset to rank 0's after each step), so the
     * ranks would train apart; one frozen since has no gradient to average.
     */
    private void checkTrainableUnchanged() {
        for (Parameter p : parameters) {
            if (!p.requiresGradient()) {
                throw trainableChanged(p, "frozen");
            }
        }
        for (Parameter p : withoutGradients) {
            if (p.requiresGradient()) {
                throw trainableChanged(p, "unfrozen");
            }
        }
    }

    /**
     * Whether a parameter without a gradient changes on each rank apart during training: not a
     * frozen weight, bias, gamma or beta, which stay as rank 0 sent them.
     */
    private static boolean changesWithoutGradient(Parameter p) {
        return switch (p.getType()) {
            case WEIGHT, BIAS, GAMMA, BETA -> false;
            default -> true;
        };
    }

    /** The names of the parameters broadcast from rank 0 after every step. */
    List<String> broadcastEachStep() {
        return buffers.stream().map(Parameter::getName).toList();
    }

    private static IllegalStateException trainableChanged(Parameter p, String how) {
        return new IllegalStateException("parameter " + p.getName() + " was " + how + " after dataParallel.initialize: "
                + "which parameters train is fixed when it initializes; freeze or unfreeze before, or start a new "
                + "trainer with a new DataParallel");
    }

    /** The epoch ended here: every other rank's epoch must end now too. */
    @Override
    public void onEpoch(Trainer t) {
        checkTrainer(t);
        agree(0);
    }

    private void agree(long examples) {
        long start = System.nanoTime();
        agreement.allHave(examples, steps);
        communicationNanos += System.nanoTime() - start;
    }

    /**
     * The bucketer over the gradient tensors' memory, in name order; built again when PyTorch
     * gave a gradient new memory (the bucketer copies from and to the tensors themselves).
     */
    private GradientBucketer bucketer() {
        int n = parameters.size();
        boolean moved = bucketer == null;
        for (int i = 0; i < n && !moved; i++) {
            try (NDArray g = parameters.get(i).getArray().getGradient()) {
                moved = gradientAddresses[i] != MemorySegment.ofBuffer(g.toByteBuffer(true)).address();
            }
        }
        if (moved) {
            if (bucketer != null) {
                bucketer.close();
                bucketer = null;
            }
            List<MemorySegment> views = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                Parameter p = parameters.get(i);
                // closing the wrapper drops a reference only: the gradient tensor lives on in its parameter
                try (NDArray g = p.getArray().getGradient(); NDArray again = p.getArray().getGradient()) {
                    MemorySegment view = tensorMemory(g, "the gradient of " + p.getName());
                    if (MemorySegment.ofBuffer(again.toByteBuffer(true)).address() != view.address()) {
                        // PyTorch has no gradient for it: DJL hands out a new zero tensor per call,
                        // which closing the wrapper frees
                        throw new IllegalStateException("parameter " + p.getName() + " got no gradient in this "
                                + "batch's backward pass (the forward pass did not use it); every trainable "
                                + "parameter must take part in every step: freeze the unused ones before "
                                + "dataParallel.initialize");
                    }
                    views.add(view);
                }
                gradientAddresses[i] = views.get(i).address();
            }
            bucketer = new GradientBucketer(comm, type, views, GradientBucketer.DEFAULT_BUCKET_BYTES, ReduceOp.AVG);
        }
        return bucketer;
    }

    /** A tensor's own memory; refuses a tensor whose bytes DJL can only hand out as a copy. */
    private static MemorySegment tensorMemory(NDArray tensor, String what) {
        ByteBuffer first = tensor.toByteBuffer(true);
        ByteBuffer second = tensor.toByteBuffer(true);
        if (!first.isDirect() || MemorySegment.ofBuffer(first).address() != MemorySegment.ofBuffer(second).address()) {
            throw new IllegalStateException(what + " is not a contiguous CPU tensor (DJL copies it out); "
                    + "rdma4j's DJL integration needs contiguous CPU tensors");
        }
        return MemorySegment.ofBuffer(first);
    }

    private void checkTrainer(Trainer t) {
        checkOpen();
        if (trainer == null) {
            throw new IllegalStateException("call dataParallel.initialize(trainer, inputShapes) instead of "
                    + "trainer.initialize(...): the ranks must start from rank 0's parameters");
        }
        if (t != trainer) {
            throw new IllegalStateException("this DataParallel belongs to another trainer");
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("data-parallel training was closed");
        }
    }

    /** Steps whose gradients were averaged (the same on every rank). */
    public long steps() {
        return steps;
    }

    /** Time spent communicating: the gradient allreduces (with their copies), the buffers' broadcasts and the batch checks. */
    public long communicationNanos() {
        return communicationNanos;
    }

    @Override
    public void onValidationBatch(Trainer t, BatchData batchData) {
    }

    @Override
    public void onTrainingBegin(Trainer t) {
    }

    @Override
    public void onTrainingEnd(Trainer t) {
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (bucketer != null) {
            bucketer.close();
        }
        if (bufferStaging != null) {
            bufferStaging.close();
        }
        agreement.close();
    }
}
