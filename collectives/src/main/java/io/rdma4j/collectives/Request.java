package io.rdma4j.collectives;

import java.lang.foreign.MemorySegment;
import java.util.function.BooleanSupplier;

/**
 * One collective call as the user issued it, before any check: what {@link IssueOrder} queues
 * and {@link CollectiveCalls#execute} runs. A communicator reuses one for its synchronous calls;
 * an asynchronous call keeps its own until it ran.
 */
final class Request {
    /** Every call a communicator issues; the name is the one its {@link Work} reports. */
    enum Kind {
        ALL_REDUCE("allReduce"),
        REDUCE_SCATTER("reduceScatter"),
        ALL_GATHER("allGather"),
        BROADCAST("broadcast"),
        REDUCE("reduce"),
        BARRIER("barrier"),
        ALL_TO_ALL("allToAll"),
        SEND("send"),
        RECV("recv");

        final String apiName;

        Kind(String apiName) {
            this.apiName = apiName;
        }
    }

    /** {@link #root} of a call that has none. */
    static final int NO_ROOT = -1;

    Kind kind;
    MemorySegment send;
    MemorySegment recv;
    long count;
    DataType type;
    ReduceOp op;
    /** The root, or for {@link Kind#SEND}/{@link Kind#RECV} the peer. */
    int root;
    /** An allreduce's forced algorithm, or null for the policy's choice. */
    Algorithm algorithm;
    /**
     * An allreduce's readiness condition, or null: its input is complete once this holds, and the
     * call waits for it after taking its sequence number ({@link GradientBucketer#markReadyWhen}).
     */
    BooleanSupplier inputReady;

    Request set(Kind kind, MemorySegment send, MemorySegment recv, long count, DataType type, ReduceOp op, int root,
                Algorithm algorithm) {
        this.kind = kind;
        this.send = send;
        this.recv = recv;
        this.count = count;
        this.type = type;
        this.op = op;
        this.root = root;
        this.algorithm = algorithm;
        this.inputReady = null;
        return this;
    }

    /** Drops the caller's segments once the call ran, so that a reused request keeps nothing alive. */
    void clear() {
        send = null;
        recv = null;
        inputReady = null;
    }
}
