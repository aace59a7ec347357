package io.rdma4j.transport.tcp;

import io.rdma4j.transport.TransportException;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * Where a rank's TCP listener is and the secret a connecting peer must present: published through
 * the (token-protected) store, so a process that cannot read the store cannot connect to a rank.
 */
record TcpEndpoint(String host, int port, byte[] secret) {

    byte[] toBytes() {
        return (host + " " + port + " " + HexFormat.of().formatHex(secret)).getBytes(StandardCharsets.UTF_8);
    }

    static TcpEndpoint fromBytes(int rank, byte[] bytes) {
        String[] parts = new String(bytes, StandardCharsets.UTF_8).split(" ");
        try {
            return new TcpEndpoint(parts[0], Integer.parseInt(parts[1]), HexFormat.of().parseHex(parts[2]));
        } catch (RuntimeException e) {
            throw new TransportException(rank, "malformed TCP endpoint of rank " + rank + " in the store: "
                    + new String(bytes, StandardCharsets.UTF_8));
        }
    }

    long secretHigh() {
        return java.nio.ByteBuffer.wrap(secret).getLong(0);
    }

    long secretLow() {
        return java.nio.ByteBuffer.wrap(secret).getLong(8);
    }
}
