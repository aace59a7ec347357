package io.rdma4j.verbs;

/** A native library (libibverbs or librdmacm) could not be loaded; the message says what to install. */
public class LibraryMissingException extends VerbsException {
    private static final long serialVersionUID = 1L;

    public LibraryMissingException(String message) {
        super(message);
    }
}
