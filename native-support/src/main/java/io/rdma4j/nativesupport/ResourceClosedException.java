package io.rdma4j.nativesupport;

/** An object that owns a native handle was used after {@code close()}; the message names the object. */
public class ResourceClosedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public ResourceClosedException(String resource) {
        super(resource + " is closed");
    }
}
