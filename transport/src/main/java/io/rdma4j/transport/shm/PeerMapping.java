package io.rdma4j.transport.shm;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;

/**
 * This process's view of one peer's shared files: its control file (mapped when the connection
 * is made) and its slabs (mapped lazily, the first time a descriptor or clear-to-send entry
 * points into one, then cached). Also answers whether the peer process is still alive.
 */
final class PeerMapping implements AutoCloseable {
    final PeerInfo info;
    final ShmLayout layout;
    final RegionTable regions;
    private final MappedFile control;
    private final ShmFiles files;
    private final ProcessState processState;
    private MappedFile[] slabs = new MappedFile[4];
    private String[] slabNames = new String[4];

    private PeerMapping(PeerInfo info, MappedFile control, ShmLayout layout, ShmFiles files, ProcessHandle process) {
        this.info = info;
        this.control = control;
        this.layout = layout;
        this.files = files;
        this.processState = new ProcessState(process);
        this.regions = new RegionTable(control.segment(), layout);
    }

    /** Maps the control file of {@code info}'s rank, checking it is a live rank of this group. */
    static PeerMapping open(PeerInfo info, int groupSize) throws IOException {
        Optional<ProcessHandle> process = ProcessHandle.of(info.pid());
        if (process.isEmpty() || ProcessState.exited(process.get())) {
            throw new IOException("process " + info.pid() + " is not running");
        }
        ShmFiles files = new ShmFiles(Path.of(info.dir()), info.prefix());
        MappedFile control = MappedFile.open(files.control());
        try {
            ShmLayout layout = ShmLayout.readHeader(control.segment(), info.rank(), groupSize, files.control().toString());
            if (ShmLayout.pid(control.segment()) != info.pid()) {
                throw new IOException(files.control() + " belongs to pid " + ShmLayout.pid(control.segment())
                        + ", the store says " + info.pid());
            }
            return new PeerMapping(info, control, layout, files, process.get());
        } catch (IOException | RuntimeException e) {
            control.close();
            throw e;
        }
    }

    MemorySegment control() {
        return control.segment();
    }

    /** The mapping of slab {@code index}, mapped on first use. */
    MemorySegment slab(int index) throws IOException {
        if (index >= slabs.length) {
            int n = Math.max(index + 1, slabs.length * 2);
            slabs = Arrays.copyOf(slabs, n);
            slabNames = Arrays.copyOf(slabNames, n);
        }
        if (slabs[index] == null) {
            slabs[index] = MappedFile.open(files.slab(index));
            slabNames[index] = files.slabName(index);
        }
        return slabs[index].segment();
    }

    /** File name of a slab already returned by {@link #slab(int)}. */
    String slabName(int index) {
        return slabNames[index];
    }

    boolean alive() {
        return !processState.exited();
    }

    long state() {
        return ShmLayout.state(control.segment());
    }

    /** Unlinks the peer's files: used once the peer is known to be dead (it cannot do it itself). */
    int deleteFiles() {
        return files.deleteAll();
    }

    /** Unmaps everything of this peer; idempotent. */
    @Override
    public void close() {
        for (MappedFile m : slabs) {
            if (m != null) {
                m.close();
            }
        }
        control.close();
        processState.close();
    }
}
