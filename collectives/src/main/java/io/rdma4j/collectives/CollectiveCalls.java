package io.rdma4j.collectives;

import io.rdma4j.collectives.algo.Algorithms;
import io.rdma4j.collectives.core.Binder;
import io.rdma4j.collectives.core.Call;
import io.rdma4j.collectives.core.CollectiveKind;
import io.rdma4j.collectives.core.CollectiveOp;
import io.rdma4j.collectives.core.CommState;
import io.rdma4j.collectives.core.Group;
import io.rdma4j.collectives.reduce.Reducer;
import io.rdma4j.nativesupport.internal.BulkCopy;
import io.rdma4j.transport.SharedWindow;

import java.lang.foreign.MemorySegment;
import java.util.function.BooleanSupplier;

/**
 * Runs the collectives of one communicator, one at a time (the caller holds the engine): checks
 * the arguments, fills the reused {@link Call}, binds the caller's segments to registered memory
 * ({@link Binder}), lets {@link Algorithms} pick and prepare the algorithm and the engine drive
 * it, and copies the result out.
 */
final class CollectiveCalls {
    private final World world;
    private final Group group;
    private final CommState state;
    private final int[] members;
    private final boolean twoHop;
    private final Algorithms algos;
    private final Call call = new Call();
    private final Binder binder;
    /** Whether the current call took its sequence number and was not handed to the engine yet. */
    private boolean begun;
    /** The queued call being run, whose arguments {@link #begin} checks again (see {@link #execute}); else null. */
    private Request recheck;
    private final long[] p2pSendSeq;
    private final long[] p2pRecvSeq;

    /**
     * @param isWorld whether this is the world communicator: only a world of several ranks uses
     *                its transport's shared window (splits share the transport, so its one
     *                window, but run their own call sequence) and the two-hop hierarchy
     */
    CollectiveCalls(World world, Group group, CommState state, boolean isWorld) {
        this.world = world;
        this.group = group;
        this.state = state;
        this.members = group.worldRanks();
        this.twoHop = isWorld && world.hierarchy != null;
        SharedWindow window = isWorld && group.size() > 1 ? world.transport.sharedWindow() : null;
        this.algos = new Algorithms(world.policy, window, group, world.engine.sleepingWaits());
        this.binder = new Binder(world.transport, world.engine.staging(world.transport));
        this.p2pSendSeq = new long[group.size()];
        this.p2pRecvSeq = new long[group.size()];
    }

    private int rank() {
        return group.rank();
    }

    private int size() {
        return group.size();
    }

    /** Throws why no new call can run: closed, aborted or broken. */
    void checkUsable() {
        state.checkUsable(rank(), size());
    }

    /** The allreduce algorithm for {@code bytes}: {@code forced} (else the options' one) if it can run, else the policy's choice. */
    Algorithm algorithmFor(long bytes, Algorithm forced) {
        return world.policy.choose(bytes, size(), twoHop, algos.windowBytes(),
                forced != null ? forced : world.engine.options().algorithm());
    }

    /**
     * Runs {@code r}. {@code checkedAtIssue}: a queued call, whose arguments {@link #check} passed
     * when it was issued; they are checked again once the call took its sequence number
     * ({@link #begin}), since the other ranks are already in the call: if they fail now (its buffer
     * was freed since), the communicator breaks, as for any failure after that point, instead of
     * the calls queued behind it pairing with the others' one place off.
     */
    void execute(Request r, boolean checkedAtIssue) {
        try {
            if (checkedAtIssue) {
                recheck = r;
            } else {
                check(r.kind, r.send, r.recv, r.count, r.type, r.op, r.root);
            }
            switch (r.kind) {
                case ALL_REDUCE -> allReduce(r.send, r.recv, r.count, r.type, r.op, r.algorithm, r.inputReady);
                case REDUCE_SCATTER -> reduceScatter(r.send, r.recv, r.count, r.type, r.op);
                case ALL_GATHER -> allGather(CollectiveKind.ALL_GATHER, r.send, r.recv, r.count, r.type);
                case BROADCAST -> broadcast(r.send, r.count, r.type, r.root);
                case REDUCE -> reduce(r.send, r.recv, r.count, r.type, r.op, r.root);
                case BARRIER -> barrier();
                case ALL_TO_ALL -> allToAll(r.send, r.recv, r.count, r.type);
                case SEND, RECV -> pointToPoint(r.kind == Request.Kind.SEND, r.send, r.count, r.type, r.root);
            }
        } catch (RuntimeException e) {
            throw failedToStart(e);
        } catch (Error e) {
            throw failedToStart(e);
        } finally {
            begun = false;
            recheck = null;
        }
    }

