package io.rdma4j.transport.bootstrap;

import io.rdma4j.transport.TransportException;

/** The store server refused this client: its job token is not the job's. */
public final class StoreAuthenticationException extends TransportException {
    public StoreAuthenticationException(String message) {
        super(-1, message);
    }
}
