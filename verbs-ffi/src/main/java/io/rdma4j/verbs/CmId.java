package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.verbs.ffi.RdmaCm;
import io.rdma4j.verbs.ffi.ibv_qp;
import io.rdma4j.verbs.ffi.ibv_qp_init_attr;
import io.rdma4j.verbs.ffi.rdma_cm_id;
import io.rdma4j.verbs.ffi.rdma_conn_param;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * An rdma_cm identifier ({@code struct rdma_cm_id}): an RC connection set up by IP address
 * instead of an out-of-band QP exchange. Each id has its own event channel, so the events of one
 * connection never interleave with another's, and every step waits with a timeout.
 *
 * <p>Client: {@link #create()}, {@link #resolve}, {@link #context()} + PD/CQs,
 * {@link #createQueuePair}, {@link #connect}. Server: {@link #listen}, {@link #awaitConnectRequest}
 * (returns the new id), {@link #createQueuePair} on it, {@link #accept}.
 */
@SuppressWarnings("restricted")
public final class CmId extends NativeResource {
    private final MemorySegment id;
    private final CmEventChannel channel;
    private DeviceContext context;
    private QueuePair queuePair;
    private String peer = "unconnected peer";

    private CmId(MemorySegment id, CmEventChannel channel, NativeResource parent, String description) {
        super(description, parent);
        this.id = id;
        this.channel = channel;
    }

    /** A new RC (RDMA_PS_TCP) id with its own event channel. */
    public static CmId create() {
        CmEventChannel channel = CmEventChannel.create();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = (int) CmCalls.CREATE_ID.invokeExact(errno, channel.segment(), out, MemorySegment.NULL,
                    RdmaCm.RDMA_PS_TCP());
            CmCalls.check(rc, errno, "rdma_create_id");
            return Results.own(out.get(ADDRESS, 0).reinterpret(rdma_cm_id.sizeof()), RdmaCm::rdma_destroy_id,
                    id -> new CmId(id, channel, null, "CmId"));
        } catch (Throwable t) {
            channel.close();
            throw NativeCalls.rethrow(t);
        }
    }

    /** Resolves {@code destination} to a local device and a route to it (ADDR_RESOLVED, then ROUTE_RESOLVED). */
    public CmId resolve(InetSocketAddress destination, long timeoutMillis) {
        ensureOpen();
        int t = (int) Checks.inRange("timeoutMillis", timeoutMillis, 1, Integer.MAX_VALUE);
        peer = destination.toString();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            int rc = (int) CmCalls.RESOLVE_ADDR.invokeExact(errno, id, MemorySegment.NULL,
                    SocketAddresses.toNative(destination, arena), t);
            CmCalls.check(rc, errno, "rdma_resolve_addr(" + peer + ")");
            channel.expect(RdmaCm.RDMA_CM_EVENT_ADDR_RESOLVED(), timeoutMillis, "address resolution of " + peer);
            rc = (int) CmCalls.RESOLVE_ROUTE.invokeExact(errno, id, t);
            CmCalls.check(rc, errno, "rdma_resolve_route(" + peer + ")");
            channel.expect(RdmaCm.RDMA_CM_EVENT_ROUTE_RESOLVED(), timeoutMillis, "route resolution to " + peer);
            return this;
        } catch (Throwable e) {
            throw NativeCalls.rethrow(e);
        }
    }

    /** Binds to {@code local} (port 0 = any) and listens for connection requests. */
    public CmId listen(InetSocketAddress local, int backlog) {
        ensureOpen();
        Checks.positive("backlog", backlog);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            int rc = (int) CmCalls.BIND_ADDR.invokeExact(errno, id, SocketAddresses.toNative(local, arena));
            CmCalls.check(rc, errno, "rdma_bind_addr(" + local + ")");
            rc = (int) CmCalls.LISTEN.invokeExact(errno, id, backlog);
            CmCalls.check(rc, errno, "rdma_listen(" + local + ")");
            return this;
        } catch (Throwable e) {
            throw NativeCalls.rethrow(e);
        }
    }

    /** The port this id is bound to (after {@link #listen}). */
    public int localPort() {
        return Short.toUnsignedInt(Short.reverseBytes(RdmaCm.rdma_get_src_port(segment())));
    }

    /**
     * Waits for a client's connection request; returns the id of the new connection, moved to its
     * own event channel. Create its QP, then {@link #accept} it.
     */
    public CmId awaitConnectRequest(long timeoutMillis) {
        ensureOpen();
        CmEvent e = channel.expect(RdmaCm.RDMA_CM_EVENT_CONNECT_REQUEST(), timeoutMillis,
                "a connection request on " + description());
        MemorySegment child = MemorySegment.ofAddress(e.idAddress()).reinterpret(rdma_cm_id.sizeof());
        CmEventChannel own = null;
        try (Arena arena = Arena.ofConfined()) {
            own = CmEventChannel.create();
            MemorySegment errno = Downcalls.captureState(arena);
            int rc = (int) CmCalls.MIGRATE_ID.invokeExact(errno, child, own.segment());
            CmCalls.check(rc, errno, "rdma_migrate_id");
            CmId accepted = new CmId(child, own, this, "CmId (accepted on " + description() + ")");
            accepted.peer = "client of " + description();
            return accepted;
        } catch (Throwable t) {
            if (own != null) {
                own.close();
            }
            RdmaCm.rdma_reject(child, MemorySegment.NULL, (byte) 0); // the client fails now, not at its timeout
            RdmaCm.rdma_destroy_id(child);
            throw NativeCalls.rethrow(t);
        }
    }

    /** The device the id resolved to; valid after {@link #resolve} or on an accepted id. */
    public DeviceContext context() {
        ensureOpen();
        if (context == null) {
            MemorySegment verbs = rdma_cm_id.verbs(id);
            if (verbs.equals(MemorySegment.NULL)) {
                throw new IllegalStateException(description() + " has no device yet; resolve() it first");
            }
            context = DeviceContext.borrow(verbs, this);
        }
        return context;
    }

    /**
     * Creates the id's RC QP (rdma_create_qp). rdma_cm moves it through RESET..RTS itself during
     * connect/accept, so it is not stepped by hand.
     */
    public synchronized QueuePair createQueuePair(ProtectionDomain pd, CompletionQueue sendCq, CompletionQueue recvCq,
                                                  QpCapabilities caps) {
        ensureOpen();
        if (queuePair != null) {
            throw new IllegalStateException(description() + " already has " + queuePair.description());
        }
        try (CallLease cqs = new CallLease("rdma_create_qp of " + description(), sendCq, recvCq);
             Arena arena = Arena.ofConfined()) {
            MemorySegment init = QueuePair.initAttributes(arena, QpType.RC, sendCq, recvCq, caps);
            MemorySegment errno = Downcalls.captureState(arena);
            int rc = (int) CmCalls.CREATE_QP.invokeExact(errno, id, pd.segment(), init);
            CmCalls.check(rc, errno, "rdma_create_qp(" + description() + ")");
            MemorySegment qp = rdma_cm_id.qp(id).reinterpret(ibv_qp.sizeof());
            QpCapabilities granted = QueuePair.capabilitiesOf(ibv_qp_init_attr.cap(init));
            // a QP that cannot become the child of its parents (one was closed meanwhile) is destroyed again
            queuePair = Results.own(qp, created -> destroyQp(), created -> new QueuePair(
                    "RC QueuePair " + ibv_qp.qp_num(created) + " of " + description(),
                    new NativeResource[]{this, pd, sendCq, recvCq}, created, QpType.RC,
                    granted, pd.context().dataPath(),
                    (attr, mask) -> {
                        throw new IllegalStateException("rdma_cm drives the state of " + description()
                                + "; use connect()/accept()/disconnect()");
                    },
                    this::destroyQp));
            queuePair.assumeState(QpState.INIT);
            return queuePair;
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    private int destroyQp() {
        RdmaCm.rdma_destroy_qp(id);
        return 0;
    }

    /** Client side: connects and waits for ESTABLISHED (REJECTED/UNREACHABLE fail with the reason). */
    public void connect(CmConnectionParams params, long timeoutMillis) {
        requireQp("connect");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = rdma_conn_param.allocate(arena);
            params.fill(p);
            MemorySegment errno = Downcalls.captureState(arena);
            int rc = (int) CmCalls.CONNECT.invokeExact(errno, id, p);
            CmCalls.check(rc, errno, "rdma_connect(" + peer + ")");
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
        channel.expect(RdmaCm.RDMA_CM_EVENT_ESTABLISHED(), timeoutMillis, "connection to " + peer);
        queuePair.assumeState(QpState.READY_TO_SEND);
    }

    /** Server side, on an id from {@link #awaitConnectRequest}: accepts and waits for ESTABLISHED. */
    public void accept(CmConnectionParams params, long timeoutMillis) {
        requireQp("accept");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment p = rdma_conn_param.allocate(arena);
            params.fill(p);
            MemorySegment errno = Downcalls.captureState(arena);
            int rc = (int) CmCalls.ACCEPT.invokeExact(errno, id, p);
            CmCalls.check(rc, errno, "rdma_accept(" + peer + ")");
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
        channel.expect(RdmaCm.RDMA_CM_EVENT_ESTABLISHED(), timeoutMillis, "establishment of " + description());
        queuePair.assumeState(QpState.READY_TO_SEND);
    }

    /** Disconnects and waits for this side's DISCONNECTED event. */
    public void disconnect(long timeoutMillis) {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            int rc = (int) CmCalls.DISCONNECT.invokeExact(errno, id);
            CmCalls.check(rc, errno, "rdma_disconnect(" + peer + ")");
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
        awaitDisconnect(timeoutMillis);
    }

    /** Waits until the peer disconnected (the DISCONNECTED event). */
    public void awaitDisconnect(long timeoutMillis) {
        ensureOpen();
        channel.expect(RdmaCm.RDMA_CM_EVENT_DISCONNECTED(), timeoutMillis, "disconnection from " + peer);
        if (queuePair != null) {
            queuePair.assumeState(QpState.ERROR);
        }
    }

    private void requireQp(String step) {
        ensureOpen();
        if (queuePair == null) {
            throw new IllegalStateException(step + " on " + description() + " needs its QP: call createQueuePair first");
        }
    }

    MemorySegment segment() {
        ensureOpen();
        return id;
    }

    /**
     * Closes the device context this id lent out first: refused while a call on another thread
     * still uses it, which leaves this id open too, to be closed again (marked closed, it would
     * keep the lent context as an open child and never destroy the id).
     */
    @Override
    protected void revokeAccess() {
        if (context != null) {
            context.close();
        }
    }

    @Override
    protected void release() {
        try {
            int rc = RdmaCm.rdma_destroy_id(id);
            if (rc != 0) {
                throw new VerbsException("rdma_destroy_id(" + description() + ") failed");
            }
        } finally {
            channel.close();
        }
    }
}