    /** The allgather of a {@link Split}'s contributions, in place. */
    void gatherSplit(Split s) {
        MemorySegment all = s.contributions();
        try {
            allGather(CollectiveKind.SPLIT, all.asSlice(Split.fieldsPerRank() * Long.BYTES * rank(),
                    Split.fieldsPerRank() * Long.BYTES), all, Split.fieldsPerRank(), DataType.I64);
        } catch (RuntimeException e) {
            throw failedToStart(e);
        } catch (Error e) {
            throw failedToStart(e);
        } finally {
            begun = false;
        }
    }

    /**
     * {@code e} as the caller gets it. A failure between taking the call's sequence number and
     * handing the collective to the engine (registering or staging its buffers, setting up the
     * algorithm: memory a rank could not register, say) breaks the communicator and is posted,
     * as the engine does with its own: the other ranks are already in the call and would
     * otherwise wait out the timeout for a rank that never reported anything, and this rank's
     * sequence would run one ahead of theirs. Failures before the number (bad arguments) and the
     * engine's own pass unchanged. An {@link Error} there is reported the same way and rethrown
     * as it is.
     */
    private RuntimeException failedToStart(RuntimeException e) {
        return begun ? world.engine.failedToStart(state, call.identity, e) : e;
    }

    private Error failedToStart(Error e) {
        if (begun) {
            world.engine.failedToStart(state, call.identity, e);
        }
        return e;
    }

