/**
 * The shared-memory transport provider ({@link io.rdma4j.transport.shm.ShmTransport}): ranks on
 * one host, in separate processes (or threads), exchange data through files in a tmpfs directory
 * ({@code RDMA4J_SHM_DIR}, default {@code /dev/shm}) mapped into each process with
 * {@code FileChannel.map(..., Arena)}.
 *
 * <h2>Files</h2>
 * Each rank owns {@code rdma4j-<id>-n<pidns>-r<rank>-p<pid>-ctl} (header, the rank's
 * {@link io.rdma4j.transport.SharedWindow}, region table, and one inbound area per peer with its
 * rings and bounce chunks, see {@code ShmLayout})
 * and slab files {@code ...-heap<N>} from which {@code allocate()} carves remotely accessible
 * buffers. A {@link io.rdma4j.transport.RemoteBuffer} of such a buffer is
 * {@code (owner rank, offset in the slab, length, region key, slab file name)}; a peer maps the
 * slab on first use and checks every access against the owner's region table.
 *
 * <h2>Memory ordering</h2>
 * Data is copied with plain stores; what makes it visible is a release-store of the sequence
 * word of a ring entry (immediates, CTS entries, events), which the consumer polls with an
 * acquire load ({@code SpscRing}). Every ring has exactly one producer process and one
 * consumer process, so no atomic read-modify-write and no lock is ever shared between processes,
 * and a process that dies cannot leave a lock held.
 *
 * <h2>Copies</h2>
 * One-sided write/read: one copy, straight between the local buffer and the peer's slab.
 * Two-sided send/receive of up to {@code ShmConnection.EAGER_BYTES}: through the event ring, in
 * the entry that announces it (two copies of a few dozen bytes, one cache line fetched). The bound
 * is what fits in one line: with 128-byte entries, eager messages of 41-104 bytes took 1.15-1.40 us
 * one-way where 8-40 bytes took 0.39-0.49 and a 64-byte rendezvous 0.61-0.72 (p2p-perf {@code -t
 * shm --measure latency -n 100000}, 2-core VM, the builds taking turns), whichever line the
 * sender wrote first; two ring entries per message did no better. Measure again before moving it.
 * Larger, into an {@code allocate()}d buffer (or a slice of one passed to
 * {@code register()}): one copy, the sender writes into the receiver's buffer. Into private
 * memory from {@code register()}: two copies through the receiver's bounce chunks, pipelined
 * between sender and receiver. Use shared buffers as receive targets on hot paths.
 *
 * <h2>Faults and cleanup</h2>
 * Peers' liveness comes from their pid (published in the store and in the control file) and
 * the state word in their control file (closed, aborted); see
 * {@code ShmConnection}. The rule that keeps the shm directory clean, also after crashes, is on
 * {@link io.rdma4j.transport.shm.ShmTransport}.
 */
package io.rdma4j.transport.shm;
