package io.rdma4j.nativesupport;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Lifetimes of native handles: a child keeps its parents alive; a closed parent is freed by its last child. */
class NativeResourceTest {

    /** A resource tree without native handles, recording the order of release(). */
    static final class Node extends NativeResource {
        final List<String> log;

        Node(String name, NativeResource parent, List<String> log) {
            this(name, log, parent);
        }

        Node(String name, List<String> log, NativeResource... parents) {
            super(name, parents);
            this.log = log;
        }

        @Override
        protected void release() {
            log.add(description());
        }
    }

    @Test
    void aParentWithOpenChildrenIsFreedOnlyWhenTheLastChildCloses() {
        List<String> log = new ArrayList<>();
        int before = NativeResource.unreleasedCount();
        Node ctx = new Node("ctx", null, log);
        Node pd = new Node("pd", ctx, log);
        Node mr = new Node("mr", pd, log);
        Node cq = new Node("cq", ctx, log);
        Node closedEarly = new Node("early", ctx, log);
        closedEarly.close();
        ctx.close();
        ctx.close();
        assertEquals(List.of("early"), log, "ctx is closed but pd and cq still use it: nothing else is freed");
        assertTrue(ctx.isClosed());
        assertFalse(ctx.isReleased());
        assertEquals(List.of("pd", "cq"), ctx.pendingChildren());
        assertFalse(cq.isClosed(), "a child stays usable while its parent waits");
        assertEquals("ctx is closed", assertThrows(ResourceClosedException.class, ctx::ensureOpen).getMessage());
        assertThrows(ResourceClosedException.class, () -> new Node("late", ctx, log), "no children on a closed parent");
        pd.close();
        assertEquals(List.of("early"), log, "pd waits for mr");
        mr.close();
        assertEquals(List.of("early", "mr", "pd"), log);
        cq.close();
        assertEquals(List.of("early", "mr", "pd", "cq", "ctx"), log, "the last child frees the closed parent");
        assertTrue(ctx.isReleased());
        assertEquals(before, NativeResource.unreleasedCount());
    }

    @Test
    void aQpStyleDependentKeepsEveryParentAlive() {
        List<String> log = new ArrayList<>();
        Node ctx = new Node("ctx", null, log);
        Node pd = new Node("pd", ctx, log);
        Node cq = new Node("cq", ctx, log);
        Node qp = new Node("qp", log, pd, cq, cq);
        cq.close();
        pd.close();
        ctx.close();
        assertEquals(List.of(), log, "the qp still uses pd and cq, and through them ctx");
        qp.close();
        assertEquals(List.of("qp", "pd", "cq", "ctx"), log);
        Node pd2 = new Node("pd2", null, log);
        Node cq2 = new Node("cq2", null, log);
        Node qp2 = new Node("qp2", log, pd2, cq2);
        qp2.close();
        log.clear();
        cq2.close();
        pd2.close();
        assertEquals(List.of("cq2", "pd2"), log, "a closed dependent is forgotten by all its parents");
    }

    /** A child its owner made for itself and closes, refusing its close while {@link #inUse} is set. */
    static final class Lent extends NativeResource {
        final List<String> log;
        volatile boolean inUse;

        Lent(NativeResource owner, List<String> log) {
            super("own", owner);
            this.log = log;
        }

        @Override
        protected void revokeAccess() {
            if (inUse) {
                throw new IllegalStateException("own is in use by a native call on another thread");
            }
        }

        @Override
        protected void release() {
            log.add(description());
        }
    }

    /** Makes a child of its own at creation and closes it first when closed (an rdma_cm id's lent context). */
    static final class Owner extends NativeResource {
        final List<String> log;
        final Lent own;

        Owner(List<String> log) {
            super("owner");
            this.log = log;
            this.own = new Lent(this, log);
        }

        @Override
        protected void revokeAccess() {
            own.close();
        }

        @Override
        protected void release() {
            log.add(description());
        }
    }

    @Test
    void ownedChildrenAreClosedByTheirOwner() {
        List<String> log = new ArrayList<>();
        Owner o = new Owner(log);
        Node userChild = new Node("user", o.own, log);
        o.close();
        assertEquals(List.of(), log, "the user's child keeps the owned one, and so the owner");
        userChild.close();
        assertEquals(List.of("user", "own", "owner"), log);
    }

    @Test
    void anOwnedChildThatRefusesToCloseLeavesItsOwnerOpenToBeClosedAgain() {
        List<String> log = new ArrayList<>();
        Owner o = new Owner(log);
        o.own.inUse = true;
        IllegalStateException refused = assertThrows(IllegalStateException.class, o::close);
        assertTrue(refused.getMessage().contains("in use"), refused.getMessage());
        assertFalse(o.isClosed(), "refused: the owner stays open, so that closing it again can finish");
        assertFalse(o.own.isClosed());
        o.ensureOpen();
        o.own.inUse = false;
        o.close();
        assertEquals(List.of("own", "owner"), log, "the second close frees both");
        assertTrue(o.isReleased());
    }

    @Test
    void aFailingReleaseIsThrownByTheCloseThatFreesAndTheParentIsStillFreed() {
        List<String> log = new ArrayList<>();
        Node parent = new Node("parent", null, log);
        NativeResource child = new NativeResource("child", parent) {
            @Override
            protected void release() {
                throw new IllegalStateException("ibv_destroy_child failed");
            }
        };
        parent.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, child::close);
        assertEquals("ibv_destroy_child failed", e.getMessage());
        assertEquals(List.of("parent"), log, "the parent's handle is freed even though its child's failed");
        assertTrue(child.isReleased());
    }
}
