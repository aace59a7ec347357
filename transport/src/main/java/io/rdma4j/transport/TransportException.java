package io.rdma4j.transport;

/** A transport operation failed; {@link #peer()} names the peer involved, -1 if none. */
public class TransportException extends RuntimeException {
    private final int peer;

    public TransportException(int peer, String message) {
        this(peer, message, null);
    }

    public TransportException(int peer, String message, Throwable cause) {
        super(message, cause);
        this.peer = peer;
    }

    public int peer() {
        return peer;
    }
}
