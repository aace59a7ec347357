package io.rdma4j.collectives;

/**
 * Thrown by {@link BatchAgreement}: the ranks' data did not line up: one ran out of batches before the others, or their batches
 * differ in size. Thrown on every rank, with the same message, before any of them steps.
 */
public final class UnevenDataException extends IllegalStateException {
    UnevenDataException(String message) {
        super(message);
    }
}
