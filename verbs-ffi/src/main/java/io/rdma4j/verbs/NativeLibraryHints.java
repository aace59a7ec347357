package io.rdma4j.verbs;

/** What to install when a library is missing, per distribution family. */
final class NativeLibraryHints {
    static final String IBVERBS = "Debian/Ubuntu: sudo apt-get install libibverbs1 ibverbs-providers; "
            + "RHEL/Fedora: sudo dnf install libibverbs rdma-core";
    static final String RDMACM = "Debian/Ubuntu: sudo apt-get install librdmacm1; "
            + "RHEL/Fedora: sudo dnf install librdmacm";

    private NativeLibraryHints() {
    }
}
