package io.rdma4j.verbs;

/** A bounded wait ran out; the message names what was awaited and for how long. */
public class VerbsTimeoutException extends VerbsException {
    private static final long serialVersionUID = 1L;

    public VerbsTimeoutException(String awaited, long timeoutMillis) {
        super("timed out after " + timeoutMillis + " ms waiting for " + awaited);
    }
}
