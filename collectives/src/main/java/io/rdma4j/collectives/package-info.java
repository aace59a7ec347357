/**
 * Collective communication for JVM trainers: {@link io.rdma4j.collectives.Communicator} (allreduce,
 * reduce-scatter, allgather, broadcast, reduce, barrier, send/recv, all-to-all; sync and async),
 * {@link io.rdma4j.collectives.GradientBucketer} (DDP-style fusion), written once against the
 * transport contract ({@code io.rdma4j.transport}) and so running on verbs, shared memory and TCP.
 *
 * <h2>Layers</h2>
 * <ul>
 *   <li>{@code reduce}: element-wise kernels per data type and operator over MemorySegments;
 *       arithmetic semantics (bf16/fp16 rounding after every step, AVG = SUM then one division; fp16: inputs divided first, see ReduceOp)
 *       are specified on {@link io.rdma4j.collectives.reduce.Reducer}. fp32/fp64/int32/int64 run
 *       SIMD loops (Vector API) when the JVM has {@code --add-modules=jdk.incubator.vector}
 *       ({@link io.rdma4j.collectives.reduce.Simd}), scalar loops with the same results otherwise.</li>
 *   <li>{@code algo}: one class per algorithm, each a non-blocking state machine over isend/irecv:
 *       ring (reduce-scatter + allgather, chunked, pipelined, multi-channel), double binary tree,
 *       recursive doubling (eager, for small vectors) and Rabenseifner halving/doubling, two-hop
 *       hierarchical, pipelined broadcast/reduce trees, dissemination barrier, pairwise all-to-all,
 *       point-to-point; and, without messages, the allreduce through the shm provider's shared
 *       windows ({@code SharedWindowAllReduce}: whole-vector fold for small vectors, in-window
 *       reduce-scatter + allgather, larger vectors in window-sized pieces). Choice:
 *       {@link io.rdma4j.collectives.AlgorithmPolicy}, override {@code RDMA4J_ALGO}.</li>
 *   <li>{@code core}: the progress loop ({@code Engine}: the only place that waits, with back-off,
 *       abort, timeouts and the fault board), groups and tags ({@code ctx << 16 | lane}: split
 *       communicators share connections without sharing tags), registered staging, and the
 *       32-byte collective descriptor every collective exchanges with each peer it talks to
 *       before any payload moves (mismatch detection).</li>
 * </ul>
 *
 * <h2>Faults</h2>
 * A failure is attributed to a world rank ({@link io.rdma4j.collectives.CollectiveException#failedRank()}):
 * the transport names dead peers; a rank that detects a fault posts it on a fault board in the
 * bootstrap store, which every other rank reads as soon as its own collective stalls, so all
 * ranks fail with the same diagnosis; stalled ranks publish whom they wait for, so a timeout
 * names the rank at the end of the chain of waits (dead, hung, or not calling the collective).
 */
package io.rdma4j.collectives;
