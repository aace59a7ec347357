package io.rdma4j.transport;

/** A wait ran out of time; the message names what was waited for and on which peer. */
public class TransportTimeoutException extends TransportException {
    public TransportTimeoutException(int peer, String message) {
        super(peer, message);
    }
}
