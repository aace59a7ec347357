package io.rdma4j.transport;

import io.rdma4j.nativesupport.internal.OnlineCpus;

import java.util.concurrent.locks.LockSupport;

/**
 * What a polling thread does when a poll found no work. Stateful (the backoff remembers how long
 * it has been idle), so each polling thread owns its instance; {@link #idle(int)} and
 * {@link #reset()} allocate nothing.
 */
public interface IdleStrategy {

    /** Called after each poll with the amount of work it did; resets on work, idles otherwise. */
    default void idle(int workCount) {
        if (workCount > 0) {
            reset();
        } else {
            idle();
        }
    }

    /** Idles once (a poll found nothing to do). */
    void idle();

    /** Work was found: the next idle starts again from the cheapest step. */
    void reset();

    /**
     * Whether {@code pollersOnHost} processes polling on this host at once outnumber its cores:
     * then waiting must hand cores to the peers that hold the awaited data.
     */
    static boolean oversubscribed(int pollersOnHost) {
        return pollersOnHost > Runtime.getRuntime().availableProcessors();
    }

    /** The configurable kinds, as named by {@code RDMA4J_IDLE_STRATEGY}. */
    enum Kind {
        BUSY_SPIN("busy-spin"), YIELD("yield"), BACKOFF("backoff");

        private final String configName;

        Kind(String configName) {
            this.configName = configName;
        }

        public String configName() {
            return configName;
        }

        public static Kind parse(String name) {
            for (Kind k : values()) {
                if (k.configName.equalsIgnoreCase(name.trim()) || k.name().equalsIgnoreCase(name.trim())) {
                    return k;
                }
            }
            throw new IllegalArgumentException("unknown idle strategy '" + name
                    + "' (expected busy-spin, yield or backoff)");
        }

        /**
         * What to tell the user who runs {@code pollersOnHost} processes of this kind on this
         * host, or null: busy-spinning processes that outnumber the cores keep the cores from the
         * peers they wait for, so a wait advances only when the scheduler preempts a spinner (4
         * ranks on 2 cores over TCP: about 17 ms per 8 B allreduce, 65-84 us with the backoff).
         */
        public String warning(int pollersOnHost) {
            return warning(pollersOnHost, false);
        }

        /**
         * As {@link #warning(int)}, for pollers known to be bound to CPUs none of the others may
         * use or not ({@code eachOnOwnCpus}, see {@link #newInstance(int, boolean)}): those
         * spin on CPUs of their own and get no warning.
         */
        public String warning(int pollersOnHost, boolean eachOnOwnCpus) {
            if (this != BUSY_SPIN || eachOnOwnCpus || !oversubscribed(pollersOnHost)) {
                return null;
            }
            return "RDMA4J_IDLE_STRATEGY=busy-spin with " + pollersOnHost + " polling processes on "
                    + Runtime.getRuntime().availableProcessors() + " cores: spinning processes keep the cores from the "
                    + "peers they wait for, and every wait lasts until the scheduler preempts one (milliseconds); "
                    + "use backoff (the default) or yield";
        }

        /**
         * A fresh instance for a thread that cannot tell how many processes poll on its host (a
         * transport's own waits): the backoff yields and parks as when they outnumber the cores,
         * but polls {@link Backoff#DEFAULT_SPINS} times before its first yield, since the host may
         * as well be one rank's alone, where a message often ends a wait within a few polls.
         */
        public IdleStrategy newInstance() {
            return create(Backoff.DEFAULT_SPINS, false);
        }

        /**
         * A fresh instance for one of {@code pollersOnHost} processes that poll on this host at
         * once (the ranks of a job on it). When they all fit on the host's cores, the backoff spins
         * for {@link Backoff#DEDICATED_SPIN_NANOS} before its first yield, as Open MPI busy-polls
         * unless the host is oversubscribed: a yield hands the core away and costs a few
         * microseconds, the whole budget of a small-message round trip. It also yields for
         * {@link Backoff#DEDICATED_YIELD_NANOS} before it parks: a parked rank wakes up to a park
         * cap late, and a wait must be long for that to be a small part of it. Oversubscribed, it
         * yields after {@link Backoff#DEFAULT_SPINS} spins, so that the peer that holds the awaited
         * data gets a core; and from the first idle when the pollers outnumber even the machine's
         * online CPUs ({@code OnlineCpus.outnumberedBy}): a poll that found nothing then says
         * the awaited peer waits for a core, and each further poll keeps it from one (over TCP
         * every poll is a system call; 4 unbound ranks on 2 cores, 8 B-32 KiB allreduce, four
         * passes taking turns: 22-36 us per 8 B call with no spins against 30-47 us after ten).
         * Ranks bound to a core each see one CPU and count as oversubscribed here, but each has
         * its core: they keep the spins (2 ranks, shm ping-pong of 8 B: 0.19-0.20 us one-way with
         * them, 0.29-0.30 without), and get the dedicated phases from
         * {@link #newInstance(int, boolean)} when the caller knows that they have. Re-measure
         * both with {@code allreduce-perf --ranks 4 -t tcp} and {@code p2p-perf -t shm --measure
         * latency} against a build that spins differently.
         */
        public IdleStrategy newInstance(int pollersOnHost) {
            return newInstance(pollersOnHost, false);
        }