    /** @param inputReady null, or what the input waits for once the call took its number ({@link Request#inputReady}) */
    private void allReduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
                           Algorithm forced, BooleanSupplier inputReady) {
        long bytes = type.bytes(count);
        Algorithm a = algorithmFor(bytes, forced);
        Call c = begin(CollectiveKind.ALL_REDUCE, type, op, count, -1, a.ordinal());
        if (inputReady != null) { // after the number: a condition that fails breaks the call on every rank
            world.engine.awaitInput(inputReady, state, c.identity);
        }
        if (size() == 1) {
            Binder.copyIfDistinct(send, recv, bytes);
            return;
        }
        boolean bound = Algorithms.usesRegisteredBuffers(a);
        if (bound) {
            binder.bindInOut(c, send, recv, bytes, bytes, true);
            if (dividesFirst(type, op)) {
                binder.divideInputs(c, send, count, size(), true);
            }
        } else if (dividesFirst(type, op)) { // the algorithm works in the caller's segments: in place in recv
            Binder.divideInto(send, 0, recv, 0, count, type, size());
            send = recv;
        }
        drive(algos.allReduce(a, group, world.hierarchy, world.engine, c, send, recv));
        if (bound) {
            binder.finishOut(c, recv, bytes);
        }
    }

    private void reduceScatter(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op) {
        long bytes = type.bytes(count);
        long total = total(bytes);
        Call c = begin(CollectiveKind.REDUCE_SCATTER, type, op, count, -1, -1);
        if (size() == 1) {
            Binder.copyIfDistinct(send, recv, bytes);
            return;
        }
        binder.bindInOut(c, send, recv, total, bytes, true);
        if (dividesFirst(type, op)) {
            binder.divideInputs(c, send, count * size(), size(), false);
        }
        drive(algos.reduceScatter(group, world.engine, c));
        binder.finishOut(c, recv, bytes);
    }

    private void allGather(CollectiveKind kind, MemorySegment send, MemorySegment recv, long count, DataType type) {
        long bytes = type.bytes(count);
        long total = total(bytes);
        Call c = begin(kind, type, null, count, -1, -1);
        long ownOffset = bytes * rank();
        if (!Binder.sameMemoryAt(send, recv, ownOffset)) { // no slice of recv: it would be an allocation per call
            BulkCopy.copy(send, 0, recv, ownOffset, bytes);
        }
        if (size() == 1) {
            return;
        }
        // The own block is already in place, so the ring reads it from the receive buffer.
        binder.bindInOut(c, recv, recv, total, total, true);
        c.send = c.recv;
        c.sendOff = c.recvOff + bytes * rank();
        drive(algos.allGather(group, world.engine, c));
        binder.finishOut(c, recv, total);
    }

    private void broadcast(MemorySegment data, long count, DataType type, int root) {
        long bytes = type.bytes(count);
        Call c = begin(CollectiveKind.BROADCAST, type, null, count, root, -1);
        if (size() == 1) {
            return;
        }
        binder.bindInOut(c, data, data, bytes, bytes, rank() == root);
        drive(algos.broadcast(group, world.engine, c));
        if (rank() != root) {
            binder.finishOut(c, data, bytes);
        }
    }

    private void reduce(MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root) {
        long bytes = type.bytes(count);
        boolean isRoot = rank() == root;
        Call c = begin(CollectiveKind.REDUCE, type, op, count, root, -1);
        if (size() == 1) {
            Binder.copyIfDistinct(send, recv, bytes);
            return;
        }
        if (isRoot) {
            binder.bindInOut(c, send, recv, bytes, bytes, true);
        } else {
            c.send = binder.bind(send, bytes, 0, true);
            c.sendOff = 0;
            c.recv = null;
            c.recvOff = 0;
        }
        if (dividesFirst(type, op)) {
            binder.divideInputs(c, send, count, size(), isRoot);
        }
        drive(algos.reduce(group, world.engine, c));
        if (isRoot) {
            binder.finishOut(c, recv, bytes);
        }
    }

    private void barrier() {
        Call c = begin(CollectiveKind.BARRIER, null, null, 0, -1, -1);
        if (size() == 1) {
            return;
        }
        drive(algos.barrier(group, world.engine, c));
    }

    private void allToAll(MemorySegment send, MemorySegment recv, long count, DataType type) {
        long bytes = type.bytes(count);
        long total = total(bytes);
        Call c = begin(CollectiveKind.ALL_TO_ALL, type, null, count, -1, -1);
        if (size() == 1) {
            BulkCopy.copy(send, 0, recv, 0, bytes);
            return;
        }
        binder.bindInOut(c, send, recv, total, total, true);
        // the own block goes where finishOut copies from (registered scratch for a heap recv)
        BulkCopy.copy(send, bytes * rank(), c.recv.segment(), c.recvOff + bytes * rank(), bytes);
        drive(algos.allToAll(group, world.engine, c));
        binder.finishOut(c, recv, total);
    }

    private void pointToPoint(boolean isSend, MemorySegment data, long count, DataType type, int peer) {
        long bytes = type.bytes(count);
        Call c = beginPointToPoint(isSend, type, count, peer);
        binder.bindInOut(c, data, data, bytes, bytes, isSend);
        drive(algos.pointToPoint(group, world.engine, c, isSend, peer));
        if (!isSend) {
            binder.finishOut(c, data, bytes);
        }
    }

    private Call beginPointToPoint(boolean isSend, DataType type, long count, int peer) {
        checkUsable();
        long seq = isSend ? p2pSendSeq[peer]++ : p2pRecvSeq[peer]++;
        return begin(CollectiveKind.SEND_RECV, type, null, count, -1, -1, seq);
    }

    private Call begin(CollectiveKind kind, DataType type, ReduceOp op, long count, int root, int algo) {
        checkUsable();
        return begin(kind, type, op, count, root, algo, state.nextSeq());
    }

    private Call begin(CollectiveKind kind, DataType type, ReduceOp op, long count, int root, int algo, long seq) {
        begun = true;
        Call c = call;
        c.identity.set(kind, type, op, count, root, algo, seq);
        c.identity.sender = members[rank()];
        c.type = type;
        c.op = dividesFirst(type, op) ? ReduceOp.SUM : op; // the descriptor says AVG: what the caller asked
        c.reducer = type != null && c.op != null ? Reducer.of(type, c.op) : null;
        c.count = count;
        c.root = root;
        c.contributors = size();
        if (recheck != null) { // a queued call, now that it has the identity its failure is posted under
            Request r = recheck;
            recheck = null;
            check(r.kind, r.send, r.recv, r.count, r.type, r.op, r.root);
        }
        return c;
    }

    /**
     * Whether an average is a sum of inputs divided first ({@link ReduceOp#AVG}): fp16's, whose
     * sum of n inputs overflows its range (65504) n times sooner than their average does.
     */
    private static boolean dividesFirst(DataType type, ReduceOp op) {
        return op == ReduceOp.AVG && type == DataType.F16;
    }

    private void drive(CollectiveOp op) {
        begun = false; // from here the engine reports its own failures
        world.engine.drive(op, state, members);
    }

    /**
     * Refuses arguments the call cannot run with, before it takes its sequence number: on the
     * issuing thread for every call (an asynchronous one too, so that a refused call never takes a
     * place in the queue that the calls behind it would then take), and again when it runs.
     * {@code root} is the peer of a send or receive.
     */
    void check(Request.Kind kind, MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op,
               int root) {
        switch (kind) {
            case ALL_REDUCE -> {
                long bytes = checkCount(count, type);
                checkSize("allReduce send", send, bytes);
                checkReceive("allReduce recv", recv, bytes);
                checkLayout("allReduce", send, bytes, recv, bytes, 0);
                checkOp(op);
            }
            case REDUCE_SCATTER -> {
                long bytes = checkCount(count, type);
                long total = total(bytes);
                checkSize("reduceScatter send", send, total);
                checkReceive("reduceScatter recv", recv, bytes);
                checkLayout("reduceScatter", send, total, recv, bytes, bytes * rank());
                checkOp(op);
            }
            case ALL_GATHER -> {
                long bytes = checkCount(count, type);
                checkSize("allGather send", send, bytes);
                checkReceive("allGather recv", recv, total(bytes));
            }
            case BROADCAST -> {
                long bytes = checkCount(count, type);
                checkRoot(root);
                if (rank() == root) {
                    checkSize("broadcast data", send, bytes);
                } else {
                    checkReceive("broadcast data", send, bytes);
                }
            }
            case REDUCE -> {
                long bytes = checkCount(count, type);
                checkRoot(root);
                checkSize("reduce send", send, bytes);
                if (rank() == root) {
                    checkReceive("reduce recv", recv, bytes);
                    checkLayout("reduce", send, bytes, recv, bytes, 0);
                }
                checkOp(op);
            }
            case BARRIER -> {
            }
            case ALL_TO_ALL -> {
                long total = total(checkCount(count, type));
                checkSize("allToAll send", send, total);
                checkReceive("allToAll recv", recv, total);
                if (Binder.sameMemory(send, recv) || Binder.overlaps(send, recv)) {
                    throw new IllegalArgumentException("allToAll needs distinct send and receive buffers");
                }
            }
            case SEND, RECV -> {
                long bytes = checkCount(count, type);
                if (root < 0 || root >= size() || root == rank()) {
                    throw new IllegalArgumentException("peer " + root + " is not another rank of this communicator of "
                            + size());
                }
                if (kind == Request.Kind.SEND) {
                    checkSize("send data", send, bytes);
                } else {
                    checkReceive("recv data", send, bytes);
                }
            }
        }
    }

    private static long checkCount(long count, DataType type) {
        requireType(type);
        try {
            return type.bytes(count);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("count " + count + " of " + type + " is more bytes than a long holds");
        }
    }

    /** Refuses a null data type, as every call (and {@link Communicator}'s convenience overloads) does. */
    static DataType requireType(DataType type) {
        if (type == null) {
            throw new IllegalArgumentException("data type must not be null");
        }
        return type;
    }

    /** The bytes of {@code size()} blocks of {@code bytes}. */
    private long total(long bytes) {
        try {
            return Math.multiplyExact(bytes, (long) size());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(size() + " blocks of " + bytes + " bytes are more than a long holds");
        }
    }

    /**
     * Checks a buffer before the call takes its sequence number: what fails here fails this rank
     * alone, and the others never see the call.
     */
    private static void checkSize(String what, MemorySegment seg, long bytes) {
        if (seg == null) {
            throw new IllegalArgumentException(what + " buffer is null");
        }
        if (seg.byteSize() < bytes) {
            throw new IllegalArgumentException(what + " buffer holds " + seg.byteSize() + " bytes, needs " + bytes);
        }
        if (!seg.scope().isAlive()) {
            throw new IllegalStateException(what + " buffer was freed (its arena is closed)");
        }
    }

    /** {@link #checkSize} for a buffer the call writes into. */
    private static void checkReceive(String what, MemorySegment seg, long bytes) {
        checkSize(what, seg, bytes);
        if (seg.isReadOnly()) {
            throw new IllegalArgumentException(what + " buffer is read-only");
        }
    }

    /**
     * Refuses send and receive ranges that overlap other than in the call's in-place layout
     * (receive {@code inPlaceOffset} bytes into send): the algorithms would overwrite data of
     * the send buffer that they still have to read or send.
     */
    private static void checkLayout(String call, MemorySegment send, long sendBytes, MemorySegment recv, long recvBytes,
                                    long inPlaceOffset) {
        long offset = Binder.overlapOffset(send, sendBytes, recv, recvBytes);
        if (offset != Binder.DISJOINT && offset != inPlaceOffset) {
            throw new IllegalArgumentException(call + ": the receive buffer overlaps the send buffer at byte " + offset
                    + " of it; in place, it starts at byte " + inPlaceOffset + " of the send buffer, else the two "
                    + "must not overlap");
        }
        // in place, the call works in one registration of the memory, which must be writable: the
        // receive view's when it covers the send bytes (Binder takes it), else the send view's
        if (offset != Binder.DISJOINT && send.isReadOnly() && sendBytes > recvBytes) {
            throw new IllegalArgumentException(call + " in place: the send buffer is a read-only view of memory the call"
                    + " writes into; pass a writable one");
        }
    }

    private static void checkOp(ReduceOp op) {
        if (op == null) {
            throw new IllegalArgumentException("reduce op must not be null");
        }
    }

    private void checkRoot(int root) {
        if (root < 0 || root >= size()) {
            throw new IllegalArgumentException("root " + root + " outside communicator of size " + size());
        }
    }
}
