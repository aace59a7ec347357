package io.rdma4j.bench.verbsperf;

import io.rdma4j.verbs.Gid;
import io.rdma4j.verbs.QpEndpoint;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * What one side tells the other before the test (perftest's pingpong_dest): its QP address,
 * the region a peer writes into, the path MTU it would use and the test options it was given.
 *
 * @param gid   null when the port is addressed by LID (InfiniBand without a global route)
 * @param vaddr where the peer's RDMA writes land (an address inside the registered region)
 */
record PeerInfo(int lid, int qpn, int psn, Gid gid, int rkey, long vaddr, int mtuBytes, String fingerprint) {
    private static final int MAGIC = 0x52344A56; // "R4JV"
    private static final int VERSION = 1;

    QpEndpoint endpoint() {
        return new QpEndpoint(qpn, psn, lid, gid);
    }

    void write(DataOutputStream out) throws IOException {
        out.writeInt(MAGIC);
        out.writeInt(VERSION);
        out.writeInt(lid);
        out.writeInt(qpn);
        out.writeInt(psn);
        out.writeBoolean(gid != null);
        out.write(gid != null ? gid.raw() : new byte[Gid.BYTES]);
        out.writeInt(rkey);
        out.writeLong(vaddr);
        out.writeInt(mtuBytes);
        out.writeUTF(fingerprint);
    }

    static PeerInfo read(DataInputStream in, String peer) throws IOException {
        int magic = in.readInt();
        if (magic != MAGIC) {
            throw new IOException(peer + " is not a verbs-perf peer (got 0x" + Integer.toHexString(magic)
                    + " instead of its greeting; a perftest program and verbs-perf cannot be paired)");
        }
        int version = in.readInt();
        if (version != VERSION) {
            throw new IOException(peer + " speaks verbs-perf exchange version " + version + ", this side " + VERSION);
        }
        int lid = in.readInt();
        int qpn = in.readInt();
        int psn = in.readInt();
        boolean hasGid = in.readBoolean();
        byte[] raw = new byte[Gid.BYTES];
        in.readFully(raw);
        return new PeerInfo(lid, qpn, psn, hasGid ? new Gid(raw) : null, in.readInt(), in.readLong(), in.readInt(),
                in.readUTF());
    }

    /** perftest's "local address: ..." / "GID: ..." lines. */
    String describe(String which) {
        String line = String.format(Locale.ROOT, " %s address: LID %04x QPN 0x%04x PSN 0x%06x RKey 0x%06x VAddr 0x%014x",
                which, lid, qpn, psn, rkey, vaddr);
        if (gid == null) {
            return line;
        }
        byte[] raw = gid.raw();
        StringBuilder g = new StringBuilder(" GID: ");
        for (int i = 0; i < raw.length; i++) {
            g.append(i == 0 ? "" : ":").append(String.format(Locale.ROOT, "%02d", raw[i] & 0xff));
        }
        return line + System.lineSeparator() + g;
    }

    @Override
    public String toString() {
        return "PeerInfo[qpn=" + qpn + ", gid=" + (gid == null ? "none" : HexFormat.of().formatHex(gid.raw())) + "]";
    }
}
