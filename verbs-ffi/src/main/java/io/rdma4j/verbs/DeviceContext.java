package io.rdma4j.verbs;

import io.rdma4j.nativesupport.NativeResource;
import io.rdma4j.nativesupport.internal.Checks;
import io.rdma4j.nativesupport.internal.NativeCalls;
import io.rdma4j.verbs.ffi.Verbs;
import io.rdma4j.verbs.ffi.ibv_context;
import io.rdma4j.verbs.ffi.ibv_device_attr;
import io.rdma4j.verbs.ffi.ibv_gid;
import io.rdma4j.verbs.ffi.ibv_gid_entry;
import io.rdma4j.verbs.ffi.ibv_port_attr;
import io.rdma4j.verbs.ffi.verbs_context;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/** An opened RDMA device ({@code struct ibv_context}); parent of everything created on it. */
@SuppressWarnings("restricted")
public final class DeviceContext extends NativeResource {
    private final MemorySegment context;
    /** The handle that queries and the creation of objects on the device pass: revoked on close. */
    private final ScopedHandle scoped;
    private final String name;
    private final DataPathOps dataPath;
    /** verbs_context.query_port, or null when the provider predates the extended op. */
    private final MethodHandle extendedQueryPort;
    /** False for the context an rdma_cm id opened: librdmacm closes it, not us. */
    private final boolean owned;

    private DeviceContext(MemorySegment context, String name, NativeResource parent, boolean owned) {
        super("DeviceContext " + name, parent);
        this.owned = owned;
        this.context = context;
        this.scoped = new ScopedHandle(context);
        this.name = name;
        this.dataPath = new DataPathOps(context, name);
        MemorySegment vctx = verbsContextOf(context);
        this.extendedQueryPort = vctx == null ? null
                : Downcalls.plain(verbs_context.query_port(vctx), verbs_context.query_port.descriptor());
    }

