package io.rdma4j.transport.verbs;

import io.rdma4j.transport.TransportException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * What one side of a verbs connection publishes through the store for its peer: its QPs' numbers
 * and first PSNs, its address (GID for RoCE, LID for InfiniBand), its path MTU, the sizes that
 * fix the {@link ControlLayout}, and the address and rkey of its control region and of its
 * transport's receive-size mailbox, and where its {@link Liveness} listener is.
 *
 * @param gid 16 bytes, or null when the port is addressed by LID only
 * @param livenessHost 4 or 16 address bytes, empty when {@code livenessPort} is 0 (no listener)
 */
record ConnectionDescriptor(int rank, int[] qpNumbers, int[] psns, int lid, byte[] gid, int mtuBytes, int ctsDepth,
                            int ringSize, long controlAddress, int controlRkey, long mailboxAddress,
                            int mailboxRkey, byte[] livenessHost, int livenessPort) {
    private static final int MAGIC = 0x52_44_4D_56; // "RDMV"
    private static final int VERSION = 7;

    ConnectionDescriptor {
        if (qpNumbers.length != psns.length || qpNumbers.length == 0) {
            throw new IllegalArgumentException(qpNumbers.length + " QP numbers but " + psns.length + " PSNs");
        }
        if (gid != null && gid.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes, got " + gid.length);
        }
        qpNumbers = qpNumbers.clone();
        psns = psns.clone();
        gid = gid == null ? null : gid.clone();
        if (livenessHost.length != 0 && livenessHost.length != 4 && livenessHost.length != 16) {
            throw new IllegalArgumentException("a liveness address has 4 or 16 bytes, got " + livenessHost.length);
        }
        if (livenessPort < 0 || livenessPort > 0xFFFF || (livenessPort == 0) != (livenessHost.length == 0)) {
            throw new IllegalArgumentException("liveness port " + livenessPort + " with a " + livenessHost.length
                    + "-byte address");
        }
        livenessHost = livenessHost.clone();
    }

    int qps() {
        return qpNumbers.length;
    }

    byte[] toBytes() {
        int n = qpNumbers.length;
        ByteBuffer b = ByteBuffer.allocate(4 * 4 + 4 + 1 + 16 + 4 * 3 + 8 + 4 + 8 + 4 + 1 + livenessHost.length + 4 + 8 * n)
                .order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC).putInt(VERSION).putInt(rank).putInt(n).putInt(lid);
        b.put((byte) (gid == null ? 0 : 1)).put(gid == null ? new byte[16] : gid);
        b.putInt(mtuBytes).putInt(ctsDepth).putInt(ringSize);
        b.putLong(controlAddress).putInt(controlRkey).putLong(mailboxAddress).putInt(mailboxRkey);
        b.put((byte) livenessHost.length).put(livenessHost).putInt(livenessPort);
        for (int i = 0; i < n; i++) {
            b.putInt(qpNumbers[i]).putInt(psns[i]);
        }
        return b.array();
    }

    /** Parses a peer's descriptor; a malformed one fails naming the peer. */
    static ConnectionDescriptor fromBytes(int peer, byte[] bytes) {
        try {
            ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            if (b.getInt() != MAGIC || b.getInt() != VERSION) {
                throw new IllegalArgumentException("not a verbs connection descriptor of this rdma4j version");
            }
            int rank = b.getInt();
            int n = b.getInt();
            if (n < 1 || n > 1024) {
                throw new IllegalArgumentException(n + " queue pairs");
            }
            int lid = b.getInt();
            boolean hasGid = b.get() != 0;
            byte[] gid = new byte[16];
            b.get(gid);
            int mtu = b.getInt();
            int cts = b.getInt();
            int ring = b.getInt();
            long control = b.getLong();
            int controlRkey = b.getInt();
            long mailbox = b.getLong();
            int mailboxRkey = b.getInt();
            byte[] livenessHost = new byte[b.get()];
            b.get(livenessHost);
            int livenessPort = b.getInt();
            int[] qpns = new int[n];
            int[] psns = new int[n];
            for (int i = 0; i < n; i++) {
                qpns[i] = b.getInt();
                psns[i] = b.getInt();
            }
            return new ConnectionDescriptor(rank, qpns, psns, lid, hasGid ? gid : null, mtu, cts, ring, control,
                    controlRkey, mailbox, mailboxRkey, livenessHost, livenessPort);
        } catch (RuntimeException e) {
            throw new TransportException(peer, "peer " + peer + " published a malformed verbs endpoint: " + e, e);
        }
    }

    /** Fails naming the peer when its side of the connection is laid out differently from ours. */
    void checkCompatible(int peer, ConnectionDescriptor mine) {
        if (rank != peer) {
            throw new TransportException(peer, "the verbs endpoint published for peer " + peer + " names rank " + rank);
        }
        if (qps() != mine.qps()) {
            throw new TransportException(peer, "peer " + peer + " uses " + qps() + " queue pairs per connection, this rank "
                    + mine.qps() + ": set RDMA4J_IB_QPS_PER_CONNECTION alike on every rank");
        }
        if (ctsDepth != mine.ctsDepth || ringSize != mine.ringSize) {
            throw new TransportException(peer, "peer " + peer + " sizes its control region differently (CTS fifo "
                    + ctsDepth + " vs " + mine.ctsDepth + ", ring " + ringSize + " vs " + mine.ringSize + ")");
        }
        if ((gid == null) != (mine.gid == null)) {
            throw new TransportException(peer, "peer " + peer + " is addressed by " + (gid == null ? "LID" : "GID")
                    + " and this rank by " + (mine.gid == null ? "LID" : "GID") + ": mixed link layers or GID settings");
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConnectionDescriptor d && rank == d.rank && lid == d.lid && mtuBytes == d.mtuBytes
                && ctsDepth == d.ctsDepth && ringSize == d.ringSize && controlAddress == d.controlAddress
                && controlRkey == d.controlRkey && mailboxAddress == d.mailboxAddress && mailboxRkey == d.mailboxRkey
                && Arrays.equals(qpNumbers, d.qpNumbers) && Arrays.equals(psns, d.psns) && Arrays.equals(gid, d.gid)
                && Arrays.equals(livenessHost, d.livenessHost) && livenessPort == d.livenessPort;
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(qpNumbers) * 31 + Long.hashCode(controlAddress);
    }

    @Override
    public String toString() {
        return "ConnectionDescriptor[rank " + rank + ", QPNs " + Arrays.toString(qpNumbers) + ", lid " + lid
                + ", mtu " + mtuBytes + ", control 0x" + Long.toHexString(controlAddress) + "]";
    }
}
