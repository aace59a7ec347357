package io.rdma4j.transport.shm;

import io.rdma4j.transport.Connection;
import io.rdma4j.transport.RegisteredBuffer;
import io.rdma4j.transport.SharedWindow;
import io.rdma4j.transport.Transport;
import io.rdma4j.transport.TransportConfig;
import io.rdma4j.transport.TransportException;
import io.rdma4j.transport.bootstrap.Store;
import io.rdma4j.transport.internal.PeerEntry;
import io.rdma4j.transport.internal.RegistrationCache;
import io.rdma4j.transport.internal.RequestCompletion;
import io.rdma4j.transport.internal.TransportState;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The shared-memory provider, for ranks on one host (separate processes or threads).
 *
 * <p>Each rank creates a control file {@code <shmDir>/rdma4j-<id>-n<pidns>-r<rank>-p<pid>-ctl} (rings,
 * bounce buffers and the region table; see {@code ShmLayout}) and, on demand, slab files
 * {@code ...-heap<N>} from which {@link #allocate} carves remotely accessible buffers; it
 * publishes its pid and file prefix in the store under {@code rdma4j/shm/rank/<rank>}. A
 * connection maps the peer's control file; the peer's slabs are mapped when first targeted.
 * A one-sided write is a copy into the peer's mapping; two-sided messages follow the
 * receiver-driven protocol of {@code ShmConnection}.
 *
 * <p><b>Threads.</b> An instance is used by one thread at a time (the collectives' progress
 * thread); {@link #abort} may be called from any thread. No thread of its own runs: progress
 * happens in {@link #test}, {@link #await}, {@link Connection#pollImmediate()} and
 * {@link Connection#flush()}, each under the transport's lock (which {@link #close} takes too, so
 * a close from another thread waits for a running poll; posts do not take it, so a close must
 * still not race a post), and nothing on that path allocates.
 *
 * <p><b>Faults.</b> While progressing, every connection polls its peer's state word (closed or
 * aborted) and, on every 64th pass and at most every 10 ms, whether the peer's pid is alive; a
 * dead peer fails all pending requests to it with a {@link TransportException} naming it, and its
 * files are unlinked.
 * {@link #close} and {@link #abort} publish their state so peers fail promptly too.
 *
 * <p><b>Cleanup rule.</b> {@link #close} unmaps everything and unlinks this rank's files (a JVM
 * shutdown hook does the same if the JVM exits without closing). A rank that sees a peer die
 * unlinks the dead peer's files. A new transport unlinks every rdma4j file of its own pid
 * namespace in its directory whose pid is gone (or was reused by a process started after the file
 * was written). So nothing is left in the shm directory once any rank of a crashed job survives
 * to notice, or at the latest when the next job starts in that pid namespace ({@code ShmFiles}
 * says why other namespaces' files are left to them).
 */
public final class ShmTransport implements Transport {
    /**
     * Bounce buffer per directed pair: {@value #CHUNK_COUNT} chunks of {@value #CHUNK_BYTES}
     * bytes. With the rings below, one peer's area is about 1.1 MiB of the (sparse) control file;
     * its chunks get memory only when this rank first offers the peer a receive into private
     * memory (see {@link ShmConnection}), so a rank's file takes about 60 KiB per peer that never
     * sends that way (not N times 1.1 MiB per rank: 64 ranks would need 4.4 GiB of /dev/shm).
     */
    static final int CHUNK_COUNT = 8;
    static final long CHUNK_BYTES = 128L << 10;
    /** Per-peer ring sizes; receives beyond the CTS ring wait locally, see ShmConnection. */
    static final int CTS_RING = 256;
    static final int EVENT_RING = 512;
    static final int IMMEDIATE_RING = 1024;
    static final int REGION_CAPACITY = 4096;
    /**
     * Each rank's {@link SharedWindow}: two slots of {@link #windowSlotBytes} plus a page for the
     * slots' headers. Backed with memory when the transport is made, as the rings are: a page
     * that a full tmpfs cannot back is a SIGBUS at its first write, so a short /dev/shm fails
     * the constructor with a message instead of a collective with a crash.
     */
    static long windowBytes(int ranks) {
        return 2 * windowSlotBytes(ranks) + ShmLayout.PAGE;
    }

    /**
     * Payload room per window slot: 1 MiB up to 16 ranks, less beyond (16 MiB / ranks, at least
     * 16 KiB), so that all windows of a host together stay within 32 MiB of /dev/shm (Docker's
     * default is 64 MiB). Larger vectors go through in 1 MiB pieces, which measured faster than
     * 2 or 4 MiB ones with 4 ranks on 2 cores (2 MiB: ~610 us vs 710-1050; 8 MiB: ~3.4 ms vs
     * 4.0): a piece's input, slot and output of every rank then stay in the shared cache.
     */
    static long windowSlotBytes(int ranks) {
        return Math.clamp((16L << 20) / Math.max(1, ranks), 16L << 10, 1L << 20) & -ShmLayout.PAGE;
    }

    private final int rank;
    private final int size;
    private final Duration timeout;
    private final ShmFiles files;
    private final MappedFile control;
    private final ShmLayout layout;
    private final ShmHeap heap;
    private final RequestTable requests;
    private final RequestCompletion completion;
    private final Store store;
    private final ShmConnection[] connections;
    private final ShmConnection[] connected;
    private int connectedCount;
    private final RegistrationCache<CachedRegistration> registrations = new RegistrationCache<>(RegistrationCache.BOUNDED_ENTRIES);
    private final Thread cleanupHook;
    private final ControlLock ownerLock;
    private boolean windowTaken;

    private volatile boolean closed; // volatile: a racing close() is reported as "closed", not as a fault
    private volatile Throwable abortCause;
    private boolean abortApplied;

    /**
     * What ranks must have in common to share memory through this provider: the kernel's boot
     * id and the pid namespace (it watches each peer's process by its pid).
     */
    public static String sharedMemoryIdentity() {
        return PeerInfo.localHost();
    }

    public ShmTransport(TransportConfig config, Store store, int rank, int size) {
        if (config == null || store == null) {
            throw new IllegalArgumentException("config and store must not be null");
        }
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " outside a group of size " + size);
        }
        config.logOnce();
        this.rank = rank;
        this.size = size;
        this.store = store;
        this.timeout = config.timeout();
        Path dir = config.shmDir();
        if (!Files.isDirectory(dir) || !Files.isWritable(dir)) {
            throw new TransportException(-1, "shm: directory " + dir + " does not exist or is not writable (set RDMA4J_SHM_DIR)");
        }
        ShmFiles.reapStale(dir);

        long pid = ProcessHandle.current().pid();
        String id = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextInt());
        files = new ShmFiles(dir, ShmFiles.prefix(id, rank, pid));
        layout = new ShmLayout(rank, size, CTS_RING, EVENT_RING, IMMEDIATE_RING, CHUNK_COUNT, CHUNK_BYTES,
                REGION_CAPACITY, config.maxOutstandingRequests(), windowBytes(size));
        requests = new RequestTable(config.maxOutstandingRequests());
        completion = new RequestCompletion(requests, new RequestCompletion.Progress() {
            @Override
            public int progress() {
                return progressAll();
            }

            @Override
            public String waitingFor(int slot) {
                return connections[requests.peer[slot]].waitingFor(slot);
            }
        }, this, rank, () -> config.newIdleStrategy(size)); // every rank of this transport polls on this host
        connections = new ShmConnection[size];
        connected = new ShmConnection[size];

        control = MappedFile.create(files.control(), layout.fileSize);
        cleanupHook = new Thread(files::deleteAll, "rdma4j-shm-cleanup-r" + rank);
        ControlLock lock = null;
        try {
            lock = ControlLock.hold(files.control()); // before the header that says it is held
            // all but the bounce chunks: a chunk is written by a peer only after a receive's CTS
            // offered it, and its area's chunks get memory before this rank offers the first
            MappedFile.backWithMemory(control.segment().asSlice(0, layout.areasOffset), dir, rank,
                    () -> "the header, window and region table of its control file");
            for (int p = 0; p < size; p++) {
                if (p == rank) {
                    continue; // no connection to itself: its own area stays unused
                }
                MappedFile.backWithMemory(control.segment().asSlice(layout.area(p), layout.bounceOffset), dir, rank,
                        () -> "the rings of its control file");
            }
            layout.writeHeader(control.segment(), pid, lock.held());
            heap = new ShmHeap(this, files, new RegionTable(control.segment(), layout));
            Runtime.getRuntime().addShutdownHook(cleanupHook);
            store.set(PeerInfo.storeKey(rank),
                    new PeerInfo(rank, pid, dir.toString(), files.prefix(), PeerInfo.localHost()).toBytes());
        } catch (RuntimeException | Error e) {
            control.close();
            files.deleteAll();
            if (lock != null) {
                lock.close();
            }
            removeHook();
            throw e;
        }
        ownerLock = lock;
    }

    @Override
    public String provider() {
        return "shm";
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int size() {
        return size;
    }

    /** The directory and name prefix of this rank's files (for diagnostics and tests). */
    public Path controlFile() {
        return files.control();
    }

    @Override
    public RegisteredBuffer allocate(long bytes) {
        checkUsable();
        return heap.allocate(bytes);
    }

    @Override
    public RegisteredBuffer register(MemorySegment segment) {
        checkUsable();
        if (segment == null || !segment.isNative()) {
            throw new IllegalArgumentException("register() needs an off-heap (native) segment, got " + segment);
        }
        CachedRegistration r = registrations.get(segment);
        if (r != null && r.matches(segment)) {
            return r;
        }
        // New, or the same range of memory that is now another arena's (or a re-allocated region).
        r = new CachedRegistration(this, segment, heap.containing(segment));
        registrations.put(segment, r);
        return r;
    }

    @Override
    public Connection connection(int peer) {
        checkUsable();
        if (peer < 0 || peer >= size || peer == rank) {
            throw new IllegalArgumentException("rank " + rank + " has no connection to peer " + peer + " (group of " + size + ")");
        }
        ShmConnection c = connections[peer];
        if (c != null) {
            return c;
        }
        byte[] descriptor = PeerEntry.await(store, PeerInfo.storeKey(peer), peer, timeout, this::checkUsable,
                "its shared-memory files");
        PeerInfo info = PeerInfo.fromBytes(descriptor);
        String here = PeerInfo.localHost();
        if (info.rank() != peer) {
            throw new TransportException(peer, "shm: store entry of peer " + peer + " describes rank " + info.rank());
        }
        if (!info.host().equals(here)) {
            throw new TransportException(peer, "shm: peer " + peer + " runs on another host or pid namespace ("
                    + info.host() + ", here " + here + "); the shm provider needs all ranks on one host");
        }
        PeerMapping remote;
        try {
            remote = PeerMapping.open(info, size);
        } catch (IOException | RuntimeException e) {
            throw new TransportException(peer, "shm rank " + rank + ": cannot open the files of peer " + peer
                    + " (pid " + info.pid() + ", " + info.dir() + "/" + info.prefix() + "-*): " + e.getMessage(), e);
        }
        try {
            c = new ShmConnection(this, requests, control.segment(), layout, remote);
        } catch (RuntimeException e) {
            remote.close(); // its mapping, or every retry maps the peer's file once more
            throw new TransportException(peer, "shm rank " + rank + ": the files of peer " + peer + " (pid " + info.pid()
                    + ") describe rings this rank cannot use: " + e.getMessage(), e);
        }
        connections[peer] = c;
        connected[connectedCount++] = c;
        return c;
    }

    @Override
    public long test(long request) {
        checkNotClosed(request);
        return completion.test(request);
    }

    @Override
    public long await(long request, long timeoutNanos) {
        checkNotClosed(request);
        return completion.await(request, timeoutNanos);
    }

    /** A window in this rank's control file (see {@link SharedWindow}); the first caller gets it. */
    @Override
    public synchronized SharedWindow sharedWindow() {
        checkUsable();
        if (windowTaken) {
            return null;
        }
        windowTaken = true;
        return new ShmWindow(this, control.segment().asSlice(layout.windowOffset, layout.windowBytes), size);
    }

    @Override
    public void abort(Throwable cause) {
        if (abortCause != null) {
            return;
        }
        abortCause = cause != null ? cause : new TransportException(-1, "aborted");
        try {
            ShmLayout.setState(control.segment(), ShmLayout.STATE_ABORTED);
        } catch (IllegalStateException alreadyUnmapped) {
            // closed concurrently: peers see CLOSED instead, which fails them just the same
        }
    }

    /**
     * Takes the lock that every poll holds: a close from another thread then waits for a running
     * poll instead of unmapping memory under its copy (libc's memmove, which no arena check
     * stops), and an await that polls on afterwards finds its request failed, as closed.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            ShmLayout.setState(control.segment(), ShmLayout.STATE_CLOSED);
            for (int i = 0; i < connectedCount; i++) {
                connected[i].fail("shm transport of rank " + rank + " was closed", null);
            }
            heap.freeAll();
        } finally {
            for (int i = 0; i < connectedCount; i++) {
                connected[i].remote().close();
            }
            try {
                heap.close();
                control.close();
                files.deleteAll();
            } finally {
                ownerLock.close(); // after the files are gone: a free lock would let another namespace reap them
                removeHook();
            }
        }
    }

    // ---------------------------------------------------------------- package-private plumbing

    /** One progress round over every connection; returns the work done. */
    int progressAll() {
        if (abortCause != null) {
            applyAbort();
        }
        int work = 0;
        for (int i = 0; i < connectedCount; i++) {
            work += connected[i].progress();
        }
        return work;
    }

    void checkUsable() {
        if (closed) {
            throw new TransportException(-1, "shm transport of rank " + rank + " is closed");
        }
        Throwable cause = abortCause;
        if (cause != null) {
            applyAbort();
            // the peer the abort blamed, as the TCP provider names it
            throw new TransportException(cause instanceof TransportException te ? te.peer() : -1,
                    "shm transport of rank " + rank + " was aborted: " + cause, cause);
        }
    }

    /**
     * Refuses a closed transport, whose files are unmapped, as the other providers refuse use
     * after close; an aborted one is still readable.
     */
    void checkNotClosed() {
        if (closed) {
            throw new IllegalStateException("shm transport of rank " + rank + " is closed");
        }
    }

    /** The registration behind {@code buffer} if it is one of ours and still usable, by this thread too. */
    ShmRegistration usable(RegisteredBuffer buffer, String role) {
        if (!(buffer instanceof ShmRegistration r) || r.transport != this) {
            throw new IllegalArgumentException(role + " " + buffer + " was not registered with this shm transport (rank " + rank + ")");
        }
        String why = r.unusableReason();
        if (why != null) {
            throw new IllegalStateException(role + ": " + why);
        }
        // Refused before the call takes a request slot: it may copy the buffer at once (an eager
        // send, a message that came first, a one-sided copy), and that copy would throw.
        if (!r.segment.isAccessibleBy(Thread.currentThread())) {
            throw new IllegalArgumentException(role + ": the segment at 0x" + Long.toHexString(r.segment.address())
                    + " is memory of a confined arena of another thread than " + Thread.currentThread().getName()
                    + "; post it from that thread, or use a shared, global or automatic arena");
        }
        return r;
    }

    /** The directory of this transport's files (for messages). */
    Path directory() {
        return files.dir();
    }

    /**
     * Frees an allocated buffer. A pending request on its memory fails its connection first: the
     * bytes go back to the heap, and a later buffer there would otherwise receive (or send) that
     * request's data; and a send or receive pairs with the peer's by order, so none after it on
     * that connection could pair right. Under the lock of the polls, whose requests it fails and
     * whose copies may be using the pages it gives back.
     */
    synchronized void free(ShmBuffer buffer) {
        if (closed) {
            return;
        }
        boolean pendingOnIt = false;
        for (int s = 0; s < requests.capacity; s++) {
            MemorySegment m = requests.segment[s];
            if (requests.pending(s) && m != null && TransportState.sharesBytes(m, buffer.segment())) {
                pendingOnIt = true;
                ShmConnection c = connections[requests.peer[s]];
                TransportException unpaired = requests.closedUnderPending(s);
                if (c != null) {
                    c.drop(unpaired.getMessage(), null);
                } else {
                    requests.fail(s, unpaired);
                }
            }
        }
        // A peer may still be copying into memory that a pending request or a handed-out
        // descriptor let it target: such a buffer keeps its pages, which a late copy then
        // finds backed, rather than faulting new ones in (a SIGBUS in a peer's memmove on a
        // full tmpfs).
        heap.free(buffer, !pendingOnIt && !buffer.exposed());
    }

    // ---------------------------------------------------------------- internals

    private void checkNotClosed(long request) {
        if (closed) {
            throw new TransportException(-1, "shm transport of rank " + rank + " is closed; request " + request + " was dropped");
        }
    }

    private void applyAbort() {
        if (abortApplied) {
            return;
        }
        abortApplied = true;
        for (int i = 0; i < connectedCount; i++) {
            connected[i].fail("shm transport of rank " + rank + " was aborted: " + abortCause, abortCause);
        }
    }

    private void removeHook() {
        try {
            Runtime.getRuntime().removeShutdownHook(cleanupHook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running or about to: it only deletes files, which is what close does too
        }
    }
}