    static DeviceContext open(MemorySegment device, String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment errno = Downcalls.captureState(arena);
            MemorySegment ctx = (MemorySegment) IbvCalls.OPEN_DEVICE.invokeExact(errno, device);
            ctx = Results.checkPointer(ctx, errno, "ibv_open_device(" + name + ")", ibv_context.sizeof());
            return Results.own(ctx, Verbs::ibv_close_device, h -> new DeviceContext(h, name, null, true));
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** Wraps a context librdmacm opened for {@code parent}; closing it leaves the context open. */
    static DeviceContext borrow(MemorySegment ctx, NativeResource parent) {
        MemorySegment c = ctx.reinterpret(ibv_context.sizeof());
        String name = Verbs.ibv_get_device_name(ibv_context.device(c)).getString(0);
        return new DeviceContext(c, name, parent, false);
    }

    /**
     * verbs_get_ctx_op(ctx, query_port) from verbs.h: a context whose abi_compat says "extended"
     * is the last member of a struct verbs_context, whose {@code sz} says how many of the
     * grows-up ops before it the provider filled in. Returns null when query_port is not there.
     */
    static MemorySegment verbsContextOf(MemorySegment context) {
        if (ibv_context.abi_compat(context).address() != Verbs.__VERBS_ABI_IS_EXTENDED().address()) {
            return null;
        }
        MemorySegment vctx = MemorySegment.ofAddress(context.address() - verbs_context.context$offset())
                .reinterpret(verbs_context.sizeof());
        long needed = verbs_context.sizeof() - verbs_context.query_port$offset();
        if (verbs_context.sz(vctx) < needed || verbs_context.query_port(vctx).equals(MemorySegment.NULL)) {
            return null;
        }
        return vctx;
    }

    public String name() {
        return name;
    }

    MemorySegment segment() {
        ensureOpen();
        return scoped.segment();
    }

    DataPathOps dataPath() {
        return dataPath;
    }

    /** Number of completion vectors (interrupt lines) a CQ can be bound to. */
    public int completionVectors() {
        return ibv_context.num_comp_vectors(segment());
    }

    public DeviceAttributes queryDevice() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = ibv_device_attr.allocate(arena);
            Results.checkReturn(Verbs.ibv_query_device(segment(), attr), "ibv_query_device(" + name + ")");
            return DeviceAttributes.from(attr);
        }
    }

    /**
     * The port's attributes through the provider's extended query_port with the full struct
     * size. The exported ibv_query_port symbol is the compat entry that fills only the first 48
     * bytes; it is used only when the provider has no extended op.
     */
    public PortAttributes queryPort(int port) {
        Checks.inRange("port", port, 1, 255);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = ibv_port_attr.allocate(arena);
            attr.fill((byte) 0);
            int rc = extendedQueryPort != null
                    ? (int) extendedQueryPort.invokeExact(segment(), (byte) port, attr, ibv_port_attr.sizeof())
                    : Verbs.ibv_query_port(segment(), (byte) port, attr);
            Results.checkReturn(rc, "query_port(" + name + ", port " + port + ")");
            return PortAttributes.from(port, attr);
        } catch (Throwable t) {
            throw NativeCalls.rethrow(t);
        }
    }

    /** The populated entries of the port's GID table, with their types. */
    public List<GidEntry> gidTable(int port) {
        int length = queryPort(port).gidTableLength();
        List<GidEntry> table = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment entry = ibv_gid_entry.allocate(arena);
            for (int i = 0; i < length; i++) {
                gidEntry(port, i, entry).filter(e -> !e.gid().isZero()).ifPresent(table::add);
            }
        }
        return table;
    }

    private Optional<GidEntry> gidEntry(int port, int index, MemorySegment entry) {
        int rc = Verbs._ibv_query_gid_ex(segment(), port, index, entry, 0, ibv_gid_entry.sizeof());
        if (rc == 0) {
            byte[] raw = ibv_gid.raw(ibv_gid_entry.gid(entry)).toArray(JAVA_BYTE);
            return Optional.of(new GidEntry(port, index, new Gid(raw), GidType.ofCode(ibv_gid_entry.gid_type(entry))));
        }
        if (Math.abs(rc) == Verbs.EOPNOTSUPP() || Math.abs(rc) == Verbs.ENOSYS()) {
            return legacyGidEntry(port, index, entry);
        }
        return Optional.empty(); // unpopulated entry (ENODATA / EINVAL)
    }

    /** Kernels without the GID query ioctl: ibv_query_gid for the value, sysfs for the type. */
    private Optional<GidEntry> legacyGidEntry(int port, int index, MemorySegment scratch) {
        MemorySegment gid = scratch.asSlice(0, ibv_gid.sizeof());
        if (Verbs.ibv_query_gid(segment(), (byte) port, index, gid) != 0) {
            return Optional.empty();
        }
        Path type = Path.of("/sys/class/infiniband", name, "ports", Integer.toString(port), "gid_attrs", "types",
                Integer.toString(index));
        try {
            GidType t = Files.exists(type) ? GidType.ofSysfs(Files.readString(type)) : GidType.IB;
            return Optional.of(new GidEntry(port, index, new Gid(ibv_gid.raw(gid).toArray(JAVA_BYTE)), t));
        } catch (IOException | IllegalArgumentException e) {
            return Optional.empty(); // sysfs refuses to read the type of an unpopulated entry
        }
    }

    /**
     * The GID to use for connections on {@code port} (see {@link GidEntry#preferred}).
     *
     * @throws VerbsException when the port has no usable GID (e.g. its netdev has no IP address)
     */
    public GidEntry preferredGid(int port) {
        List<GidEntry> table = gidTable(port);
        return GidEntry.preferred(table).orElseThrow(() -> new VerbsException("port " + port + " of " + name
                + " has no usable GID; on RoCE give its network interface an IP address"));
    }

    public ProtectionDomain allocateProtectionDomain() {
        return ProtectionDomain.allocate(this);
    }

    public CompletionChannel createCompletionChannel() {
        return CompletionChannel.create(this);
    }

    /**
     * A completion queue with at least {@code minEntries} entries, signalling {@code channel}
     * (may be null for a purely polled CQ) on completion vector {@code vector}.
     */
    public CompletionQueue createCompletionQueue(int minEntries, CompletionChannel channel, int vector) {
        return CompletionQueue.create(this, minEntries, channel, vector);
    }

    public CompletionQueue createCompletionQueue(int minEntries) {
        return createCompletionQueue(minEntries, null, 0);
    }

    /** A close while another thread queries the device or creates an object on it is refused. */
    @Override
    protected void revokeAccess() {
        scoped.revoke(description());
    }

    @Override
    protected void release() {
        if (owned) {
            Results.checkReturn(Verbs.ibv_close_device(context), "ibv_close_device(" + name + ")");
        }
    }
}