        /**
         * As {@link #newInstance(int)}, for a caller that knows whether the host's pollers are
         * bound to CPUs none of the others may use ({@code eachOnOwnCpus}, from their exchanged
         * affinities: {@code OnlineCpus.eachOnOwnCpus}): then each has a core, as when unbound
         * pollers fit the cores, and the backoff spins and yields for the dedicated times. A rank
         * bound to one CPU sees only that one, so without this it counts as oversubscribed and
         * yields after {@link Backoff#DEFAULT_SPINS} spins, which a wait for a peer two cache-line
         * transfers away outlasts when those are slow: 2 bound ranks, shm allreduce of 8 B-4 KiB
         * on a 2-vCPU VM whose vCPUs were 220-350 ns apart, seven passes taking turns: 0.47-1.58 us
         * per call at 8-256 B yielding, 0.37-0.67 us spinning on (Open MPI 0.49-0.73), 512 B
         * 1.49-1.90 against 0.73-0.86 us. Re-measure with {@code allreduce-perf --ranks 2 -b 8 -e
         * 4096 -f 2} against a build that passes false here.
         */
        public IdleStrategy newInstance(int pollersOnHost, boolean eachOnOwnCpus) {
            int spins = OnlineCpus.outnumberedBy(pollersOnHost) ? 0 : Backoff.DEFAULT_SPINS;
            return create(spins, eachOnOwnCpus || !oversubscribed(pollersOnHost));
        }

        private IdleStrategy create(int spins, boolean dedicated) {
            return switch (this) {
                case BUSY_SPIN -> new BusySpin();
                case YIELD -> new Yield();
                case BACKOFF -> new Backoff(spins, dedicated ? Backoff.DEDICATED_SPIN_NANOS : 0,
                        Backoff.DEFAULT_YIELDS, dedicated ? Backoff.DEDICATED_YIELD_NANOS : Backoff.DEFAULT_YIELD_NANOS,
                        Backoff.DEFAULT_MIN_PARK_NANOS, Backoff.DEFAULT_MAX_PARK_NANOS);
            };
        }
    }

    /** Lowest latency, burns a core: a spin-wait hint only. */
    final class BusySpin implements IdleStrategy {
        @Override
        public void idle() {
            Thread.onSpinWait();
        }

        @Override
        public void reset() {
        }
    }

    /** Gives the core to other runnable threads between polls. */
    final class Yield implements IdleStrategy {
        @Override
        public void idle() {
            Thread.yield();
        }

        @Override
        public void reset() {
        }
    }

    /**
     * Spins, then yields, then parks for a time that doubles up to a cap: near busy-spin latency
     * right after work, near-zero CPU when a wait drags on (e.g. a peer still computing).
     *
     * <p>The yield phase lasts at least {@code yieldNanos} of wall time (and at least
     * {@code maxYields} yields), because parking is far coarser than it asks: Linux adds ~50 us of
     * timer slack to every {@code parkNanos}, so parking after a few dozen yields (a few us) turned
     * every shm round trip that outlasted the spins into a 50-100 us one. Yielding, unlike
     * spinning, hands the core to a runnable peer, so ranks oversubscribing the cores (4 ranks on
     * 2 cores) still make progress instead of livelocking.
     */
    final class Backoff implements IdleStrategy {
        public static final int DEFAULT_SPINS = 10;
        /** The spin phase when every polling process of the host has a core of its own. */
        public static final long DEDICATED_SPIN_NANOS = 50_000;
        /** The yield phase then: a park (up to {@link #DEFAULT_MAX_PARK_NANOS} late) ends a wait of 20 ms at most 5% late. */
        public static final long DEDICATED_YIELD_NANOS = 20_000_000;
        public static final int DEFAULT_YIELDS = 50;
        /** Covers a round trip of a loaded or oversubscribed host before paying the timer slack. */
        public static final long DEFAULT_YIELD_NANOS = 1_000_000;
        public static final long DEFAULT_MIN_PARK_NANOS = 1_000;
        public static final long DEFAULT_MAX_PARK_NANOS = 1_000_000;

