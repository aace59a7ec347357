package io.rdma4j.transport.verbs;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;

/**
 * The steps of one teardown (closing QPs, regions, the device): every step runs even when an
 * earlier one failed, and what failed is reported once, each error named, instead of being
 * swallowed or stopping the teardown at the first.
 */
final class Teardown {
    private final List<Exception> errors = new ArrayList<>();

    /** Closes each resource (null ones are skipped), keeping what fails. */
    void close(AutoCloseable... resources) {
        for (AutoCloseable r : resources) {
            if (r != null) {
                try {
                    r.close();
                } catch (Exception e) {
                    errors.add(e);
                }
            }
        }
    }

    /** Records a failure the caller caught itself. */
    void failed(Exception e) {
        errors.add(e);
    }

    /** Attaches what failed to {@code primary}, the error that caused the teardown. */
    void addSuppressedTo(Throwable primary) {
        errors.forEach(primary::addSuppressed);
    }

    /** One warning on {@code log} naming every failure of the teardown of {@code what}; nothing if none failed. */
    void report(System.Logger log, String what) {
        if (errors.isEmpty()) {
            return;
        }
        StringBuilder b = new StringBuilder(what + ": " + errors.size() + " error(s) while releasing its verbs resources:");
        for (Exception e : errors) {
            b.append("\n  ").append(e);
        }
        log.log(Level.WARNING, b.toString(), errors.getFirst());
    }
}
