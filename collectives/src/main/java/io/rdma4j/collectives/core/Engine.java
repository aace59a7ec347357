package io.rdma4j.collectives.core;

import io.rdma4j.collectives.CollectiveException;
import io.rdma4j.collectives.CollectiveMismatchException;
import io.rdma4j.collectives.CollectiveOptions;
import io.rdma4j.collectives.CollectiveTimeoutException;
import io.rdma4j.collectives.CommunicatorAbortedException;
import io.rdma4j.transport.IdleStrategy;
import io.rdma4j.transport.Transport;

import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * Shared by a world communicator and everything split from it: the options, the fault board,
 * the staging memory of each transport, and the lock that makes collectives on a shared
 * transport run one at a time (a transport is driven by one thread at a time). Its
 * {@link #drive} loop is the only place that waits: it steps an op, idles with the configured
 * {@link IdleStrategy} when nothing moved (a {@link Background} thread with the background
 * one), watches the abort flag, consults the fault board when the op has stalled, and turns a
 * stall longer than the timeout into an error that names the rank at the end of the chain of
 * waits. (The one other wait, {@link #awaitInput}, is for a call's own input, before its op.)
 */
public final class Engine implements AutoCloseable {
    /** Idle polls between clock reads (the stall clock needs no finer resolution). */
    private static final int CLOCK_EVERY = 64;
    /** No stall of the current op reported yet (-1, an unknown peer, is a value a report can carry). */
    private static final int NOT_REPORTED = -2;
    /** Idle polls (spins, then yields) before an op that can sleep on its peers does so. */
    private static final int SLEEP_AFTER_IDLES = 32;
    /** Longest sleep per idle: a peer's publish wakes it at once, this only bounds missed wakes. */
    private static final long SLEEP_NANOS = 200_000;
    /**
     * How long an op waits before it publishes what it waits for ({@link #waiterTimedOut}): a
     * waiter's own bound is milliseconds at least, and a call that completes sooner pays nothing.
     */
    private static final long PUBLISH_AFTER_NANOS = 1_000_000;
    /** Longest interval between fault-board checks of a stalled collective. */
    private static final long MAX_CHECK_NANOS = 2_000_000_000L;

    private final CollectiveOptions options;
    private final FaultBoard board;
    private final ReentrantLock lock = new ReentrantLock();
    private final IdleStrategy idle;
    private final IdleStrategy backgroundIdle;
    private final boolean sleepingWaits;
    private final Map<Transport, Staging> staging = new IdentityHashMap<>();
    /**
     * The op being driven once it stalled, and the rank it waited for at the last clock read: for
     * a thread whose wait for a call timed out while another thread drives (see {@link
     * #waiterTimedOut}). Published only once an op has waited {@link #PUBLISH_AFTER_NANOS}.
     */
    private volatile Descriptor stalledOp;
    private volatile int stalledWaitingFor = -1;

    /**
     * @param idle what the progress loop does when a poll found nothing (the transport
     *             configuration's strategy, RDMA4J_IDLE_STRATEGY); used by one thread at a time
     *             (the lock holder)
     * @param backgroundIdle the same for a {@link Background} thread (a communicator's progress
     *                       thread), which shares its process's CPUs with the computation it
     *                       overlaps: one that hands the CPU over after a few spins where
     *                       {@code idle} keeps spinning because the ranks are bound to CPUs of
     *                       their own (a caller that waits for its call has nothing else to run
     *                       there; a spinning progress thread delays the computation's wake-ups:
     *                       2 bound ranks, {@code overlap-perf}'s waiting backward, overlap
     *                       efficiency 0.99-1.39 with it spinning against 1.32-1.89 yielding)
     * @param sleepingWaits whether an op that can sleep until its peers publish
     *                      ({@link CollectiveOp#sleep}) does so after a short spin and yield: when
     *                      the host's ranks outnumber its cores, a rank that yield-waits keeps its
     *                      core busy, so the kernel never moves a runnable peer onto it
     */
    public Engine(CollectiveOptions options, FaultBoard board, IdleStrategy idle, IdleStrategy backgroundIdle,
                  boolean sleepingWaits) {
        this.options = options;
        this.board = board;
        this.idle = idle;
        this.backgroundIdle = backgroundIdle;
        this.sleepingWaits = sleepingWaits;
    }

    /**
     * A thread that drives collectives in the background of its process's computation (a
     * communicator's progress thread): {@link #drive} idles it with the engine's background strategy.
     */
    public static final class Background extends Thread {
        public Background(Runnable task, String name) {
            super(task, name);
        }
    }

    public CollectiveOptions options() {
        return options;
    }

    public FaultBoard board() {
        return board;
    }

    /** Whether ops that can sleep on their peers do so (see the constructor). */
    public boolean sleepingWaits() {
        return sleepingWaits;
    }

    public ReentrantLock lock() {
        return lock;
    }

    public Staging staging(Transport t) {
        synchronized (staging) {
            return staging.computeIfAbsent(t, Staging::new);
        }
    }

    /**
     * Runs {@code op} to completion on the calling thread (which must hold {@link #lock()}).
     *
     * @param members world ranks of the communicator (whose stall registers to consult)
     */
    public void drive(CollectiveOp op, CommState cs, int[] members) {
        boolean published = false;
        try {
            checkAbort(cs);
            op.start();
            long stallStart = 0;
            long nextCheck = 0;
            int reportedWaitingFor = NOT_REPORTED;
            int idles = 0;
            IdleStrategy idle = idleOfThisThread();
            idle.reset();
            long timeout = options.timeout().toNanos();
            long check = options.stallCheck().toNanos();
            while (true) {
                boolean progressed = op.step();
                if (op.isDone()) {
                    return;
                }
                checkAbort(cs);
                if (progressed) {
                    idle.reset();
                    idles = 0;
                    stallStart = 0;
                    continue;
                }
                if (!(sleepingWaits && idles >= SLEEP_AFTER_IDLES && op.sleep(SLEEP_NANOS))) {
                    idle.idle();
                }
                if (++idles % CLOCK_EVERY != 0) {
                    continue;
                }
                long now = System.nanoTime();
                if (stallStart == 0) {
                    stallStart = now;
                    nextCheck = now + check;
                    continue;
                }
                if (now - stallStart >= PUBLISH_AFTER_NANOS) {
                    int waitingNow = op.waitingFor();
                    if (!published || stalledWaitingFor != waitingNow) {
                        stalledWaitingFor = waitingNow;
                        stalledOp = op.identity();
                        published = true;
                    }
                }
                if (now - nextCheck >= 0) {
                    checkBoard(cs);
                    // again when the op, having moved on, now waits for another rank: a register
                    // left naming the rank of an earlier stall would lead the others' blame astray
                    int waiting = op.waitingFor();
                    if (waiting != reportedWaitingFor && now - stallStart >= 2 * check) {
                        board.reportStall(cs.board(), cs.worldRank(), op.identity(), waiting);
                        reportedWaitingFor = waiting;
                    }
                    if (reportedWaitingFor != NOT_REPORTED) {
                        compareStall(op, cs, waiting);
                    }
                    // the longer the stall, the rarer the (store round-trip) checks
                    nextCheck = now + Math.min(Math.max(check, (now - stallStart) / 4), MAX_CHECK_NANOS);
                }
                if (now - stallStart >= timeout) {
                    checkBoard(cs);
                    throw timeout(op, cs, members);
                }
            }
        } catch (CollectiveException e) {
            CollectiveException cause = rootCause(cs, e);
            fail(cs, cause);
            throw cause;
        } catch (RuntimeException | Error e) {
            CollectiveException c = new CollectiveException(-1, "rank " + cs.worldRank() + ": collective "
                    + op.identity() + " failed: " + e, e);
            fail(cs, c);
            throw c;
        } finally {
            if (published) {
                stalledOp = null;
            }
        }
    }

    private IdleStrategy idleOfThisThread() {
        return Thread.currentThread() instanceof Background ? backgroundIdle : idle;
    }

    /**
     * Waits on the calling thread (which holds {@link #lock()}) until {@code ready} holds: the
     * input of {@code call}, which took its sequence number, is still being computed (a GPU
     * event not reached yet, say). Idles with this thread's strategy, as {@link #drive} does (no
     * sleeping: there is no peer's publish to wake it), and watches the abort flag. After the
     * stall check's interval it reports the stall on the fault board, waiting for no peer, so
     * that a peer that times out meanwhile names this rank as stalled in the call rather than
     * absent from it; after the no-progress timeout it throws, naming this rank, which the caller
     * then reports to the peers waiting in the call (a failure after the number breaks the
     * communicator).
     */
    public void awaitInput(BooleanSupplier ready, CommState cs, Descriptor call) {
        if (ready.getAsBoolean()) {
            return;
        }
        IdleStrategy idle = idleOfThisThread();
        idle.reset();
        long start = System.nanoTime();
        long timeout = options.timeout().toNanos();
        boolean reported = false;
        for (int idles = 1; !ready.getAsBoolean(); idles++) {
            checkAbort(cs);
            idle.idle();
            if (idles % CLOCK_EVERY != 0) {
                continue;
            }
            long waited = System.nanoTime() - start;
            if (!reported && waited >= options.stallCheck().toNanos()) {
                board.reportStall(cs.board(), cs.worldRank(), call, -1);
                reported = true;
            }
            if (waited >= timeout) {
                throw new CollectiveTimeoutException(cs.worldRank(), "rank " + cs.worldRank() + ": the input of collective "
                        + call + " was not ready after " + options.timeout().toMillis() + " ms (its readiness "
                        + "condition stayed false)");
            }
        }
    }

    /**
     * The timeout of a thread whose own bound for a call ran out while another thread drives this
     * engine: names the rank that the collective being driven waits for (the caller's call, or
     * one issued before it), -1 if none has stalled long enough to say.
     */
    public CollectiveTimeoutException waiterTimedOut(String what) {
        Descriptor d = stalledOp;
        int w = stalledWaitingFor;
        if (d == null) {
            return new CollectiveTimeoutException(-1, what + " (the collective running now has not stalled)");
        }
        return new CollectiveTimeoutException(w, what + ": collective " + d + " is running"
                + (w >= 0 ? " and waits for rank " + w : ""));
    }

    /**
     * A call that failed on this rank after it took its sequence number but before {@link #drive}
     * (its buffers could not be registered or staged, say): broken and posted as a failure of
     * the drive would be, so the other ranks, already in the call, fail now naming this rank.
     */
    public CollectiveException failedToStart(CommState cs, Descriptor call, Throwable e) {
        CollectiveException c = rootCause(cs, new CollectiveException(cs.worldRank(), "rank " + cs.worldRank()
                + ": collective " + call + " failed before it started: " + e, e));
        fail(cs, c);
        return c;
    }

    /**
     * The fault to report for {@code e}: a local abort wins; a transport failure of a peer may be
     * the consequence of a fault that peer already posted (it detected a mismatch or a dead rank
     * and then closed its transport), and so may a mismatch (the others timed out waiting for this
     * rank and went on: their next collective's message, sent eagerly, is what this rank's late
     * call meets); then the posted fault is the real cause.
     */
    private CollectiveException rootCause(CommState cs, CollectiveException e) {
        CollectiveException aborted = cs.abortCause();
        if (aborted != null) {
            return aborted;
        }
        if (e instanceof Ops.PeerFailure || e instanceof CollectiveTimeoutException
                || e instanceof CollectiveMismatchException) {
            try {
                checkBoard(cs);
            } catch (CollectiveException posted) {
                posted.addSuppressed(e);
                return posted;
            }
        }
        return e;
    }

    private static void checkAbort(CommState cs) {
        CollectiveException a = cs.abortCause();
        if (a != null) {
            throw a;
        }
    }

    /** Marks the communicator broken and tells the others, unless the fault came from the board. */
    private void fail(CommState cs, CollectiveException e) {
        cs.markBroken(e);
        if (e instanceof FromBoard) {
            return;
        }
        FaultBoard.FaultKind kind;
        if (e instanceof CollectiveMismatchException) {
            kind = FaultBoard.FaultKind.MISMATCH;
        } else if (e instanceof CommunicatorAbortedException) {
            kind = FaultBoard.FaultKind.ABORTED;
        } else if (e instanceof CollectiveTimeoutException) {
            kind = FaultBoard.FaultKind.TIMEOUT;
        } else {
            kind = FaultBoard.FaultKind.RANK_FAILED;
        }
        FaultBoard.Fault f = new FaultBoard.Fault(kind, cs.worldRank(), e.failedRank(), e.getMessage());
        board.post(cs.board(), f);
        if (kind == FaultBoard.FaultKind.RANK_FAILED && e instanceof Ops.PeerFailure && cs.world() != cs) {
            board.post(cs.world().board(), f);
        }
    }

    private void checkBoard(CommState cs) {
        FaultBoard.Fault f = board.poll(cs.board());
        if (f == null && cs.world() != cs) {
            f = board.poll(cs.world().board());
            if (f != null && f.kind() == FaultBoard.FaultKind.MISMATCH) {
                f = null; // a mismatch in another communicator does not break this one
            }
        }
        if (f != null) {
            throw BoardFault.of(cs.worldRank(), f);
        }
    }

    /**
     * The rank this one waits for ({@code w}), stalled in the same collective but with a different shape, is
     * a mismatch that no descriptor exchange caught (the two calls talk to different peers).
     * Point-to-point calls are left out on both sides: their numbers count per peer and
     * direction, not in the communicator's sequence, so a send, a receive and a collective can
     * carry the same number (and a register keeps a rank's last stall after that call ended);
     * a send and receive that disagree fail in the transport instead (a send larger than its
     * receive fails both).
     */
    private void compareStall(CollectiveOp op, CommState cs, int w) {
        Descriptor mine = op.identity();
        if (w < 0 || w == cs.worldRank() || mine.kind == CollectiveKind.SEND_RECV) {
            return;
        }
        FaultBoard.Stall s = board.readStall(cs.board(), w);
        if (s != null && s.seq() == mine.seq && (s.shape() != mine.packedShape() || s.count() != mine.count)) {
            Descriptor theirs = Descriptor.unpack(s.shape(), s.count(), s.seq());
            if (theirs.kind == CollectiveKind.SEND_RECV) {
                return;
            }
            throw new CollectiveMismatchException(w, "collective mismatch: rank " + cs.worldRank() + " called "
                    + mine + " but rank " + w + " called " + theirs);
        }
    }

    private CollectiveTimeoutException timeout(CollectiveOp op, CommState cs, int[] members) {
        Descriptor mine = op.identity();
        StringBuilder chain = new StringBuilder();
        int culprit = op.waitingFor();
        chain.append("rank ").append(cs.worldRank()).append(" waited for rank ").append(culprit);
        boolean[] seen = new boolean[Math.max(64, maxOf(members) + 1)];
        seen[cs.worldRank()] = true;
        String tail = "";
        while (culprit >= 0 && culprit < seen.length && !seen[culprit] && board.available()) {
            seen[culprit] = true;
            FaultBoard.Stall s = board.readStall(cs.board(), culprit);
            if (s == null || s.seq() != mine.seq) {
                tail = s == null ? ", which never reported being stalled (dead, hung or not calling this collective)"
                        : ", which last reported being stalled in collective #" + s.seq() + " (not #" + mine.seq + ")";
                break;
            }
            if (s.waitingFor() < 0) {
                break;
            }
            culprit = s.waitingFor();
            chain.append(", which waits for rank ").append(culprit);
        }
        return new CollectiveTimeoutException(culprit, "rank " + cs.worldRank() + ": collective " + mine
                + " made no progress for " + options.timeout().toMillis() + " ms: " + chain + tail);
    }

    private static int maxOf(int[] a) {
        int m = 0;
        for (int x : a) {
            m = Math.max(m, x);
        }
        return m;
    }

    @Override
    public void close() {
        synchronized (staging) {
            for (Staging s : staging.values()) {
                s.close();
            }
            staging.clear();
        }
    }

    /** A fault read from the board (not re-posted). */
    static final class BoardFault {
        static CollectiveException of(int me, FaultBoard.Fault f) {
            String msg = "rank " + me + ": communicator failed, reported by rank " + f.reporter() + ": " + f.message();
            return switch (f.kind()) {
                // a mismatch has two sides: the rank the reporter disagreed with learns the reporter's
                case MISMATCH -> new BoardMismatch(f.culprit() == me ? f.reporter() : f.culprit(), msg);
                case ABORTED -> new BoardAborted(f.culprit(), msg);
                case TIMEOUT -> new BoardTimeout(f.culprit(), msg);
                case RANK_FAILED -> new BoardFailure(f.culprit(), msg);
            };
        }
    }

    private interface FromBoard {
    }

    static final class BoardMismatch extends CollectiveMismatchException implements FromBoard {
        BoardMismatch(int r, String m) {
            super(r, m);
        }
    }

    static final class BoardAborted extends CommunicatorAbortedException implements FromBoard {
        BoardAborted(int r, String m) {
            super(r, m, null);
        }
    }

    static final class BoardTimeout extends CollectiveTimeoutException implements FromBoard {
        BoardTimeout(int r, String m) {
            super(r, m);
        }
    }

    static final class BoardFailure extends CollectiveException implements FromBoard {
        BoardFailure(int r, String m) {
            super(r, m);
        }
    }
}