        private final int maxSpins;
        private final long spinNanos;
        private final int maxYields;
        private final long yieldNanos;
        private final long minParkNanos;
        private final long maxParkNanos;
        private long spins;
        private long spinStart;
        private boolean spinsDone;
        private int yields;
        private long yieldStart;
        private boolean yieldsDone;
        private long parkNanos;

        /** Count-only yield phase: parks after {@code maxSpins} spins and {@code maxYields} yields. */
        public Backoff(int maxSpins, int maxYields, long minParkNanos, long maxParkNanos) {
            this(maxSpins, maxYields, 0, minParkNanos, maxParkNanos);
        }

        public Backoff(int maxSpins, int maxYields, long yieldNanos, long minParkNanos, long maxParkNanos) {
            this(maxSpins, 0, maxYields, yieldNanos, minParkNanos, maxParkNanos);
        }

        /**
         * Spins at least {@code maxSpins} times and for at least {@code spinNanos} (timed from the
         * 64th spin, when there is a spin time), then yields at
         * least {@code maxYields} times and for at least {@code yieldNanos}, then parks from
         * {@code minParkNanos}, doubling up to {@code maxParkNanos}.
         */
        public Backoff(int maxSpins, long spinNanos, int maxYields, long yieldNanos, long minParkNanos,
                       long maxParkNanos) {
            if (maxSpins < 0 || spinNanos < 0 || maxYields < 0 || yieldNanos < 0 || minParkNanos < 1
                    || maxParkNanos < minParkNanos) {
                throw new IllegalArgumentException("invalid backoff: spins=" + maxSpins + " spin time=" + spinNanos
                        + " ns yields=" + maxYields + " yield time=" + yieldNanos + " ns park=" + minParkNanos + ".."
                        + maxParkNanos + " ns");
            }
            this.maxSpins = maxSpins;
            this.spinNanos = spinNanos;
            this.maxYields = maxYields;
            this.yieldNanos = yieldNanos;
            this.minParkNanos = minParkNanos;
            this.maxParkNanos = maxParkNanos;
            reset();
        }

        @Override
        public void idle() {
            if (!spinsDone) {
                spinOnce();
            } else if (!yieldsDone) {
                yieldOnce();
            } else {
                LockSupport.parkNanos(parkNanos);
                parkNanos = Math.min(parkNanos << 1, maxParkNanos);
            }
        }

        private void spinOnce() {
            spins++;
            Thread.onSpinWait();
            if (spins >= maxSpins && spinNanos == 0) {
                spinsDone = true;
            } else if ((spins & 63) == 0 && spinNanos > 0) {
                // The clock on every 64th spin only, and first on the 64th (the timed phase starts
                // there): a read costs several spins, and most spinning waits end sooner.
                long now = System.nanoTime();
                if (spins == 64) {
                    spinStart = now;
                } else if (spins >= maxSpins && now - spinStart >= spinNanos) {
                    spinsDone = true;
                }
            }
        }

        private void yieldOnce() {
            if (yields == 0 && yieldNanos > 0) {
                yieldStart = System.nanoTime();
            }
            yields++;
            Thread.yield();
            // the clock is read only once the count is reached: nanoTime costs as much as a spin
            if (yields >= maxYields && (yieldNanos == 0 || System.nanoTime() - yieldStart >= yieldNanos)) {
                yieldsDone = true;
            }
        }

        @Override
        public void reset() {
            spins = 0;
            spinsDone = maxSpins == 0 && spinNanos == 0;
            yields = 0;
            yieldsDone = maxYields == 0 && yieldNanos == 0;
            parkNanos = minParkNanos;
        }

        /** The park time the next parking idle would use (for tests and diagnostics). */
        public long currentParkNanos() {
            return parkNanos;
        }

        /** Whether the next idle still spins (for tests and diagnostics). */
        public boolean spinning() {
            return !spinsDone;
        }

        /** Whether the spin and yield phases are over, so idles now park. */
        public boolean parking() {
            return spinsDone && yieldsDone;
        }
    }
}
